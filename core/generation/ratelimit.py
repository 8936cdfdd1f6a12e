"""Requests-per-minute and tokens-per-minute limiting (token buckets) with an injectable clock."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class Clock(Protocol):
    """Time source: monotonic seconds and an async sleep."""

    def now(self) -> float:
        """Monotonic seconds."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds`."""
        ...


class SystemClock:
    """The real monotonic clock and asyncio.sleep."""

    def now(self) -> float:
        """time.monotonic()."""
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        """asyncio.sleep(seconds)."""
        await asyncio.sleep(max(0.0, seconds))


class ManualClock:
    """A clock for tests: sleeping advances time instantly and is recorded."""

    def __init__(self, start: float = 0.0) -> None:
        self.t = start
        self.sleeps: list[float] = []

    def now(self) -> float:
        """Current fake time."""
        return self.t

    async def sleep(self, seconds: float) -> None:
        """Advance fake time by `seconds` and yield to the loop."""
        self.sleeps.append(seconds)
        self.t += max(0.0, seconds)
        await asyncio.sleep(0)


class TokenBucket:
    """`rate_per_minute` units refilled continuously up to a one-minute burst."""

    def __init__(self, rate_per_minute: float, clock: Clock) -> None:
        self.capacity = float(rate_per_minute)
        self.per_second = rate_per_minute / 60.0
        self.level = self.capacity
        self.clock = clock
        self.stamp = clock.now()

    def refill(self) -> None:
        """Add the units earned since the last refill."""
        now = self.clock.now()
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.per_second)
        self.stamp = now

    def wait_time(self, amount: float) -> float:
        """Seconds until `amount` units are available (amounts above capacity wait for a full bucket)."""
        self.refill()
        needed = min(amount, self.capacity) - self.level
        return max(0.0, needed / self.per_second)


class RateLimiter:
    """Async limiter over optional RPM and TPM buckets; `acquire(tokens)` waits until both allow the call."""

    def __init__(self, rpm: float | None = None, tpm: float | None = None, clock: Clock | None = None) -> None:
        self.clock = clock or SystemClock()
        self.requests = TokenBucket(rpm, self.clock) if rpm else None
        self.tokens = TokenBucket(tpm, self.clock) if tpm else None
        self._lock = asyncio.Lock()

    async def acquire(self, tokens: int = 0) -> float:
        """Wait for one request slot and `tokens` tokens; returns the seconds waited."""
        if self.requests is None and self.tokens is None:
            return 0.0
        waited = 0.0
        async with self._lock:
            while True:
                delay = max(self._wait(self.requests, 1), self._wait(self.tokens, tokens))
                if delay <= 0:
                    break
                await self.clock.sleep(delay)
                waited += delay
            self._take(self.requests, 1)
            self._take(self.tokens, tokens)
        return waited

    @staticmethod
    def _wait(bucket: TokenBucket | None, amount: float) -> float:
        return bucket.wait_time(amount) if bucket and amount else 0.0

    @staticmethod
    def _take(bucket: TokenBucket | None, amount: float) -> None:
        if bucket and amount:
            bucket.level -= amount
