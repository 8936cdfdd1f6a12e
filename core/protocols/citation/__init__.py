"""Citations, ALCE-style: the generator answers from numbered documents and cites them as [1], [2] after each
sentence. Per response, citation recall (the share of sentences whose cited documents together support them) and
citation precision (the share of citations needed: a cited document that neither supports the sentence alone nor is
missed when it is left out is an over-citation), computed sentence by sentence as ALCE's evaluator does
(princeton-nlp/ALCE eval.py `compute_autoais`, at most 3 citations per sentence). Support is the scoring judge's: an
LLM judge decides it; the offline (heuristic) judge decides only what the format decides (a sentence without a
citation, or citing a document that is not there, is unsupported) and says where it cannot decide.
docs/citation.md says how it differs from ALCE."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.metrics import MetricDeclaration, ScoreState, declare
from core.protocols import register
from core.protocols.base import Builder, Condition, Prompt, Protocol, View
from core.protocols.messages import ChatMessage
from core.protocols.prompting import InstanceView, reference_messages
from core.store.schema import InstanceSpec

NAME = "citation"
RECALL = f"{NAME}.recall"
PRECISION = f"{NAME}.precision"
AT_MOST_CITATIONS = 3  # ALCE's --at_most_citations default
ANSWER_FORM = "long"  # answers in cited sentences; an unanswerable question is asked the same way
STATES: tuple[ScoreState, ...] = ("scored", "not_applicable", "unparseable", "judge_error", "unjudged")
CITE_LINE = ("Write the answer in full sentences. After each sentence, cite the documents that support it by number, "
             "in square brackets, for example [1] or [1][3]; cite only documents that support the sentence.")


def needs_documents(spec: InstanceSpec) -> str | None:
    """A citation instance needs documents to cite."""
    return None if spec.documents else f"a {NAME} instance needs documents to cite"


def citation_prompt(instance: InstanceView, documents: Sequence[Any], condition: Condition) -> Prompt:
    """The neutral reference-QA prompt with the citing instruction added to its system message; prompt_meta
    `citation_docs` lists the documents' ids in the order the prompt numbers them."""
    messages = reference_messages(instance, documents, condition.settings.get("policy"), ANSWER_FORM)
    system = ChatMessage(role="system", content=f"{messages[0].content} {CITE_LINE}")
    return [system, *messages[1:]], {"citation_docs": [d.doc_uid for d in documents]}


declare(MetricDeclaration(
    RECALL, "Citation recall (ALCE)", "bounded", ("rule", "llm"), states=STATES, unparseable="excluded",
    description="share of the answer's sentences fully supported by the documents they cite (no citation: "
                "unsupported)", judged=f"{__name__}.metrics:citation_recall"))
declare(MetricDeclaration(
    PRECISION, "Citation precision (ALCE)", "bounded", ("rule", "llm"), states=STATES, unparseable="excluded",
    description="share of the answer's citations that are needed: each supports its sentence, alone or as the "
                "piece the others miss", judged=f"{__name__}.metrics:citation_precision"))

CITATION = register(Protocol(
    name=NAME,
    title="Citations (ALCE-style)",
    description="Answers cite numbered documents after each sentence; citation recall and precision per sentence, "
                "support decided by the judge.",
    required={"documents": needs_documents},
    conditions=(Condition("", "the documents as stored, numbered"),
                Condition("shuffled", "documents shuffled with the run's seed", {"order": "shuffle"})),
    metrics=(RECALL, PRECISION, "exact_match"),
    headline=(RECALL, PRECISION),
    render=citation_prompt,
    page_views=(View("Citation recall and precision", f"{__name__}.views:citation_view"),),
    builder=Builder("Citations", "Citations: questions with their documents to cite (ALCE's data files, or your own "
                    "records).", "ALCE data file (JSON) or records (JSONL)", "alce/asqa_eval_gtr_top100.json",
                    f"{__name__}.builder:build", formats=("alce", "records"), bm25=False),
    doc="docs/citation.md",
))
