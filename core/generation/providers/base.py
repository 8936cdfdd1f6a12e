"""Provider layer contract: chat messages in, a completion with token usage out; errors say whether to retry."""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from core.generation.reasoning import split_reasoning
from core.generation.tokens import count_tokens
from core.protocols.messages import ChatMessage


class ModelConfig(BaseModel):
    """Everything needed to call one model; secrets are referenced by env var name, never stored."""

    name: str
    provider: str
    model_name: str = ""
    temperature: float | None = 0.0
    max_output_tokens: int = 1024
    context_window: int | None = Field(default=None, gt=0, description="Input + output tokens the model accepts.")
    price_input_per_mtok: float = 0.0
    price_output_per_mtok: float = 0.0
    paradigm: Literal["reasoning", "standard"] = "standard"
    access: Literal["open", "closed"] = "closed"
    is_baseline: bool = False
    settings: dict[str, Any] = Field(default_factory=dict)

    def cost_usd(self, input_tokens: int, output_tokens: int) -> float:
        """Cost of a call at this model's prices."""
        return (input_tokens * self.price_input_per_mtok + output_tokens * self.price_output_per_mtok) / 1_000_000


class Completion(BaseModel):
    """A model's answer with usage accounting; `text` is the answer alone, reasoning apart (core.generation.reasoning)."""

    text: str
    reasoning: str = ""
    reasoning_state: Literal["none", "finished", "unfinished"] = "none"
    reasoning_tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    cost_usd: float = 0.0
    cached: bool = False
    cache_key: str | None = None
    finish_reason: str | None = None
    attempts: int = 1

    def kept_apart(self) -> Completion:
        """This completion with any reasoning block of its text moved to `reasoning` (idempotent)."""
        split = split_reasoning(self.text, self.reasoning, self.finish_reason)
        if split.state == "none":
            return self
        estimate = count_tokens(split.reasoning)  # when the provider does not say: within the output it reports
        tokens = self.reasoning_tokens or (min(estimate, self.output_tokens) if self.output_tokens else estimate)
        return self.model_copy(update={"text": split.answer, "reasoning": split.reasoning,
                                       "reasoning_state": split.state, "reasoning_tokens": tokens})


class ProviderError(Exception):
    """A failed provider call; `retryable` tells the runner whether another attempt may succeed."""

    def __init__(self, message: str, *, retryable: bool, retry_after: float | None = None, kind: str = "error") -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.kind = kind


class Provider(Protocol):
    """What every provider adapter implements."""

    config: ModelConfig

    async def complete(self, messages: list[ChatMessage]) -> Completion:
        """Send `messages` and return the completion, or raise ProviderError."""
        ...
