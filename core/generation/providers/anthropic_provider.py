"""Anthropic Messages adapter using the official AsyncAnthropic client."""

from __future__ import annotations

import time
from typing import Any

import anthropic

from core.generation.providers.base import ChatMessage, Completion, ModelConfig
from core.generation.providers.errors import http_client_for, map_exception, scrub, secret_for, timeout_for

PLACEHOLDER_KEY = "not-needed"


class AnthropicChat:
    """Messages API through AsyncAnthropic; system messages go to `system`, thinking budget when configured."""

    def __init__(self, config: ModelConfig, *, max_connections: int | None = None) -> None:
        self.config = config
        self._key = secret_for(config, "api_key_env", "ANTHROPIC_API_KEY")
        self.client = anthropic.AsyncAnthropic(
            api_key=self._key or PLACEHOLDER_KEY,
            base_url=secret_for(config, "base_url_env", "ANTHROPIC_BASE_URL"),
            max_retries=0,
            timeout=timeout_for(config),
            http_client=http_client_for(anthropic, max_connections),
        )

    def request_params(self, messages: list[ChatMessage]) -> dict[str, Any]:
        """Keyword arguments for messages.create; the installed SDK has no temperature argument, so it is only sent
        (as extra body) when settings['send_temperature'] is set; a thinking budget enables extended thinking."""
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        params: dict[str, Any] = {
            "model": self.config.model_name,
            "messages": [{"role": m.role, "content": m.content} for m in messages if m.role != "system"],
            "max_tokens": self.config.max_output_tokens,
        }
        if system:
            params["system"] = system
        budget = int(self.config.settings.get("thinking_budget") or 0)
        if budget:
            params["thinking"] = {"type": "enabled", "budget_tokens": budget}
            params["max_tokens"] = self.config.max_output_tokens + budget
        elif self.config.temperature is not None and self.config.settings.get("send_temperature"):
            params["extra_body"] = {"temperature": self.config.temperature}
        return params

    async def aclose(self) -> None:
        """Close the SDK's HTTP connection pool."""
        await self.client.close()

    async def complete(self, messages: list[ChatMessage]) -> Completion:
        """Send `messages`; raise ProviderError (with retryability) on any failure."""
        started = time.perf_counter()
        try:
            response = await self.client.messages.create(**self.request_params(messages))
            text = "".join(block.text for block in response.content if getattr(block, "type", "") == "text")
            thinking = "\n\n".join(block.thinking for block in response.content
                                    if getattr(block, "type", "") == "thinking")
            usage = response.usage
        except Exception as exc:  # noqa: BLE001 - every SDK failure becomes a ProviderError
            raise scrub(map_exception(exc, anthropic), self._key) from None
        latency_ms = (time.perf_counter() - started) * 1000
        return Completion(
            text=text,
            reasoning=thinking,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            latency_ms=latency_ms,
            cost_usd=self.config.cost_usd(usage.input_tokens, usage.output_tokens),
            finish_reason=response.stop_reason,
        ).kept_apart()
