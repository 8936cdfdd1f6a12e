"""RAG against long context, in the style of LaRA (Alibaba-NLP/LaRA): the same question answered with the chunks a
retriever picks from its document (condition '') and with the whole document in context (condition
'whole_document'). Each instance carries both: chunks (variant setting 'chunk', their BM25 rank) and the whole text
(variant setting 'whole'), read from the user's copy when the benchmark is built, never bundled (some are novels).

A whole document too long for a model's context window (the model's settings: `context_window`) is not sent: the run
records it as over the window and the tables count it as a state ('skipped: too long'), never as a wrong answer.
Per response: accuracy (`long_context.accuracy`: a refusal on LaRA's hallucination questions by rule, else the
judge; offline, only an answer containing the reference is decided). The decision output, per generator and task
(LaRA's location, reasoning, comparison, hallucination): which setting wins and the cost of each
(`analysis.setting_winners`). docs/long_context.md says how it differs from LaRA."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.metrics import MetricDeclaration, ScoreState, declare
from core.protocols import register
from core.protocols.base import Builder, Condition, Prompt, Protocol, View, needs
from core.protocols.prompting import InstanceView, reference_messages

NAME = "long_context"
ACCURACY = f"{NAME}.accuracy"
CHUNKS, WHOLE = "", "whole_document"
TASKS = ("location", "reasoning", "comp", "hallu")
STATES: tuple[ScoreState, ...] = ("scored", "not_applicable", "unparseable", "judge_error", "unjudged", "skipped")
ANSWER_FORM = "long"  # LaRA's answers are sentences; a hallucination question is asked the same way


def long_context_prompt(instance: InstanceView, documents: Sequence[Any], condition: Condition) -> Prompt:
    """The neutral answering prompt in the protocol's answer form, the same for LaRA's hallucination questions."""
    return reference_messages(instance, documents, condition.settings.get("policy"), ANSWER_FORM), {}

declare(MetricDeclaration(
    ACCURACY, "Long-context accuracy", "rate", ("rule", "llm"), states=STATES, unparseable="wrong",
    description="the answer is right for the question (LaRA's hallucination questions: says the text does not tell); "
                "a document over the model's window is skipped, not wrong",
    judged=f"{__name__}.metrics:accuracy"))

LONG_CONTEXT = register(Protocol(
    name=NAME,
    title="RAG vs long context",
    description="The same questions answered with retrieved chunks and with the whole document in context; which "
                "setting wins per generator and task, with the cost of each.",
    required={"reference": needs("reference", f"a {NAME} instance needs a reference answer"),
              "documents": needs("documents", f"a {NAME} instance needs its chunks and its whole document")},
    conditions=(Condition(CHUNKS, "the top chunks a BM25 retriever picks from the document",
                          {"include": {"setting": "chunk"}}),
                Condition(WHOLE, "the whole document in context", {"include": {"setting": "whole"}})),
    metrics=(ACCURACY, "token_f1"),
    headline=(ACCURACY,),
    render=long_context_prompt,
    page_views=(View("Chunks or the whole document: accuracy and cost", f"{__name__}.views:setting_view"),),
    builder=Builder("Long context", "RAG vs long context: each LaRA question with BM25 chunks and its whole document "
                    "(read from your copy of LaRA).", "The LaRA repository folder", "LaRA",
                    f"{__name__}.builder:build", folder=True, formats=("32k", "128k"), bm25=False),
    doc="docs/long_context.md",
))
