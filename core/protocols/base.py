"""What a protocol declares: the instance fields it requires, its conditions, prompts, metrics, aggregates and views."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.store.schema import InstanceSpec

Requirement = Callable[[InstanceSpec], str | None]  # returns an error message, or None when satisfied


@dataclass(frozen=True)
class Condition:
    """A named transformation of an instance into a prompt (document subset, order, noise, policy, format)."""

    name: str
    description: str
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Protocol:
    """An evaluation protocol plug-in."""

    name: str
    title: str
    required: dict[str, Requirement]
    conditions: tuple[Condition, ...]
    metrics: tuple[str, ...]
    aggregates: tuple[str, ...] = ()
    views: tuple[str, ...] = ()
    description: str = ""

    def condition(self, name: str) -> Condition:
        """The condition called `name`; an unknown name lists the known ones."""
        for c in self.conditions:
            if c.name == name:
                return c
        known = ", ".join(c.name or "(default)" for c in self.conditions)
        raise KeyError(f"unknown condition {name!r} of protocol {self.name!r}; known: {known}")

    def errors(self, spec: InstanceSpec) -> list[tuple[str, str]]:
        """(field, message) for every requirement `spec` does not meet."""
        return [(path, msg) for path, check in self.required.items() if (msg := check(spec))]


def needs(attribute: str, message: str) -> Requirement:
    """A requirement that `attribute` of the instance is present and non-empty."""
    return lambda spec: None if getattr(spec, attribute) else message
