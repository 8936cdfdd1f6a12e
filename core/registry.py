"""Small typed registries with decorator registration (one per kind: checkers, judges, providers, metrics)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Iterator
from difflib import get_close_matches
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownNameError(KeyError):
    """Raised when a registry is asked for a name it does not hold; the message lists the known names."""

    def __str__(self) -> str:
        return str(self.args[0])


def unknown_name_message(kind: str, name: str, known: Iterable[str]) -> str:
    """'unknown <kind> <name>; known: ...', ending with the close matches (difflib) when there are any."""
    names = sorted(known)
    close = get_close_matches(name, names, n=3, cutoff=0.6)
    hint = f"; did you mean: {', '.join(close)}" if close else ""
    return f"unknown {kind} {name!r}; known: {', '.join(names) or '(none)'}{hint}"


class Registry(Generic[T]):
    """A name -> object table for one kind of component; duplicates raise, unknown names list the known ones."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._renamed: dict[str, str] = {}
        self.version = 0  # counts the changes through add, rename and remove: a cache of what is registered keys on it

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
        self.version += 1

    def rename(self, old: str, new: str) -> None:
        """Let the retired name `old` still find what is registered as `new` (get warns that it is deprecated)."""
        if old in self._items:
            raise ValueError(f"{self.kind} name {old!r} is registered; it cannot also be a retired name")
        self._renamed[old] = new
        self.version += 1

    def current_name(self, name: str) -> str:
        """`name`, or the name a retired name was renamed to (with a DeprecationWarning)."""
        if name not in self._renamed:
            return name
        new = self._renamed[name]
        warnings.warn(f"{self.kind} {name!r} is now called {new!r}", DeprecationWarning, stacklevel=3)
        return new

    def get(self, name: str) -> T:
        """Return the object registered as `name` (or renamed from it), or raise UnknownNameError listing the known
        names and the close matches."""
        try:
            return self._items[self.current_name(name)]
        except KeyError:
            raise UnknownNameError(unknown_name_message(self.kind, name, self._items)) from None

    def remove(self, name: str) -> None:
        """Take `name` out of the registry (a test's temporary registration); an unknown name raises."""
        self.get(name)
        del self._items[name]
        self.version += 1

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
