"""RAGStress: MCQ answering over one knowledge base holding a clean and 12 corrupted variants of every item; the 15
conditions are metadata filters over that one index (no retrieval, clean only, unfiltered mixed, type x severity).

The retrieval itself happens when the benchmark is built (core.protocols.kb_corruption.builder): each instance stores the
top-k documents every filter returned, tagged `variant.retrieved_for = <condition>`, and each condition here keeps
exactly those. Scoring is mcq_accuracy (core.scoring.reference: the first-letter rule shared with every MCQ
protocol) under the neutral reference answering prompt."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from core.metrics import MetricDeclaration, declare
from core.protocols import register
from core.protocols.base import Builder, Condition, Prompt, Protocol, ProtocolPage
from core.protocols.paper import PaperTableSpec
from core.protocols.prompting import InstanceView, reference_messages
from core.store.schema import InstanceSpec

NAME = "kb_corruption"
TYPES: tuple[str, ...] = ("factual", "numeric", "relevance", "contradiction")
TYPE_LABELS = {"factual": "factual corruption", "numeric": "numeric typo", "relevance": "relevance poisoning",
               "contradiction": "contradiction injection"}
SEMANTIC_TYPES = ("factual", "contradiction")  # semantic-fidelity corruptions; the others reduce signal utility
SEVERITIES: tuple[str, ...] = ("subtle", "moderate", "obvious")
CLEAN, MIXED, NO_RETRIEVAL = "clean", "mixed", "no_retrieval"
NUMERIC_ANSWER = "numeric_answer"  # attributes.question_type of items whose entry holds a number (numeric typos apply)
TOP_K = 5
CORRUPTED_CONDITIONS: tuple[str, ...] = tuple(f"{t}_{s}" for t in TYPES for s in SEVERITIES)
CONDITION_NAMES: tuple[str, ...] = (NO_RETRIEVAL, CLEAN, MIXED, *CORRUPTED_CONDITIONS)
RETRIEVAL_FILTERS: dict[str, dict[str, Any]] = {
    CLEAN: {"corruption_type": "clean"},
    MIXED: {"applicable": True},
    **{f"{t}_{s}": {"corruption_type": t, "severity": s, "applicable": True} for t in TYPES for s in SEVERITIES},
}


def condition_parts(name: str) -> tuple[str | None, str | None]:
    """(corruption type, severity) of a condition name; (None, None) for no_retrieval, clean and mixed."""
    kind, _, severity = canonical(name).rpartition("_")
    return (kind, severity) if kind in TYPES and severity in SEVERITIES else (None, None)


def canonical(name: str) -> str:
    """The condition a name stands for: the protocol default '' is clean-only retrieval."""
    return name or CLEAN


def kb_corruption_prompt(instance: InstanceView, documents: Sequence[Any], condition: Condition) -> Prompt:
    """The neutral reference answering prompt (option letter only, no source-priority line); the filter in the meta."""
    name = canonical(condition.name)
    return reference_messages(instance, documents), {"ragstress_filter": RETRIEVAL_FILTERS.get(name)}


def needs_mcq(spec: InstanceSpec) -> str | None:
    """A RAGStress instance needs an MCQ reference (choices and the answer key)."""
    ref = spec.reference
    return None if ref is not None and ref.answer_type == "mcq" else "a kb_corruption instance needs an mcq reference"


def condition_profile(records: Iterable[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per retrieval condition, from each instance's record of what the filters returned (metadata.ragstress.retrieval):
    zero-document queries and the no-retrieval rate, how often the item's own entry was retrieved and ranked first,
    the corrupted share of the retrieved documents and the mean number returned."""
    rows: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        for name, got in record.items():
            rows.setdefault(name, []).append(got)
    out = {}
    for name in (n for n in CONDITION_NAMES if n in rows):
        r, n = rows[name], len(rows[name])
        returned, zero = sum(x["returned"] for x in r), sum(x["returned"] == 0 for x in r)
        out[name] = {"queries": n, "zero_document_queries": zero, "no_retrieval_rate": round(zero / n, 4),
                     "own_entry_retrieved": round(sum(x["own_rank"] is not None for x in r) / n, 4),
                     "own_entry_first": round(sum(x["own_rank"] == 0 for x in r) / n, 4),
                     "corrupted_share": round(sum(x["corrupted"] for x in r) / returned, 4) if returned else None,
                     "mean_returned": round(returned / n, 3)}
    return out


def _retrieved(name: str, description: str) -> Condition:
    only = (NUMERIC_ANSWER,) if condition_parts(name)[0] == "numeric" else ()
    return Condition(name, description, {"include": {"retrieved_for": canonical(name)}}, question_types=only)


@dataclass(frozen=True)
class RagStressProtocol(Protocol):
    """The protocol whose bundles are the stored per-condition retrieval lists: prompt_meta names the documents kept
    (doc_order) and counts, rather than lists, the other conditions' documents it drops."""

    def bundle(self, documents: Sequence[Any], condition: str | Condition, order: str = "stored",
               seed: int = 0) -> tuple[list[Any], dict[str, Any]]:
        kept, meta = super().bundle(documents, condition, order, seed)
        dropped = meta.pop("condition_dropped", [])
        return kept, {**meta, "other_conditions_documents": len(dropped)}


CORRUPTION_DELTA = "corruption_delta"
declare(MetricDeclaration(
    CORRUPTION_DELTA, "Corruption Δ (corrupted − clean accuracy)", "bounded", ("lexical",),
    range=(-1.0, 1.0), unit="difference", states=("scored", "not_applicable", "unparseable", "judge_error", "unjudged"),
    description="per question, the answer's correctness with corrupted documents minus with clean ones (0: unaffected; "
                "−100 points: every question the model got right clean is lost)"))

RAGSTRESS = register(RagStressProtocol(
    name=NAME,
    title="RAGStress (knowledge-base corruption)",
    description="MMLU questions answered from one knowledge base with clean and corrupted variants of every item "
                "(4 corruption types x 3 severities); conditions are metadata filters over the one index, top-5.",
    required={"reference": needs_mcq},
    render=kb_corruption_prompt,
    conditions=(
        _retrieved("", "the default: clean-only retrieval (the same documents as 'clean')"),
        Condition(NO_RETRIEVAL, "no documents: the question alone", {"documents": "none"}),
        _retrieved(CLEAN, "top-5 over the clean variants only"),
        _retrieved(MIXED, "top-5 over the whole knowledge base unfiltered: up to 12 corrupted variants per clean one "
                          "(not-applicable placeholders excluded)"),
        *(_retrieved(f"{t}_{s}", f"top-5 over the {TYPE_LABELS[t]} variants of severity {s} only"
                     + (" (items whose entry holds a number)" if t == "numeric" else ""))
          for t in TYPES for s in SEVERITIES),
    ),
    metrics=("mcq_accuracy",),
    aggregates=(CORRUPTION_DELTA,),
    headline=("mcq_accuracy", CORRUPTION_DELTA),
    decision_scores=f"{__name__}.analysis:decision_scores",
    page=ProtocolPage("pages/stress_tests.py", "Stress tests", ":material/storm:"),
    builder=Builder(
        "RAG-Stress (KB corruption)",
        "RAG-Stress knowledge-base corruption: 13 entries per MMLU question (clean, typo, off-topic, distractors...), "
        "retrieved under every condition.", "MMLU questions (selection JSONL or subject CSV)",
        "mmlu/ragstress_eval700_stratified_seed42.jsonl", f"{__name__}.builder_app:build"),
    doc="docs/kb_corruption.md",
    paper_tables=tuple(PaperTableSpec(key, title, f"core.protocols.kb_corruption.paper:table_{key}") for key, title in (
        ("1", "Accuracy by model and the 15 retrieval conditions"),
        ("delta", "Corruption impact Δ by model, type and severity"),
        ("gamma", "Resilience gap Γ by model pair and corruption type"),
        ("mixed", "Mixed knowledge base vs worst-case condition"),
        ("severity", "Severity curves by model and type"))),
))
