"""Time-limited matching for the regexes that come from benchmark files (checker kwargs), so a pattern with
catastrophic backtracking records a checker error instead of hanging scoring.

Within a scoring pass (RegexPass) the limit is a budget per response shared by all its patterns, and a pattern that
ran over it once is not tried again in that pass: its later uses are errors naming the first timeout, so N responses x
K hostile patterns cost about K limits, not N x K. A pattern is only run with a fair share of its response's budget
(at least BUDGET_FLOOR of it left); below that it is not run on that response (an error verdict), not blamed.

Python's `re` semantics are kept (the IFEval checkers are defined by them; RE2 differs on Unicode word boundaries and
classes). In the main thread a match runs under a SIGALRM timer (`re` checks for signals while it backtracks); in any
other thread it runs in a helper process that is killed at the limit.
"""

from __future__ import annotations

import concurrent.futures
import concurrent.futures.process
import multiprocessing
import os
import re
import re._constants as sre_constants  # type: ignore[import-not-found]  # typeshed stubs `re` as one module
import re._parser as sre_parse  # type: ignore[import-not-found]  # typeshed stubs `re` as one module
import signal
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

REGEX_TIME_LIMIT_ENV = "GAUNTLET_REGEX_TIME_LIMIT_S"
REGEX_TIME_LIMIT_S = 2.0
MIN_TIMER_S = 0.001  # a zero interval would disarm the timer
BUDGET_FLOOR = 0.1  # share of a response's regex budget that must be left for a pattern to be run on it


class RegexTimeout(TimeoutError):
    """A user-supplied regex ran past the time limit on one response."""


def time_limit() -> float:
    """Seconds one guarded match may take, in a scoring pass all of one response's matches together
    ($GAUNTLET_REGEX_TIME_LIMIT_S, default 2)."""
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


_REPEATS = (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, sre_constants.POSSESSIVE_REPEAT)


def nested_quantifier(pattern: str, flags: int = 0) -> bool:
    """True when an unbounded quantifier sits inside a repeated group, as in (a+)+ or (\\w*)*: such a pattern can
    backtrack catastrophically (a warning sign, not a proof: (\\d+,)+ is one too and is harmless)."""
    try:
        return _nests(sre_parse.parse(pattern, flags), repeated=False)
    except (re.error, OverflowError, RecursionError, ValueError):
        return False


def _nests(items: Any, repeated: bool) -> bool:
    for op, av in items:
        if op in _REPEATS:
            _low, high, body = av
            possessive = op == sre_constants.POSSESSIVE_REPEAT  # gives nothing back: no backtracking into it
            if repeated and high == sre_constants.MAXREPEAT and not possessive:
                return True
            if _nests(body, repeated or (high > 1 and not possessive)):
                return True
        elif any(_nests(sub, repeated) for sub in _subpatterns(av)):
            return True
    return False


def _subpatterns(av: Any) -> Iterator[sre_parse.SubPattern]:
    """The sub-patterns inside an opcode's argument (groups, branches, lookarounds, conditionals)."""
    for item in av if isinstance(av, tuple | list) else (av,):
        if isinstance(item, sre_parse.SubPattern):
            yield item
        elif isinstance(item, tuple | list):
            yield from _subpatterns(item)


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
        budget = _BUDGET.get()
        if budget is None:
            return self.match_within(op, text, time_limit(), time_limit())
        return budget.run(self, op, text)

    def match_within(self, op: str, text: str, seconds: float, limit: float) -> list[Any]:
        """`op` on `text`, stopped after `seconds` with RegexTimeout (which names the `limit` it belongs to)."""
        seconds = max(MIN_TIMER_S, seconds)
        if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
            return _with_alarm(lambda: _apply(self.regex, op, text), seconds, self.pattern, limit)
        return _in_helper(self.pattern, self.flags, op, text, seconds, limit)


class RegexPass:
    """The guarded regexes of one scoring pass: each response gets time_limit() seconds for all its patterns
    together; a pattern runs only while at least BUDGET_FLOOR of them is left, and one that ran over is not tried
    again in the pass."""

    def __init__(self) -> None:
        self.timed_out: dict[tuple[str, int], str] = {}  # (pattern, flags) -> where it first ran over

    @contextmanager
    def response(self, label: str) -> Iterator[None]:
        """Guarded matches inside share one budget of time_limit() seconds; `label` names the response in errors."""
        token = _BUDGET.set(_Budget(self, label, time_limit()))
        try:
            yield
        finally:
            _BUDGET.reset(token)


@dataclass
class _Budget:
    """What is left of one response's regex time, in its scoring pass."""

    scoring_pass: RegexPass
    label: str
    limit: float
    spent: float = 0.0

    def run(self, pattern: GuardedPattern, op: str, text: str) -> list[Any]:
        key, shown = (pattern.pattern, pattern.flags), _shown(pattern.pattern)
        if earlier := self.scoring_pass.timed_out.get(key):
            raise RegexTimeout(f"regex {shown} not tried: it ran over its share of the {self.limit:g} s regex budget "
                               f"earlier in this scoring pass ({earlier})")
        left = self.limit - self.spent
        if left < self.limit * BUDGET_FLOOR:  # too little for a fair try: not run here, and not blamed
            raise RegexTimeout(f"regex {shown} not tried: regex budget for this response spent ({max(0.0, left):.2g} s "
                               f"of its {self.limit:g} s left, under the {BUDGET_FLOOR:.0%} floor)")
        started = time.monotonic()
        try:
            return pattern.match_within(op, text, left, self.limit)
        except RegexTimeout as exc:
            self.scoring_pass.timed_out[key] = self.label  # it had a fair share: not tried again in this pass
            if left >= self.limit:
                raise
            raise RegexTimeout(f"regex {shown} ran over the {left:.2g} s left of this response's {self.limit:g} s "
                               "regex budget (catastrophic backtracking?)") from exc
        finally:
            self.spent += time.monotonic() - started


_BUDGET: ContextVar[_Budget | None] = ContextVar("regex_budget", default=None)


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


def _shown(pattern: str) -> str:
    return repr(pattern if len(pattern) <= 80 else pattern[:77] + "...")


def _timeout(pattern: str, limit: float) -> RegexTimeout:
    return RegexTimeout(f"regex {_shown(pattern)} ran over the {limit:g} s limit (catastrophic backtracking?)")


def _with_alarm(run: Callable[[], list[Any]], seconds: float, pattern: str, limit: float) -> list[Any]:
    def on_alarm(_signum: int, _frame: Any) -> None:
        raise _timeout(pattern, limit)

    previous = signal.signal(signal.SIGALRM, on_alarm)
    old_delay, old_interval = signal.setitimer(signal.ITIMER_REAL, seconds)
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


@contextmanager
def _bare_main() -> Iterator[None]:
    """Hide the parent's __main__ while a helper starts: spawn would run its script again in the helper (a Streamlit
    page or any script importing this module), and the helper needs nothing from it."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


def _started_helper() -> concurrent.futures.ProcessPoolExecutor:
    """The helper process, started (and its imports done) before any limit runs; a new one if there is none."""
    global _HELPER
    if _HELPER is None:
        helper = concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
        with _bare_main():  # the process starts in submit(), in this thread
            ready = helper.submit(_helper_run, "", 0, "search", "")
        ready.result()
        _HELPER = helper
    return _HELPER


def _in_helper(pattern: str, flags: int, op: str, text: str, seconds: float, limit: float) -> list[Any]:
    global _HELPER
    with _HELPER_LOCK:
        for attempt in range(2):  # a helper that died on its own (not killed at a limit) is replaced once
            helper = _started_helper()
            try:
                return helper.submit(_helper_run, pattern, flags, op, text).result(timeout=seconds)
            except concurrent.futures.TimeoutError:
                for process in list(getattr(helper, "_processes", {}).values()):
                    process.kill()
                helper.shutdown(wait=False, cancel_futures=True)
                _HELPER = None
                raise _timeout(pattern, limit) from None
            except concurrent.futures.process.BrokenProcessPool:
                helper.shutdown(wait=False, cancel_futures=True)
                _HELPER = None
                if attempt:
                    raise
        raise AssertionError("unreachable")
