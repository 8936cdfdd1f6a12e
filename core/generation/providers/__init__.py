"""Provider registry: `openai`, `anthropic`, `openai_compatible` and `baseline` adapters behind one protocol.

Entries are small factories that import their adapter (and SDK) on first use, so the CLI starts without every SDK.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from core.generation.providers.base import ModelConfig, Provider
from core.registry import Registry

PROVIDERS: Registry[Callable[..., Provider]] = Registry("provider")


def get_provider(config: ModelConfig, *, max_connections: int | None = None) -> Provider:
    """Instantiate the adapter registered for `config.provider` (HTTP pool sized for `max_connections` if given)."""
    factory = PROVIDERS.get(config.provider)
    return factory(config) if max_connections is None else factory(config, max_connections=max_connections)


def lazy_adapter(module: str, class_name: str) -> Callable[..., Provider]:
    """A factory that imports `module` on first call and builds `class_name(config, **options)`."""

    def build(config: ModelConfig, **options: Any) -> Provider:
        return getattr(importlib.import_module(module), class_name)(config, **options)

    build.__doc__ = f"{module}.{class_name}"
    return build


PROVIDERS.add("openai", lazy_adapter("core.generation.providers.openai_provider", "OpenAIChat"))
PROVIDERS.add("openai_compatible", lazy_adapter("core.generation.providers.openai_provider", "OpenAICompatibleChat"))
PROVIDERS.add("anthropic", lazy_adapter("core.generation.providers.anthropic_provider", "AnthropicChat"))
PROVIDERS.add("baseline", lazy_adapter("core.generation.providers.baseline", "BaselineProvider"))
