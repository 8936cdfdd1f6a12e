"""Per-item progress of a protocol build: a callback given (done, total) after each item."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")
Progress = Callable[[int, int], None]


def counted(items: Sequence[T], progress: Progress | None) -> Iterator[T]:
    """Each item in turn; once it is handled, progress(items done, len(items)) when a callback is given."""
    total = len(items)
    for done, item in enumerate(items, 1):
        yield item
        if progress is not None:
            progress(done, total)
