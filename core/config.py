"""Settings and secrets: database location from GAUNTLET_DATABASE_URL, secrets from env or .streamlit/secrets.toml."""

from __future__ import annotations

import os
import tomllib
from functools import cache
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = Path.home() / ".local" / "share" / "gauntlet"


def database_url() -> str:
    """The SQLAlchemy URL of the product database (default: SQLite under ~/.local/share/gauntlet)."""
    url = os.environ.get("GAUNTLET_DATABASE_URL")
    if url:
        return url
    DEFAULT_DATA_DIR.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{DEFAULT_DATA_DIR / 'gauntlet.db'}"


def secrets_path() -> Path:
    """Where Streamlit-style secrets live (GAUNTLET_SECRETS_FILE overrides)."""
    return Path(os.environ.get("GAUNTLET_SECRETS_FILE", REPO_ROOT / ".streamlit" / "secrets.toml"))


def _secrets_file(path: str) -> dict[str, object]:
    """The secrets file's top level, read again whenever the file changes (an edit needs no restart)."""
    p = Path(path)
    try:
        stat = p.stat()
    except OSError:
        return {}
    return _parsed_secrets(path, stat.st_mtime_ns, stat.st_size) if p.is_file() else {}


@cache
def _parsed_secrets(path: str, mtime_ns: int, size: int) -> dict[str, object]:
    """One parse per (path, modification time, size)."""
    with Path(path).open("rb") as fh:
        return tomllib.load(fh)


def get_secret(name: str) -> str | None:
    """A secret by name: the environment first, then the top level of .streamlit/secrets.toml; never logged."""
    value = os.environ.get(name)
    if value:
        return value
    found = _secrets_file(str(secrets_path())).get(name)
    return str(found) if found is not None else None


def default_judge() -> str | None:
    """The configured default judge id: GAUNTLET_JUDGE (environment or secrets), else `judge` in the secrets file."""
    for value in (get_secret("GAUNTLET_JUDGE"), _secrets_file(str(secrets_path())).get("judge")):
        if value is not None and str(value).strip():
            return str(value).strip()
    return None


def known_secret_values() -> list[str]:
    """Every configured secret value (API keys), so that writers can redact them from logs and errors."""
    names = [k for k in os.environ if k.endswith(("_API_KEY", "_TOKEN", "_SECRET"))]
    values = [os.environ[k] for k in names if len(os.environ[k]) >= 8]
    for key, value in _secrets_file(str(secrets_path())).items():
        if isinstance(value, str) and key.endswith(("_API_KEY", "_TOKEN", "_SECRET")) and len(value) >= 8:
            values.append(value)
    return values


def redact(text: str, secrets: list[str] | None = None) -> str:
    """Replace every known secret value in `text` with '***' (`secrets`: known_secret_values() when the caller just
    read them for many texts)."""
    for value in known_secret_values() if secrets is None else secrets:
        text = text.replace(value, "***")
    return text
