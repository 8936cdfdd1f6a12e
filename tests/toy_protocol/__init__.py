"""Toy protocol (the walk-through of docs/architecture.md, "How to add a protocol"): one required field (a short
reference answer), one condition (the default), one headline metric (toy_echo.echo_match, declared here and computed in
its metrics.py), one aggregate table (accuracy per model, analysis.py), one view, a builder (builder.py: a Build
benchmark tab) and one expert label kind (experts say whether the answer's last word is right; Judge alignment
compares them with echo_match's verdicts). It lives outside core and joins with
core.protocols.register_package; copied into core/protocols/ with NAME changed it is a protocol of core as it stands
(its imports are relative and its hooks 'module:function' names built from __name__)."""

from __future__ import annotations

from core.metrics import MetricDeclaration, declare
from core.protocols import register
from core.protocols.base import Builder, Condition, LabelKind, LabelValue, Protocol, View
from core.protocols.reference_qa import reference_prompt
from core.store.schema import InstanceSpec

NAME = "toy_echo"
ECHO_MATCH = f"{NAME}.echo_match"


def needs_short_answer(spec: InstanceSpec) -> str | None:
    """A toy instance needs a short reference answer."""
    ref = spec.reference
    return None if ref is not None and ref.answer_type == "short" else f"a {NAME} instance needs a short reference"


declare(MetricDeclaration(
    ECHO_MATCH, "Echo match", "rate", ("lexical",), states=("scored", "not_applicable", "unparseable", "unjudged"),
    unparseable="excluded", description="the response's last word is an accepted answer",
    compute=f"{__name__}.metrics:echo_match"))

ECHO_LABEL = LabelKind(
    f"{NAME}_echo", "Echo", "is the answer's last word an accepted answer?",
    (LabelValue("right", "Right", "Alt+1"), LabelValue("wrong", "Wrong", "Alt+2")),
    units=f"{__name__}.metrics:answer_units", checks=ECHO_MATCH, judged=f"{__name__}.analysis:echo_decisions",
    agrees=("right",), unit="answer")

TOY = register(Protocol(
    name=NAME,
    title="Toy echo",
    description="A one-field, one-condition protocol that shows how a protocol package is put together.",
    required={"reference": needs_short_answer},
    conditions=(Condition("", "the question with its documents"),),
    metrics=(ECHO_MATCH,),
    headline=(ECHO_MATCH,),
    render=reference_prompt,
    page_views=(View("Echo match per model", f"{__name__}.views:accuracy_view"),),
    builder=Builder("Toy echo", "Toy echo: one instance per question-answer pair, its answer in one document.",
                    "Question-answer pairs (JSONL)", "toy/pairs.jsonl", f"{__name__}.builder:build", bm25=False),
    labels=(ECHO_LABEL,),
))
