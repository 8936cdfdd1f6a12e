"""Toy protocol (the walk-through of docs/architecture.md, "How to add a protocol"): one required field (a short
reference answer), one condition (the default), one metric (toy_echo.echo_match, declared and computed in its
metrics.py), one aggregate (accuracy per model) and one view. It lives outside core and joins with
core.protocols.register_package."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.protocols import register
from core.protocols.base import Condition, Protocol, View, ViewResult
from core.protocols.reference_qa import reference_prompt
from core.store.schema import InstanceSpec
from tests.toy_protocol.metrics import ECHO_MATCH

NAME = "toy_echo"


def needs_short_answer(spec: InstanceSpec) -> str | None:
    """A toy instance needs a short reference answer."""
    ref = spec.reference
    return None if ref is not None and ref.answer_type == "short" else "a toy_echo instance needs a short reference"


def accuracy_view(engine: Any, run_ids: Sequence[int], judge: str) -> ViewResult:
    """The view, built on demand (its module imports pandas; this package's __init__ stays light)."""
    from tests.toy_protocol.views import accuracy_view as build

    return build(engine, run_ids, judge)


TOY = register(Protocol(
    name=NAME,
    title="Toy echo",
    description="A one-field, one-condition protocol that shows how a protocol package is put together.",
    required={"reference": needs_short_answer},
    conditions=(Condition("", "the question with its documents"),),
    metrics=(ECHO_MATCH,),
    aggregates=("accuracy",),
    render=reference_prompt,
    page_views=(View("Echo match per model", accuracy_view),),
))
