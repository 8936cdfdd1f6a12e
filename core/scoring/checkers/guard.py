"""Time-limited matching for the regexes that come from benchmark files (checker kwargs), so a pattern with
catastrophic backtracking records a checker error instead of hanging scoring.

Python's `re` semantics are kept (the IFEval checkers are defined by them; RE2 differs on Unicode word boundaries and
classes). In the main thread a match runs under a SIGALRM timer (`re` checks for signals while it backtracks); in any
other thread it runs in a helper process that is killed at the limit.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import re
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

REGEX_TIME_LIMIT_ENV = "GAUNTLET_REGEX_TIME_LIMIT_S"
REGEX_TIME_LIMIT_S = 2.0


class RegexTimeout(TimeoutError):
    """A user-supplied regex ran past the time limit on one response."""


def time_limit() -> float:
    """Seconds one guarded match may take ($GAUNTLET_REGEX_TIME_LIMIT_S, default 2)."""
    try:
        return max(0.01, float(os.environ.get(REGEX_TIME_LIMIT_ENV, REGEX_TIME_LIMIT_S)))
    except ValueError:
        return REGEX_TIME_LIMIT_S


def regex_error(pattern: str, flags: int = 0) -> str | None:
    """Why `pattern` is not a valid regex, or None when it compiles."""
    try:
        re.compile(pattern, flags)
    except (re.error, OverflowError, RecursionError, ValueError) as exc:
        return f"not a valid regex ({exc}): {pattern!r}"
    return None


@dataclass(frozen=True)
class Found:
    """A match found in a helper process: its text and groups (what the checkers read of a match)."""

    text: str
    captured: tuple[str | None, ...]

    def group(self) -> str:
        return self.text

    def groups(self) -> tuple[str | None, ...]:
        return self.captured


class GuardedPattern:
    """A compiled user regex whose search / finditer / split give up after time_limit() seconds with RegexTimeout."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern, self.flags = pattern, flags
        self.regex = re.compile(pattern, flags)

    def search(self, text: str) -> Any | None:
        """The first match, or None."""
        found = self._run("search", text)
        return found[0] if found else None

    def finditer(self, text: str) -> list[Any]:
        """Every non-overlapping match (a list, computed under the time limit)."""
        return self._run("finditer", text)

    def split(self, text: str) -> list[str | None]:
        """`text` split by the pattern, as re.split."""
        return self._run("split", text)

    def _run(self, op: str, text: str) -> list[Any]:
        limit = time_limit()
        if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
            return _with_alarm(lambda: _apply(self.regex, op, text), limit, self.pattern)
        return _in_helper(self.pattern, self.flags, op, text, limit)


def guarded(pattern: str, flags: int = 0) -> GuardedPattern:
    """A time-limited compiled regex for a pattern that comes from a benchmark file."""
    return GuardedPattern(pattern, flags)


def _apply(regex: re.Pattern[str], op: str, text: str) -> list[Any]:
    if op == "split":
        return regex.split(text)
    if op == "search":
        match = regex.search(text)
        return [match] if match else []
    return list(regex.finditer(text))


def _timeout(pattern: str, limit: float) -> RegexTimeout:
    shown = pattern if len(pattern) <= 80 else pattern[:77] + "..."
    return RegexTimeout(f"regex {shown!r} ran over the {limit:g} s limit (catastrophic backtracking?)")


def _with_alarm(run: Callable[[], list[Any]], limit: float, pattern: str) -> list[Any]:
    def on_alarm(_signum: int, _frame: Any) -> None:
        raise _timeout(pattern, limit)

    previous = signal.signal(signal.SIGALRM, on_alarm)
    old_delay, old_interval = signal.setitimer(signal.ITIMER_REAL, limit)
    started = time.monotonic()
    try:
        return run()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if old_delay:  # give back a timer someone else had set, less the time spent here
            signal.setitimer(signal.ITIMER_REAL, max(1e-3, old_delay - (time.monotonic() - started)), old_interval)


_HELPER: concurrent.futures.ProcessPoolExecutor | None = None
_HELPER_LOCK = threading.Lock()


def _helper_run(pattern: str, flags: int, op: str, text: str) -> list[Any]:
    out = _apply(re.compile(pattern, flags), op, text)
    return out if op == "split" else [Found(m.group(), m.groups()) for m in out]


def _in_helper(pattern: str, flags: int, op: str, text: str, limit: float) -> list[Any]:
    global _HELPER
    with _HELPER_LOCK:
        if _HELPER is None:
            _HELPER = concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
            _HELPER.submit(_helper_run, "", 0, "search", "").result()  # started and imported before any limit runs
        helper = _HELPER
        future = helper.submit(_helper_run, pattern, flags, op, text)
        try:
            return future.result(timeout=limit)
        except concurrent.futures.TimeoutError:
            for process in list(getattr(helper, "_processes", {}).values()):
                process.kill()
            helper.shutdown(wait=False, cancel_futures=True)
            _HELPER = None
            raise _timeout(pattern, limit) from None
