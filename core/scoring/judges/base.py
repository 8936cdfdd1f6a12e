"""Typed judge inputs and outputs, the Judge protocol, and the arithmetic shared by every judge."""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from core.generation.providers.base import ChatMessage, Completion
from core.store.schema import ReferenceSpec

Status = Literal["ok", "error", "not_applicable", "unparseable"]
ConstraintMode = Literal["single", "batched"]
CORE_WEIGHT = 0.7
NO_CLAIMS_REASON = "no factual claims (refusal)"
UNJUDGED_REASON = "heuristic judge cannot assess this criterion"


class DocumentView(BaseModel):
    """A document as a judge sees it."""

    position: int
    doc_uid: str
    title: str
    text: str
    source: str = ""
    role: str = "supporting"
    conflict_group: str | None = None
    conflict_summary: str | None = None


class ConstraintView(BaseModel):
    """One atomic constraint to judge."""

    id: int | None = None
    cid: str
    text: str
    category: str = "output"
    sub_dimension: str = "content"
    judge_method: str = "llm"
    checker_id: str | None = None
    checker_kwargs: dict[str, Any] = Field(default_factory=dict)
    criterion: str | None = None
    precondition: str | None = None


class JudgeInput(BaseModel):
    """Everything a judge needs about one response: query, mode, documents, the response text (and, for reference
    protocols, the reference, the instance's language, id and attributes, and the roles of the documents its prompt
    gave)."""

    query: str
    mode: str
    documents: list[DocumentView]
    response: str
    instance_id: int | None = None
    reference: ReferenceSpec | None = None
    language: str | None = None
    uid: str = ""
    attributes: dict[str, Any] = Field(default_factory=dict)
    doc_roles: list[str] = Field(default_factory=list)
    prompt_meta: dict[str, Any] = Field(default_factory=dict)  # how the response's prompt was built (its setting)


class Outcome(BaseModel):
    """What any judgement carries: status, pass/fail, reason, method, drill-down details, call accounting."""

    status: Status = "ok"
    passed: bool | None = None
    reason: str = ""
    method: str = ""
    details: dict[str, Any] = Field(default_factory=dict)
    calls: int = 0
    cost_usd: float = 0.0


class ConstraintOutcome(Outcome):
    """A judge's verdict on one constraint: yes/no with a reason, or an error / unjudged status."""

    cid: str


class MetricOutcome(Outcome):
    """A metric value for one response with the judge's reason and drill-down details."""

    value: float | None = None


class ContextClaimsOutcome(BaseModel):
    """Core and supplementary claims extracted from query + documents (once per instance and judge)."""

    status: Literal["ok", "error"] = "ok"
    core: list[str] = Field(default_factory=list)
    supplementary: list[str] = Field(default_factory=list)
    error: str | None = None
    calls: int = 0
    cost_usd: float = 0.0


class CompletionClient(Protocol):
    """The slice of LLMClient a judge uses."""

    async def complete(self, messages: list[ChatMessage], *, purpose: str) -> Completion:
        """Send messages, return the completion (or raise ProviderError)."""
        ...


class Judge(Protocol):
    """What every judge implements; `name` is recorded on each verdict ('heuristic', 'llm:<model>')."""

    name: str

    async def judge_constraints(
        self, item: JudgeInput, constraints: list[ConstraintView], mode: ConstraintMode
    ) -> list[ConstraintOutcome]:
        """One outcome per constraint, in the order given."""
        ...

    async def context_claims(self, item: JudgeInput) -> ContextClaimsOutcome:
        """Core and supplementary claims of the documents for the query."""
        ...

    async def faithfulness(self, item: JudgeInput) -> MetricOutcome:
        """Supported response claims over all response claims."""
        ...

    async def coverage(self, item: JudgeInput, claims: ContextClaimsOutcome) -> MetricOutcome:
        """Weighted share of context claims the response conveys."""
        ...

    async def rejection(self, item: JudgeInput) -> MetricOutcome:
        """1 if the response validly refuses an unanswerable query."""
        ...

    async def conflict_recognition(self, item: JudgeInput) -> MetricOutcome:
        """1 if the response names the conflict and what each side says."""
        ...

    async def refusal(self, item: JudgeInput) -> MetricOutcome:
        """1 if the response abstains from answering."""
        ...

    async def correctness(self, item: JudgeInput) -> MetricOutcome:
        """1 if the response gives the reference answer (item.reference), else 0."""
        ...

    async def consistency(self, item: JudgeInput) -> MetricOutcome:
        """How consistent a long-form response is with the reference answer, in [0, 1]."""
        ...


def precondition_triggered(precondition: str | None, mode: str) -> bool:
    """True when a constraint applies under `mode`: unconditional, or its precondition equals the mode."""
    return precondition is None or precondition == mode


def coverage_score(core_covered: int, n_core: int, supp_covered: int, n_supp: int) -> float | None:
    """0.7 x core share + 0.3 x supplementary share; all weight to core without supplementary; None if no claims."""
    if n_core and n_supp:
        return CORE_WEIGHT * core_covered / n_core + (1 - CORE_WEIGHT) * supp_covered / n_supp
    if n_core:
        return core_covered / n_core
    if n_supp:
        return supp_covered / n_supp
    return None


def coverage_outcome(core: list[dict[str, Any]], supplementary: list[dict[str, Any]], method: str) -> MetricOutcome:
    """A coverage outcome from per-claim {'claim','covered','reason'} rows (not_applicable when no claims)."""
    value = coverage_score(
        sum(bool(c["covered"]) for c in core), len(core), sum(bool(c["covered"]) for c in supplementary), len(supplementary)
    )
    details = {"core": core, "supplementary": supplementary}
    if value is None:
        return MetricOutcome(status="not_applicable", reason="no context claims to cover", method=method, details=details)
    covered = sum(bool(c["covered"]) for c in core + supplementary)
    reason = f"{covered}/{len(core) + len(supplementary)} context claims covered ({len(core)} core, {len(supplementary)} supplementary)"
    return MetricOutcome(value=value, reason=reason, method=method, details=details)


def faithfulness_outcome(claims: list[dict[str, Any]], method: str) -> MetricOutcome:
    """A faithfulness outcome from per-claim {'claim','supported','reason'} rows (not_applicable when none)."""
    if not claims:
        return MetricOutcome(status="not_applicable", reason=NO_CLAIMS_REASON, method=method, details={"claims": []})
    supported = sum(bool(c["supported"]) for c in claims)
    return MetricOutcome(
        value=supported / len(claims),
        reason=f"{supported}/{len(claims)} response claims supported by the documents",
        method=method,
        details={"claims": claims},
    )


def format_documents(documents: list[DocumentView], limit: int = 6000) -> str:
    """Documents numbered [1]..[n] with title, as shown to a judge (each cut to `limit` characters)."""
    return "\n\n".join(f"[{i}] {d.title}\n{d.text[:limit]}" for i, d in enumerate(documents, start=1)) or "(no documents)"
