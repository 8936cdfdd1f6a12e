"""Provider registry: `openai`, `anthropic`, `openai_compatible` and `baseline` adapters behind one protocol."""

from __future__ import annotations

from collections.abc import Callable

from core.providers.base import ModelConfig, Provider
from core.registry import Registry

PROVIDERS: Registry[Callable[[ModelConfig], Provider]] = Registry("provider")


def get_provider(config: ModelConfig) -> Provider:
    """Instantiate the adapter registered for `config.provider`."""
    _load_adapters()
    return PROVIDERS.get(config.provider)(config)


def _load_adapters() -> None:
    from core.providers import anthropic_provider, baseline, openai_provider  # noqa: F401 - registration side effect


_load_adapters()
