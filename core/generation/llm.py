"""LLM calls with a content-addressed cache (LLMCall table), retries with backoff + jitter, and rate limiting."""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from core.generation.providers import get_provider
from core.generation.providers.base import ChatMessage, Completion, ModelConfig, Provider, ProviderError
from core.generation.ratelimit import Clock, RateLimiter, SystemClock
from core.generation.tokens import count_tokens
from core.store.db import insert_ignore_statement, table_of
from core.store.models import LLMCall, Model, utc_now
from core.store.writes import GroupWriter, Write, commit_one

NON_SEMANTIC_SETTINGS = frozenset({"api_key_env", "base_url_env", "base_url", "timeout_s", "send_temperature"})
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 30.0
RETRY_AFTER_CAP_S = 120.0
PRELOAD_CHUNK = 500


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


def repeat_config(config: ModelConfig, repeat: int) -> ModelConfig:
    """The config that answers repeat `repeat` of an item: unchanged for 0 (so its cache key is today's), else the
    model's seed setting (0 when unset) plus `repeat`, which providers that take a seed send and the cache key holds."""
    if repeat == 0:
        return config
    settings = {**config.settings, "seed": int(config.settings.get("seed") or 0) + repeat}
    return config.model_copy(update={"settings": settings})


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
        writer: GroupWriter | None = None,
        max_connections: int | None = None,
    ) -> None:
        self.config = config
        self.engine = engine
        self.max_retries = max_retries
        self.limiter = limiter
        self.clock = clock or SystemClock()
        self.provider = provider or get_provider(config, max_connections=max_connections)
        self.rng = random.Random(seed)
        self.writer = writer
        self._insert = insert_ignore_statement(engine, table_of(LLMCall))
        self._inflight: dict[str, asyncio.Future[Completion]] = {}
        self._preloaded: dict[str, Completion | None] = {}
        self._read_at: dict[str, int] = {}  # preloaded key: the commit count when its cache read began
        self._reads: Counter[int] = Counter()  # cache reads not yet followed by their in-flight check, by commit count
        self._commits = 0  # answers committed so far
        self._answered: deque[tuple[int, str, asyncio.Future[Completion]]] = deque()  # (commit count, key, future)
        self._keys: dict[int, tuple[list[ChatMessage], str]] = {}

    def key_for(self, messages: list[ChatMessage], *, remember: bool = False) -> str:
        """The cache key of `messages`; preloaded lists are hashed once (each kept, so its id cannot be reused, until
        its call is made: complete() lets it go, so a long run does not keep every prompt it sent)."""
        known = self._keys.get(id(messages))
        if known is not None and known[0] is messages:
            return known[1]
        key = cache_key(self.config, messages)
        if remember:
            self._keys[id(messages)] = (messages, key)
        return key

    def preload(self, message_lists: Iterable[list[ChatMessage]], *, remember: bool = True) -> int:
        """Look up the cache for many calls in a few queries, so those calls skip their own lookup; returns hits.
        With remember=False the message lists are not kept (their calls hash them again)."""
        keys = list(dict.fromkeys(self.key_for(messages, remember=remember) for messages in message_lists))
        for key in keys:
            if key not in self._read_at:
                self._read_at[key] = self._open_read()
        self._preloaded.update(dict.fromkeys(keys))
        with Session(self.engine) as session:
            for start in range(0, len(keys), PRELOAD_CHUNK):
                chunk = keys[start : start + PRELOAD_CHUNK]
                for row in session.exec(select(LLMCall).where(col(LLMCall.key).in_(chunk))):
                    self._preloaded[row.key] = _cached_completion(row)
        return sum(value is not None for value in self._preloaded.values())

    async def aclose(self) -> None:
        """Release the provider's connections (adapters without a pool have nothing to close)."""
        close = getattr(self.provider, "aclose", None)
        if close is not None:
            await close()

    async def complete(self, messages: list[ChatMessage], *, purpose: str = "generate",
                       reserve: Callable[[float], Awaitable[None]] | None = None,
                       persist: Callable[[Completion], list[Write]] | None = None) -> Completion:
        """The completion for `messages`: from the cache if this exact call was made before, else from the provider.

        Before a paid call is sent, `reserve(max_cost)` is awaited (it may raise to refuse the call). The answer is
        persisted the moment it arrives: the cache row and `persist(completion)`'s writes in one transaction (an
        answer from the cache commits `persist`'s writes alone).
        """
        key = self.key_for(messages)
        if (known := self._keys.get(id(messages))) is not None and known[0] is messages:
            del self._keys[id(messages)]  # hashed; the call holds its messages as long as it needs them
        read = self._read_at.pop(key) if key in self._preloaded else self._open_read()
        try:
            cached = self._preloaded.pop(key) if key in self._preloaded else await asyncio.to_thread(self._lookup, key)
            sharing = self._inflight.get(key) if cached is None else None
        finally:
            self._close_read(read)
        if sharing is not None:
            shared = await asyncio.shield(sharing)
            cached = shared.model_copy(update={"cached": True, "attempts": 0})
        if cached is not None:
            if persist is not None:
                await self._commit(persist(cached))
            return cached
        future: asyncio.Future[Completion] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            if reserve is not None:
                await reserve(self.max_cost(messages))
            completion = await self._call_with_retries(messages, key)
            await self._commit([self._cache_write(key, messages, completion, purpose),
                                *(persist(completion) if persist is not None else [])])
            future.set_result(completion)
            self._answered_now(key, future)
            return completion
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: waiters re-raise it themselves
            del self._inflight[key]
            raise

    def _open_read(self) -> int:
        """A cache read begins: the answers committed so far are what it can see; that count, to close it with."""
        self._reads[self._commits] += 1
        return self._commits

    def _close_read(self, commits: int) -> None:
        """A cache read and its in-flight check are over: answers it could have missed may now be let go."""
        self._reads[commits] -= 1
        if self._reads[commits] <= 0:
            del self._reads[commits]
        self._let_go()

    def _answered_now(self, key: str, future: asyncio.Future[Completion]) -> None:
        """An answer was committed: its future is shared with the reads begun before the commit, then let go."""
        self._commits += 1
        self._answered.append((self._commits, key, future))
        self._let_go()

    def _let_go(self) -> None:
        """Forget answered futures that no open cache read began before (later reads find their cache rows)."""
        oldest = min(self._reads, default=self._commits)
        while self._answered and self._answered[0][0] <= oldest:
            _, key, future = self._answered.popleft()
            if self._inflight.get(key) is future:
                del self._inflight[key]

    async def fresh(self, messages: list[ChatMessage]) -> Completion:
        """The provider's answer to `messages`, sent now with retries: the cache is neither read nor written."""
        return await self._call_with_retries(messages, self.key_for(messages))

    def max_cost(self, messages: list[ChatMessage]) -> float:
        """The cost a call is reserved at: its estimated input tokens and the model's max output tokens."""
        return self.config.cost_usd(sum(count_tokens(m.content) for m in messages), self.config.max_output_tokens)

    async def _call_with_retries(self, messages: list[ChatMessage], key: str) -> Completion:
        tokens = sum(estimate_tokens(m.content) for m in messages) + self.config.max_output_tokens
        for attempt in range(self.max_retries + 1):
            if self.limiter:
                await self.limiter.acquire(tokens)
            if self.writer is not None:
                await self.writer.confirm_guard()  # e.g. the lease fence, after a pause, a rate-limit wait or a backoff
            try:
                completion = await self.provider.complete(messages)
                return completion.model_copy(update={"attempts": attempt + 1, "cache_key": key})
            except ProviderError as error:
                error.attempts = attempt + 1  # type: ignore[attr-defined]
                if not error.retryable or attempt == self.max_retries:
                    raise
                await self.clock.sleep(backoff_delay(attempt, error, self.rng))
        raise AssertionError("unreachable")

    def _lookup(self, key: str) -> Completion | None:
        with Session(self.engine) as session:
            row = session.get(LLMCall, key)
            return _cached_completion(row) if row is not None else None

    def _cache_write(self, key: str, messages: list[ChatMessage], completion: Completion, purpose: str) -> Write:
        row = {
            "key": key,
            "provider": self.config.provider,
            "model_name": self.config.model_name,
            "request": canonical_request(self.config, messages),
            "text": completion.text,
            "reasoning": completion.reasoning or None,
            "reasoning_tokens": completion.reasoning_tokens,
            "finish_reason": completion.finish_reason,
            "input_tokens": completion.input_tokens,
            "output_tokens": completion.output_tokens,
            "latency_ms": completion.latency_ms,
            "cost_usd": completion.cost_usd,
            "purpose": purpose,
            "created_at": utc_now(),
        }
        return self._insert, row

    async def _commit(self, writes: list[Write]) -> None:
        if self.writer is not None:
            await self.writer.commit(writes)
            return
        _, error = await asyncio.to_thread(commit_one, self.engine, writes)
        if error is not None:
            raise error


def _cached_completion(row: LLMCall) -> Completion:
    return Completion(text=row.text, reasoning=row.reasoning or "", reasoning_tokens=row.reasoning_tokens,
                      finish_reason=row.finish_reason, input_tokens=row.input_tokens, output_tokens=row.output_tokens,
                      latency_ms=row.latency_ms, cost_usd=row.cost_usd, cached=True, cache_key=row.key,
                      attempts=0).kept_apart()


def make_client(config: ModelConfig, engine: Engine, **kwargs: Any) -> LLMClient:
    """An LLMClient for `config` on `engine` (keyword options as for LLMClient)."""
    return LLMClient(config, engine, **kwargs)
