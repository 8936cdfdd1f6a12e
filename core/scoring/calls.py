"""A judge's calls in one scoring pass: at most N in flight across every response, cache reads batched."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from core.generation.providers.base import ChatMessage, Completion

log = logging.getLogger("gauntlet.scorer")


class JudgeCalls:
    """A judge's completion client as one scoring pass uses it.

    At most `limit` calls are in flight at once, across all responses (a semaphore around each call). The cache
    lookups of the calls that start in the same event-loop turn (the independent calls of a response, the second
    stages that become ready together, a whole batch on a re-score) are read in one query (the client's `preload`)
    instead of one query each.
    """

    def __init__(self, client: Any, limit: int) -> None:
        self.client = client
        self.slots = asyncio.Semaphore(max(1, limit))
        self._batch: list[list[ChatMessage]] = []
        self._loaded: asyncio.Future[None] | None = None

    async def complete(self, messages: list[ChatMessage], *, purpose: str) -> Completion:
        """The wrapped client's completion of `messages`, once a call slot is free."""
        if hasattr(self.client, "preload"):
            await self._preload(messages)
        async with self.slots:
            return await self.client.complete(messages, purpose=purpose)

    async def _preload(self, messages: list[ChatMessage]) -> None:
        if self._loaded is None:
            self._loaded = asyncio.get_running_loop().create_future()
            asyncio.get_running_loop().call_soon(self._flush)
        self._batch.append(messages)
        await asyncio.shield(self._loaded)

    def _flush(self) -> None:
        batch, loaded = self._batch, self._loaded
        self._batch, self._loaded = [], None
        try:
            self.client.preload(batch, remember=False)
        except Exception as error:  # noqa: BLE001 - each call then reads the cache itself and meets the error there
            log.warning("batched cache read failed: %s", str(error).splitlines()[0])
        if loaded is not None and not loaded.done():
            loaded.set_result(None)
