"""What a run's config says about the first-start run: still to be generated or scored, or why it failed."""

from __future__ import annotations

FAILED_KEY = "first_start_failed"


def first_start_pending(config: dict | None) -> bool:
    """True for a first-start run still to be generated or scored (not scored, and its last attempt did not fail)."""
    config = config or {}
    return bool(config.get("first_start")) and not config.get("scored") and not config.get(FAILED_KEY)


def first_start_failure(config: dict | None) -> str | None:
    """Why the last attempt of a first-start run failed, or None."""
    return (config or {}).get(FAILED_KEY) if (config or {}).get("first_start") else None
