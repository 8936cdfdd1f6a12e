"""Map SDK exceptions (openai, anthropic, httpx, JSON) to ProviderError with retryability and Retry-After."""

from __future__ import annotations

import importlib.util
import json
import os
from typing import Any

import httpx2

from core.config import get_secret, redact
from core.generation.providers.base import ModelConfig, ProviderError

RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529}
DEFAULT_TIMEOUT_S = 120.0


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds to wait from `retry-after-ms` or `retry-after` response headers, if present and numeric."""
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return float(millis) / 1000
        except ValueError:
            pass
    seconds = headers.get("retry-after")
    try:
        return float(seconds) if seconds else None
    except ValueError:
        return None


def status_error(status: int, message: str, headers: Any) -> ProviderError:
    """A ProviderError for an HTTP error status."""
    kind = "rate_limit" if status == 429 else f"http_{status}"
    retryable = status in RETRYABLE_STATUS or status >= 500
    return ProviderError(safe_message(f"HTTP {status}: {message}"), retryable=retryable,
                         retry_after=retry_after_seconds(headers), kind=kind)


def map_exception(exc: BaseException, sdk: Any) -> ProviderError:
    """Translate an exception raised by the `sdk` module (openai or anthropic) into a ProviderError."""
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, sdk.APIStatusError):
        return status_error(exc.status_code, _status_message(exc), getattr(exc.response, "headers", None))
    if isinstance(exc, sdk.APITimeoutError):
        return ProviderError("request timed out", retryable=True, kind="timeout")
    if isinstance(exc, sdk.APIConnectionError):
        cause = type(exc.__cause__).__name__ if exc.__cause__ else "connection error"
        return ProviderError(safe_message(f"connection failed ({cause})"), retryable=True, kind="connection")
    if isinstance(exc, (sdk.APIResponseValidationError, json.JSONDecodeError)):
        return ProviderError(safe_message(f"malformed response ({type(exc).__name__})"), retryable=True,
                             kind="malformed")
    return ProviderError(safe_message(f"{type(exc).__name__}: {exc}"), retryable=False, kind="unexpected")


def _status_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:300]
    return str(getattr(exc, "message", "") or type(exc).__name__)[:300]


def safe_message(text: str) -> str:
    """Redact every known secret (env, secrets.toml) from an error message."""
    return redact(text)


def scrub(error: ProviderError, key: str | None) -> ProviderError:
    """The error with the adapter's own key (which may live under any env var name) replaced by '***'."""
    if not key or key not in str(error):
        return error
    return ProviderError(str(error).replace(key, "***"), retryable=error.retryable, retry_after=error.retry_after,
                         kind=error.kind)


def secret_for(config: ModelConfig, setting: str, default_env: str) -> str | None:
    """Resolve a key or endpoint: env var named in settings[setting] (else `default_env`), env then secrets.toml."""
    return get_secret(str(config.settings.get(setting) or default_env))


def timeout_for(config: ModelConfig) -> float:
    """Client timeout in seconds from settings['timeout_s'] or GAUNTLET_LLM_TIMEOUT_S."""
    return float(config.settings.get("timeout_s") or os.environ.get("GAUNTLET_LLM_TIMEOUT_S") or DEFAULT_TIMEOUT_S)


def http_client_for(sdk: Any, max_connections: int | None) -> Any:
    """The SDK's own async HTTP client with a keep-alive pool of `max_connections`, or None for the SDK default.

    With aiohttp installed (the SDKs' `aiohttp` extra) this is the SDK's aiohttp-backed client, which costs about a
    quarter less CPU per call than the httpx one (bench/bench_runner.py); otherwise the SDK's httpx client.
    """
    if not max_connections:
        return None
    size = max(1, int(max_connections))
    limits = httpx2.Limits(max_connections=size, max_keepalive_connections=size)
    if hasattr(sdk, "DefaultAioHttpClient") and importlib.util.find_spec("aiohttp") is not None:
        return sdk.DefaultAioHttpClient(limits=limits)
    return sdk.DefaultAsyncHttpxClient(limits=limits)
