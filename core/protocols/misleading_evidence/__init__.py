"""RAG-Stress: does misleading evidence override answers a model knew? The question and reference stay fixed; the
evidence comes clean or with exactly one assertion edited to support a designated wrong answer, under two
source-priority policies and with the edited sentence at the beginning, middle or end of the evidence text.

An instance carries its evidence as documents told apart by variant keys (core/protocols/misleading_evidence/builder.py builds
them): one clean document ({"evidence": "clean"}) and one misleading document per position ({"evidence":
"misleading", "position": "beginning" | "middle" | "end"}, role 'counterfactual'); `reference.wrong_answers` holds
the designated wrong answer. The conditions select among them with the generic condition settings.
"""

from __future__ import annotations

from core.metrics import JUDGED, MetricDeclaration, declare
from core.protocols import register
from core.protocols.base import Builder, Condition, Protocol, ProtocolPage
from core.protocols.paper import PaperTableSpec
from core.protocols.reference_qa import reference_prompt
from core.store.schema import InstanceSpec

NAME = "misleading_evidence"
POLICIES: tuple[str, ...] = ("documents", "prior_knowledge")
POSITIONS: tuple[str, ...] = ("beginning", "middle", "end")
CLOSED_BOOK = "closed_book"
CLEAN = "clean"
EVIDENCE_KEY = "evidence"
POLICY_LABELS = {"documents": "prioritise the documents", "prior_knowledge": "may rely on prior knowledge"}


def misleading_condition(policy: str, position: str) -> str:
    """The condition name of misleading evidence under `policy` with the edited sentence at `position`."""
    return f"misleading_{policy}_{position}"


MISLEADING_CONDITIONS: dict[str, tuple[str, str]] = {
    misleading_condition(policy, position): (policy, position) for policy in POLICIES for position in POSITIONS}


def _evidence_errors(spec: InstanceSpec) -> str | None:
    kinds = [(d.variant.get(EVIDENCE_KEY), d.variant.get("position")) for d in spec.documents]
    wanted = [(CLEAN, None), *(("misleading", p) for p in POSITIONS)]
    missing = [f"{k}{' ' + p if p else ''}" for k, p in wanted if sum(x == (k, p) for x in kinds) != 1]
    return f"a misleading_evidence instance needs exactly one evidence document of each kind; missing or repeated: " \
           f"{', '.join(missing)}" if missing else None


def _reference_errors(spec: InstanceSpec) -> str | None:
    if spec.reference is None or spec.reference.answer_type == "unanswerable":
        return "a misleading_evidence instance needs an answered reference"
    return None if spec.reference.wrong_answers else "a misleading_evidence instance needs the designated wrong answer in " \
                                                     "reference.wrong_answers"


def _conditions() -> tuple[Condition, ...]:
    clean = {"include": {EVIDENCE_KEY: CLEAN}}
    misleading = [Condition(name, f"misleading evidence, told to {POLICY_LABELS[policy]}, edited sentence at the "
                                  f"{position} of the evidence",
                            {"include": {EVIDENCE_KEY: "misleading", "position": position}, "policy": policy})
                  for name, (policy, position) in MISLEADING_CONDITIONS.items()]
    return (
        Condition("", "clean evidence (the same prompt as 'clean')", clean),
        Condition(CLOSED_BOOK, "no evidence: the question alone", {"documents": "none"}),
        Condition(CLEAN, "the clean evidence, no source-priority line", clean),
        *misleading,
    )


for _id, _label, _better, _meaning in (
        ("misleading_rate", "Misleading rate (on closed-book-correct questions)", False,
         "a question the model knows without evidence, answered with the planted wrong answer"),
        ("any_wrong_rate", "Any wrong (on closed-book-correct questions)", False,
         "a question the model knows without evidence, answered wrongly in any way"),
        ("rag_stress_correct", "Accuracy (MCQ letter or exact-match containment)", True,
         "the right option letter or an accepted answer given")):
    declare(MetricDeclaration(_id, _label, "rate", ("lexical", *JUDGED), higher_is_better=_better,
                              states=("scored", "not_applicable", "unparseable", "judge_error", "unjudged"),
                              description=_meaning))

RAG_STRESS = register(Protocol(
    name=NAME,
    title="RAG-Stress (misleading evidence)",
    description="Closed book, clean evidence, and evidence with one assertion edited to support a designated wrong "
                "answer (2 source-priority policies x 3 positions of the edited sentence); misleading rate on each "
                "model's closed-book-correct questions.",
    required={"reference": _reference_errors, "documents": _evidence_errors},
    render=reference_prompt,
    conditions=_conditions(),
    metrics=("exact_match", "strict_exact_match", "token_f1", "mcq_accuracy", "wrong_answer"),
    aggregates=("misleading_rate", "any_wrong_rate"),
    headline=("misleading_rate",),
    decision_scores=f"{__name__}.analysis:decision_scores",
    page=ProtocolPage("pages/misleading_evidence.py", "Misleading evidence", ":material/report:"),
    builder=Builder(
        "Misleading evidence",
        "RAG-Stress misleading evidence: one safe edit of the gold evidence towards a designated wrong answer.",
        "Source file (HotpotQA or MedQA layout)", "hotpotqa-dev-distractor/hotpotqa_dev_distractor_500.jsonl",
        f"{__name__}.builder_app:build", formats=("hotpotqa", "medqa"), bm25=False,
        estimate=f"{__name__}.builder_app:estimate"),
    doc="docs/misleading_evidence.md",
    paper_tables=(PaperTableSpec("1", "Clean accuracy, misleading rate by policy and position, and the policy gap, per "
                                      "dataset and model", "core.protocols.misleading_evidence.paper:table_1"),),
))
