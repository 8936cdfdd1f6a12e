"""LLM calls with a content-addressed cache (LLMCall table), retries with backoff + jitter, and rate limiting."""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from typing import Any

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from core.models import LLMCall, Model
from core.providers import get_provider
from core.providers.base import ChatMessage, Completion, ModelConfig, Provider, ProviderError
from core.ratelimit import Clock, RateLimiter, SystemClock

NON_SEMANTIC_SETTINGS = frozenset({"api_key_env", "base_url_env", "base_url", "timeout_s", "send_temperature"})
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 30.0
RETRY_AFTER_CAP_S = 120.0


def request_parameters(config: ModelConfig) -> dict[str, Any]:
    """The generation parameters that change a model's answer (no keys, endpoints or timeouts)."""
    settings = {k: v for k, v in sorted(config.settings.items()) if k not in NON_SEMANTIC_SETTINGS}
    return {"temperature": config.temperature, "max_output_tokens": config.max_output_tokens, "settings": settings}


def canonical_request(config: ModelConfig, messages: list[ChatMessage]) -> dict[str, Any]:
    """The cache identity of a call: provider, model name, parameters and messages."""
    return {
        "provider": config.provider,
        "model_name": config.model_name,
        "parameters": request_parameters(config),
        "messages": [{"role": m.role, "content": m.content} for m in messages],
    }


def cache_key(config: ModelConfig, messages: list[ChatMessage]) -> str:
    """sha256 of the canonical JSON of the request."""
    blob = json.dumps(canonical_request(config, messages), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def estimate_tokens(text: str) -> int:
    """Rough token estimate for budgeting and rate limiting (about four characters per token)."""
    return max(1, len(text) // 4)


def config_from_model(model: Model) -> ModelConfig:
    """The ModelConfig of a registered Model row."""
    fields = model.model_dump(include=set(ModelConfig.model_fields))
    fields["paradigm"] = fields["paradigm"] if fields["paradigm"] in ("reasoning", "standard") else "standard"
    fields["access"] = fields["access"] if fields["access"] in ("open", "closed") else "closed"
    fields["settings"] = dict(fields.get("settings") or {})
    return ModelConfig(**fields)


def backoff_delay(attempt: int, error: ProviderError, rng: random.Random) -> float:
    """Seconds before retry number `attempt` (0-based): Retry-After if given, else capped exponential full jitter."""
    if error.retry_after is not None:
        return min(RETRY_AFTER_CAP_S, error.retry_after) * (1 + 0.1 * rng.random())
    ceiling = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2**attempt)
    return ceiling / 2 + rng.random() * ceiling / 2


class LLMClient:
    """One model's client: cache lookup, rate limit, provider call with retries, cache write on success."""

    def __init__(
        self,
        config: ModelConfig,
        engine: Engine,
        *,
        max_retries: int = 4,
        limiter: RateLimiter | None = None,
        clock: Clock | None = None,
        provider: Provider | None = None,
        seed: int | None = None,
    ) -> None:
        self.config = config
        self.engine = engine
        self.max_retries = max_retries
        self.limiter = limiter
        self.clock = clock or SystemClock()
        self.provider = provider or get_provider(config)
        self.rng = random.Random(seed)
        self._inflight: dict[str, asyncio.Future[Completion]] = {}

    async def complete(self, messages: list[ChatMessage], *, purpose: str = "generate") -> Completion:
        """The completion for `messages`: from the cache if this exact call was made before, else from the provider."""
        key = cache_key(self.config, messages)
        cached = await asyncio.to_thread(self._lookup, key)
        if cached is not None:
            return cached
        if key in self._inflight:
            return (await asyncio.shield(self._inflight[key])).model_copy(update={"cached": True, "attempts": 0})
        future: asyncio.Future[Completion] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            completion = await self._call_with_retries(messages)
            completion = completion.model_copy(update={"cache_key": key})
            await asyncio.to_thread(self._store, key, messages, completion, purpose)
            future.set_result(completion)
            return completion
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: waiters re-raise it themselves
            raise
        finally:
            del self._inflight[key]

    async def _call_with_retries(self, messages: list[ChatMessage]) -> Completion:
        tokens = sum(estimate_tokens(m.content) for m in messages) + self.config.max_output_tokens
        for attempt in range(self.max_retries + 1):
            if self.limiter:
                await self.limiter.acquire(tokens)
            try:
                completion = await self.provider.complete(messages)
                return completion.model_copy(update={"attempts": attempt + 1})
            except ProviderError as error:
                error.attempts = attempt + 1  # type: ignore[attr-defined]
                if not error.retryable or attempt == self.max_retries:
                    raise
                await self.clock.sleep(backoff_delay(attempt, error, self.rng))
        raise AssertionError("unreachable")

    def _lookup(self, key: str) -> Completion | None:
        with Session(self.engine) as session:
            row = session.get(LLMCall, key)
            if row is None:
                return None
            return Completion(text=row.text, input_tokens=row.input_tokens, output_tokens=row.output_tokens,
                              latency_ms=row.latency_ms, cost_usd=row.cost_usd, cached=True, cache_key=key,
                              attempts=0)

    def _store(self, key: str, messages: list[ChatMessage], completion: Completion, purpose: str) -> None:
        row = LLMCall(
            key=key,
            provider=self.config.provider,
            model_name=self.config.model_name,
            request=canonical_request(self.config, messages),
            text=completion.text,
            input_tokens=completion.input_tokens,
            output_tokens=completion.output_tokens,
            latency_ms=completion.latency_ms,
            cost_usd=completion.cost_usd,
            purpose=purpose,
        )
        with Session(self.engine) as session:
            session.add(row)
            try:
                session.commit()
            except IntegrityError:
                session.rollback()


def make_client(config: ModelConfig, engine: Engine, **kwargs: Any) -> LLMClient:
    """An LLMClient for `config` on `engine` (keyword options as for LLMClient)."""
    return LLMClient(config, engine, **kwargs)
