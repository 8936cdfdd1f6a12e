"""JSON lines as the store reads them: one value per line, or why it is not one (malformed, NaN / Infinity, a
number out of range, nested too deeply), and field names shown safely in messages."""

from __future__ import annotations

import json
import math
import re

from core.store.schema import MAX_NESTING, NonFinite, storable_problems

_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def shown_field(name: str) -> str:
    """A field name for a message: as is, or JSON-quoted when blank, padded or unprintable."""
    return name if name.strip() == name and name.isprintable() else json.dumps(name)


def _number(text: str, seen: list[NonFinite]) -> float:
    value = float(text)
    if not math.isfinite(value):
        value = NonFinite(value, f"{text} is out of range for a number")
        seen.append(value)
    return value


def _constant(name: str, seen: list[NonFinite]) -> float:
    seen.append(NonFinite(float(name), f"{name} is not valid JSON (only finite numbers are)"))
    return seen[-1]


def nesting_overflow(text: str, start: int = 0) -> int | None:
    """Where the JSON value starting at `start` first opens a level deeper than MAX_NESTING (strings skipped), or None."""
    depth = 0
    for token in _JSON_TOKENS.finditer(text, start):
        depth += 1 if token[0] in "[{" else -1 if token[0] in "]}" else 0
        if depth > MAX_NESTING:
            return token.start()
        if depth <= 0 and token[0] in "]}":
            return None
    return None


def first_overflow(text: str) -> int | None:
    """Where any JSON value of `text` (one document, or one per line) first opens a level deeper than MAX_NESTING
    (strings skipped), or None: a check that needs no recursion, made before anything parses the text."""
    depth = 0
    for token in _JSON_TOKENS.finditer(text):
        if token[0] in "[{":
            depth += 1
            if depth > MAX_NESTING:
                return token.start()
        elif token[0] in "]}":
            depth = max(0, depth - 1)
    return None


def too_deep(text: str, start: int = 0) -> str:
    """The message for a JSON value nested too deeply to parse, with the column where it passes MAX_NESTING."""
    where = nesting_overflow(text, start)
    column = "" if where is None else f" at column {where - text.rfind(chr(10), 0, where)}"
    return f"malformed JSON: nested too deeply (more than {MAX_NESTING} levels{column})"


def parse_json(text: str, *, non_finite: bool = False) -> tuple[object, str | None]:
    """One JSON value, or why it is not one: malformed, NaN / Infinity, a number out of range, nesting too deep.

    With `non_finite`, NaN / Infinity / overflowing numbers parse as NonFinite floats, for `storable_problems` to
    report with their field path (one hidden by a repeated key is still an error here)."""
    seen: list[NonFinite] = []
    try:
        value = json.loads(text, parse_float=lambda t: _number(t, seen), parse_constant=lambda c: _constant(c, seen))
        if seen and not (non_finite and {n.problem for n in seen} & {p for _, p in storable_problems(value)}):
            return None, f"malformed JSON: {seen[0].problem}"
        return value, None
    except json.JSONDecodeError as exc:
        return None, f"malformed JSON: {exc.msg} (column {exc.colno})"
    except RecursionError:
        return None, too_deep(text)
    except ValueError as exc:
        return None, f"malformed JSON: {exc}"
