"""Checker base class, the checker registry, kwargs validation and the IFEval loose-variant rule."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from core.registry import Registry, UnknownNameError
from core.scoring.checkers.guard import GuardedPattern, nested_quantifier, time_limit


class UnsupportedLanguageError(ValueError):
    """A checker cannot judge text in this language; the scorer records it as an error verdict, never a pass/fail."""

    def __init__(self, language: str) -> None:
        super().__init__(f"unsupported for language {language}")
        self.language = language


class NoKwargs(BaseModel):
    """Kwargs schema of checkers that take no parameters."""

    model_config = ConfigDict(extra="forbid")


class Checker:
    """One checkable instruction: `describe()` gives the instruction text, `check()` the strict verdict.

    A response that is empty or whitespace-only follows no instruction (IFEval's rule), so both verdicts
    are False for it whatever the checker.
    """

    id: ClassVar[str] = ""
    Kwargs: ClassVar[type[BaseModel]] = NoKwargs

    def __init__(self, kwargs: BaseModel) -> None:
        self.kwargs = kwargs

    def describe(self) -> str:
        """The instruction text a model would be shown."""
        raise NotImplementedError

    def evaluate(self, response: str) -> bool:
        """Verdict for a non-blank response (subclasses implement this)."""
        raise NotImplementedError

    def check(self, response: str) -> bool:
        """Strict verdict: does the response, as given, follow the instruction?"""
        return bool(response.strip()) and self.evaluate(response)

    def check_loose(self, response: str) -> bool:
        """Loose verdict: does any IFEval loose variant of the response follow the instruction?"""
        return any(variant.strip() and self.evaluate(variant) for variant in loose_variants(response))


class CheckerRegistry(Registry[type[Checker]]):
    """The checker registry: registering a checker class also gives it its registry name as `id`."""

    def add(self, name: str, obj: type[Checker]) -> None:
        """Register the checker class `obj` under `name` and name it so; a taken name raises ValueError."""
        super().add(name, obj)
        obj.id = name


CHECKERS = CheckerRegistry("checker")


@lru_cache(maxsize=512)
def loose_variants(response: str) -> tuple[str, ...]:
    """The response, minus its first line, last line or both, each also with every '*' removed."""
    lines = response.split("\n")
    trimmed = (
        response,
        "\n".join(lines[1:]).strip(),
        "\n".join(lines[:-1]).strip(),
        "\n".join(lines[1:-1]).strip(),
    )
    return trimmed + tuple(text.replace("*", "") for text in trimmed)


def _drop_none(kwargs: dict[str, Any] | None) -> dict[str, Any]:
    return {key: value for key, value in (kwargs or {}).items() if value is not None}


def _error_message(error: Mapping[str, Any]) -> str:
    msg = str(error["msg"])
    return msg[:1].lower() + msg[1:]


def _validation_errors(exc: ValidationError) -> list[tuple[str, str]]:
    return [
        (".".join(["checker_kwargs", *(str(part) for part in error["loc"])]), _error_message(error))
        for error in exc.errors()
    ]


def kwargs_errors(checker_id: str, kwargs: dict[str, Any] | None) -> list[tuple[str, str]]:
    """Validation problems of (checker_id, kwargs) as (field_path, message) pairs; empty when valid."""
    try:
        cls = CHECKERS.get(checker_id)
    except UnknownNameError as exc:
        return [("checker_id", str(exc))]
    try:
        cls.Kwargs.model_validate(_drop_none(kwargs))
    except ValidationError as exc:
        return _validation_errors(exc)
    return []


def kwargs_warnings(checker_id: str, kwargs: dict[str, Any] | None) -> list[tuple[str, str]]:
    """Risky but valid kwargs of a checker as (field_path, message) pairs: user regexes with nested quantifiers."""
    try:
        checker = build_checker(checker_id, kwargs)
    except (LookupError, ValueError):
        return []  # reported by kwargs_errors
    fields = [(path, text) for name, value in (kwargs or {}).items() for path, text in _texts(name, value)]
    warnings = []
    for pattern in guarded_patterns(checker):
        if not nested_quantifier(pattern.pattern, pattern.flags):
            continue
        path, text = next(((p, t) for p, t in fields if t and t.casefold() in pattern.pattern.casefold()),
                          ("", pattern.pattern))
        why = (f"regex {text!r} has nested quantifiers and may backtrack catastrophically (scoring gives all the "
               f"regexes of one response {time_limit():g} s in total)")
        warnings.append((f"checker_kwargs{'.' + path if path else ''}", why))
    return warnings


def _texts(name: str, value: Any) -> list[tuple[str, str]]:
    if isinstance(value, str):
        return [(name, value)]
    return [(f"{name}[{i}]", v) for i, v in enumerate(value) if isinstance(v, str)] if isinstance(value, list) else []


def guarded_patterns(checker: Checker) -> list[GuardedPattern]:
    """The time-limited user regexes a checker holds."""
    found: list[GuardedPattern] = []
    for value in vars(checker).values():
        found += [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, GuardedPattern)]
    return found


def build_checker(checker_id: str, kwargs: dict[str, Any] | None) -> Checker:
    """Instantiate a registered checker; None-valued kwargs are dropped, invalid ones raise ValueError."""
    cls = CHECKERS.get(checker_id)
    try:
        params = cls.Kwargs.model_validate(_drop_none(kwargs))
    except ValidationError as exc:
        details = "; ".join(f"{path}: {msg}" for path, msg in _validation_errors(exc))
        raise ValueError(f"invalid kwargs for {checker_id}: {details}") from None
    return cls(params)
