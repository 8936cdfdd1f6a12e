"""The rule every stored model's settings follow: they may name environment variables, never hold a secret."""

from __future__ import annotations

from typing import Any

from core.config import known_secret_values

SECRET_WORDS = ("api_key", "apikey", "token", "secret", "password")


def check_settings(settings: dict[str, Any]) -> None:
    """Refuse settings that look like secrets (key/token/secret fields, or a configured secret's value)."""
    secrets = set(known_secret_values())
    for key, value in settings.items():
        lowered = key.lower()
        if any(word in lowered for word in SECRET_WORDS) and not lowered.endswith("_env"):
            raise ValueError(f"setting {key!r} looks like a secret; store the env var name in '<name>_env' instead")
        if isinstance(value, str) and value in secrets:
            raise ValueError(f"setting {key!r} holds a secret value; reference it by env var name instead")
