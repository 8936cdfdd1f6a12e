"""Small typed registries with decorator registration (one per kind: checkers, judges, providers, metrics)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownNameError(KeyError):
    """Raised when a registry is asked for a name it does not hold; the message lists the known names."""

    def __str__(self) -> str:
        return str(self.args[0])


class Registry(Generic[T]):
    """A name -> object table for one kind of component; duplicates raise, unknown names list the known ones."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator registering the decorated object under `name`."""

        def decorate(obj: T) -> T:
            self.add(name, obj)
            return obj

        return decorate

    def add(self, name: str, obj: T) -> None:
        """Register `obj` under `name`; raises ValueError if the name is taken."""
        if name in self._items:
            raise ValueError(f"duplicate {self.kind} name {name!r}")
        self._items[name] = obj

    def get(self, name: str) -> T:
        """Return the object registered as `name`, or raise UnknownNameError listing the known names."""
        try:
            return self._items[name]
        except KeyError:
            known = ", ".join(sorted(self._items)) or "(none)"
            raise UnknownNameError(f"unknown {self.kind} {name!r}; known: {known}") from None

    def names(self) -> list[str]:
        """Sorted registered names."""
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def items(self) -> list[tuple[str, T]]:
        """(name, object) pairs sorted by name."""
        return sorted(self._items.items())
