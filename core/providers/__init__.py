"""Provider registry: `openai`, `anthropic`, `openai_compatible` and `baseline` adapters behind one protocol.

Entries are small factories that import their adapter (and SDK) on first use, so the CLI starts without every SDK.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from core.providers.base import ModelConfig, Provider
from core.registry import Registry

PROVIDERS: Registry[Callable[[ModelConfig], Provider]] = Registry("provider")


def get_provider(config: ModelConfig) -> Provider:
    """Instantiate the adapter registered for `config.provider`."""
    return PROVIDERS.get(config.provider)(config)


def lazy_adapter(module: str, class_name: str) -> Callable[[ModelConfig], Provider]:
    """A factory that imports `module` on first call and builds `class_name(config)`."""

    def build(config: ModelConfig) -> Provider:
        return getattr(importlib.import_module(module), class_name)(config)

    build.__doc__ = f"{module}.{class_name}"
    return build


PROVIDERS.add("openai", lazy_adapter("core.providers.openai_provider", "OpenAIChat"))
PROVIDERS.add("openai_compatible", lazy_adapter("core.providers.openai_provider", "OpenAICompatibleChat"))
PROVIDERS.add("anthropic", lazy_adapter("core.providers.anthropic_provider", "AnthropicChat"))
PROVIDERS.add("baseline", lazy_adapter("core.providers.baseline", "BaselineProvider"))
