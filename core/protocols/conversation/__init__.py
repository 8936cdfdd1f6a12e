"""Multi-turn RAG: each turn of a conversation is one instance answered with the conversation so far in the prompt
(earlier turns as chat messages, `attributes.history`) and the turn's passages. Per turn: faithfulness to the passages
(the scoring judge), answer quality against the reference (token F1; `consistency` by an LLM judge), and answerability
handling (an unanswerable turn gets "I don't know", a partial one a hedged or partial answer, an underspecified one a
clarifying question, an answerable one an answer). Breakdowns by turn position, question type, multi-turn type
(follow-up, clarification) and answerability.

Decision metrics: the later-turn drop (per turn after 3: the model's answer quality on turns 1-3, of the same
conversation where scored, minus its own, averaged per model: `analysis.with_drop`, read by the decision through the
`decision_scores` hook), answer quality on later turns and unanswerable-turn handling (per response, on unanswerable
and partial turns). Instances come from MTRAG-UN's generation tasks (IBM/mt-rag-benchmark, builder format 'mtrag'),
the team's own conversations (format 'turns') or its production traces grouped by session (a trace format:
`builder_traces.py`). docs/conversation.md says how it differs from mtRAG."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from core.metrics import MetricDeclaration, ScoreState, declare
from core.protocols import register
from core.protocols.base import Builder, Condition, Prompt, Protocol, View
from core.protocols.prompting import InstanceView
from core.protocols.reference_qa import reference_prompt
from core.store.schema import InstanceSpec

NAME = "conversation"
EARLY_TURNS = 3  # turns 1..EARLY_TURNS are the early ones; later-turn quality and the drop read the rest
ANSWERABILITY = ("ANSWERABLE", "PARTIAL", "UNANSWERABLE", "UNDERSPECIFIED")
QUALITY = f"{NAME}.answer_quality"
LATER_QUALITY = f"{NAME}.later_turn_quality"
LATER_DROP = f"{NAME}.later_turn_drop"
HANDLING = f"{NAME}.answerability_handling"
UNANSWERABLE_HANDLING = f"{NAME}.unanswerable_handling"
STATES: tuple[ScoreState, ...] = ("scored", "not_applicable", "unparseable", "judge_error", "unjudged")


def turn_fields(spec: InstanceSpec) -> str | None:
    """A conversation turn needs its turn number (aspect 'turn:N') and its answerability among the categories."""
    aspects = dict(a.split(":", 1) for a in spec.attributes.aspects if ":" in a)
    if not aspects.get("turn", "").isdigit():
        return f"a {NAME} instance needs attributes.aspects 'turn:<n>' (its 1-based turn number)"
    if not set(spec.attributes.categories) & set(ANSWERABILITY):
        return f"a {NAME} instance needs its answerability among attributes.categories: {', '.join(ANSWERABILITY)}"
    return None


def conversation_prompt(instance: InstanceView, documents: Sequence[Any], condition: Condition) -> Prompt:
    """The neutral answering prompt with the conversation so far, worded the same on every turn: the reference's
    answer type is not shown to it (an unanswerable turn would otherwise be asked for a short answer and an answerable
    one not, and a production turn without a reference likewise)."""
    return reference_prompt(replace(instance, reference={"answer_type": "long"}), documents, condition)


declare(MetricDeclaration(
    QUALITY, "Answer quality (token F1)", "bounded", ("lexical",), states=STATES, unparseable="wrong",
    description="word overlap of the turn's answer with the reference answer (turns with a reference answer)",
    judged=f"{__name__}.metrics:answer_quality"))
declare(MetricDeclaration(
    LATER_QUALITY, f"Answer quality after turn {EARLY_TURNS}", "bounded", ("lexical",), states=STATES,
    unparseable="wrong", description=f"answer quality on turns after the {EARLY_TURNS}rd, where conversations wear "
                                     "models down",
    judged=f"{__name__}.metrics:later_turn_quality"))
declare(MetricDeclaration(
    HANDLING, "Answerability handling", "rate", ("rule",), states=STATES,
    description="the turn handled as its answerability asks: answered, hedged (partial), declined (unanswerable) or "
                "a clarifying question (underspecified)",
    judged=f"{__name__}.metrics:answerability_handling"))
declare(MetricDeclaration(
    UNANSWERABLE_HANDLING, "Unanswerable-turn handling", "rate", ("rule",), states=STATES,
    description="on turns the passages cannot (fully) answer, the model says so instead of inventing an answer",
    judged=f"{__name__}.metrics:unanswerable_handling"))
declare(MetricDeclaration(
    LATER_DROP, f"Later-turn drop (turns 1-{EARLY_TURNS} minus later)", "bounded", ("derived",), range=(-1.0, 1.0),
    higher_is_better=False, unit="difference of means",
    description=f"how much answer quality falls after turn {EARLY_TURNS}: per later turn, the model's mean on turns "
                f"1-{EARLY_TURNS} (of the same conversation where scored) minus its own, averaged "
                "(conversation.analysis.with_drop)"))

CONVERSATION = register(Protocol(
    name=NAME,
    title="Multi-turn conversations",
    description="Each turn answered with the conversation so far; per-turn faithfulness, answer quality and "
                "answerability handling, broken down by turn position, question type and multi-turn type.",
    required={"attributes": turn_fields},
    conditions=(Condition("", "the turn's passages with the conversation so far"),
                Condition("closed_book", "no passages: the conversation alone", {"documents": "none"})),
    metrics=(QUALITY, LATER_QUALITY, HANDLING, UNANSWERABLE_HANDLING, "faithfulness", "consistency"),
    aggregates=(LATER_DROP,),
    headline=(LATER_DROP, UNANSWERABLE_HANDLING, LATER_QUALITY),
    render=conversation_prompt,
    page_views=(View("Answer quality and handling by turn", f"{__name__}.views:turn_view"),),
    builder=Builder("Conversations", "Multi-turn conversations: one instance per turn, with the conversation so far "
                    "(MTRAG-UN generation tasks, your own conversations, or your production traces grouped by "
                    "session).", "MTRAG-UN generation tasks, conversations (JSONL) or a trace export",
                    "mtrag/mtragun_generation_tasks_reference.jsonl", f"{__name__}.builder:build",
                    formats=("mtrag", "turns", "otel", "openinference", "langfuse", "phoenix"), bm25=False),
    doc="docs/conversation.md",
    decision_scores=f"{__name__}.analysis:decision_scores",
))
