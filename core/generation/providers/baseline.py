"""The `baseline` provider: answers locally (no network) with core.generation.baselines, chosen by model_name."""

from __future__ import annotations

import time

from core.generation.baselines import BASELINES
from core.generation.fake_server import count_tokens
from core.generation.providers.base import ChatMessage, Completion, ModelConfig, ProviderError


class BaselineProvider:
    """Runs `baseline:always-refuse` or `baseline:extractive` in-process; free, instant, deterministic."""

    def __init__(self, config: ModelConfig, *, max_connections: int | None = None) -> None:
        del max_connections  # no network, no pool
        self.config = config
        name = config.model_name or config.name
        key = name if name.startswith("baseline:") else f"baseline:{name}"
        if key not in BASELINES:
            raise ProviderError(f"unknown baseline {name!r}; known: {', '.join(sorted(BASELINES))}", retryable=False,
                                kind="config")
        self.answer = BASELINES[key]

    async def complete(self, messages: list[ChatMessage]) -> Completion:
        """Answer from the last user message."""
        started = time.perf_counter()
        user = next((m.content for m in reversed(messages) if m.role == "user"), "")
        text = self.answer(user)
        prompt_tokens = sum(count_tokens(m.content) for m in messages)
        return Completion(text=text, input_tokens=prompt_tokens, output_tokens=count_tokens(text),
                          latency_ms=(time.perf_counter() - started) * 1000, finish_reason="stop")
