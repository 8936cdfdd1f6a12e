"""Benchmark interchange format: one instance per JSONL line, constraints and documents inline."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from core.plugins import DEFAULT_PROTOCOL

Mode = Literal["noisy", "gap", "conflict"]
Origin = Literal["natural", "augmented"]
VerificationStatus = Literal["unverified", "accepted", "rejected", "needs_edit"]
Category = Literal["persona", "output", "knowledge_protocol"]
SubDimension = Literal[
    "role",
    "audience",
    "format",
    "content",
    "negative",
    "ordering",
    "style",
    "conflict_handling",
    "knowledge_gap",
    "uncertainty",
    "source_filtering",
    "citation",
    "evidence_chaining",
]
JudgeMethod = Literal["rule", "llm"]
Precondition = Literal["gap", "conflict"]
ContentType = Literal["text", "html", "markdown_table", "csv"]
DocumentRole = Literal["supporting", "noise", "conflicting", "partial", "counterfactual"]
AnswerType = Literal["short", "long", "mcq", "multi", "boolean", "unanswerable"]

ID_MAX_CHARS = 256  # ids are indexed: PostgreSQL's btree refuses long keys; SQLite would take anything
MAX_NESTING = 100
INT64 = 2**63 - 1
VERSION_MAX = 2**31 - 1

MODES: tuple[str, ...] = ("noisy", "gap", "conflict")
# Protocol ids renamed (issue 23: two stress protocols one character apart): a file or a stored row naming the old id
# is read as the new one (migration 0020 renames the stored rows; core.protocols resolves the old ids too).
RENAMED_PROTOCOLS: dict[str, str] = {"ragstress": "kb_corruption", "rag_stress": "misleading_evidence"}
NO_MODE = "none"  # the mode that counts name for an instance without one (protocols other than EnterpriseRAG)
CATEGORIES: tuple[str, ...] = ("persona", "output", "knowledge_protocol")
SUB_DIMENSIONS_BY_CATEGORY: dict[str, tuple[str, ...]] = {
    "persona": ("role", "audience"),
    "output": ("format", "content", "negative", "ordering", "style"),
    "knowledge_protocol": (
        "conflict_handling",
        "knowledge_gap",
        "uncertainty",
        "source_filtering",
        "citation",
        "evidence_chaining",
    ),
}
DOCUMENT_ROLES: tuple[str, ...] = ("supporting", "noise", "conflicting", "partial", "counterfactual")
ANSWER_TYPES: tuple[str, ...] = ("short", "long", "mcq", "multi", "boolean", "unanswerable")


class ConstraintSpec(BaseModel):
    """One atomic instruction of an instance's fused instruction set."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=ID_MAX_CHARS, description="Constraint id, unique within the instance (e.g. 'c3').")
    text: str = Field(min_length=1, description="The instruction text shown to the model.")
    category: Category
    sub_dimension: SubDimension
    judge_method: JudgeMethod
    checker_id: str | None = Field(default=None, max_length=ID_MAX_CHARS, description="Rule checker id, e.g. 'enterprise:no_emoji'.")
    checker_kwargs: dict[str, Any] = Field(default_factory=dict)
    criterion: str | None = Field(default=None, description="What an LLM judge checks, for llm constraints.")
    precondition: Precondition | None = Field(
        default=None, description="Only applies when the bundle has this failure mode; satisfied otherwise."
    )

    @model_validator(mode="after")
    def _method_fields(self) -> ConstraintSpec:
        if self.sub_dimension not in SUB_DIMENSIONS_BY_CATEGORY[self.category]:
            raise ValueError(f"sub_dimension {self.sub_dimension!r} does not belong to category {self.category!r}")
        if self.judge_method == "rule" and not self.checker_id:
            raise ValueError("judge_method 'rule' needs a checker_id")
        if self.judge_method == "llm" and not (self.criterion and self.criterion.strip()):
            raise ValueError("judge_method 'llm' needs a criterion")
        return self


class DocumentSpec(BaseModel):
    """One document of an instance's bundle, with its role in that bundle."""

    model_config = ConfigDict(extra="forbid")

    doc_id: str = Field(min_length=1, max_length=ID_MAX_CHARS,
                        description="Stable document id; the same document may serve several instances.")
    title: str = Field(default="", description="Optional: many public benchmarks have untitled passages.")
    text: str = Field(min_length=1)
    source: str = Field(default="", description="Where the document comes from (provenance).")
    content_type: ContentType = "text"
    role: DocumentRole
    conflict_group: str | None = None
    conflict_summary: str | None = None
    variant: dict[str, Any] = Field(
        default_factory=dict,
        description="Per-document variant metadata, e.g. {'kind': 'corrupted', 'type': 'numeric_typo', 'severity': "
        "'subtle'} or {'kind': 'anti_reference', 'answer': '...'}.",
    )

    @model_validator(mode="after")
    def _conflict_fields(self) -> DocumentSpec:
        if self.role == "conflicting" and not self.conflict_group:
            raise ValueError("a conflicting document needs a conflict_group")
        return self


class AnswerSpec(BaseModel):
    """One acceptable answer: its text, accepted aliases, and the parts it is made of (all needed, in any order)."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1)
    aliases: list[str] = Field(default_factory=list)
    parts: list[str] = Field(default_factory=list, description="Parts of a composite answer (DomainRAG-style).")


class ReferenceSpec(BaseModel):
    """What a correct answer is: gold answers (any one, or all for 'multi'), known wrong answers, MCQ choices."""

    model_config = ConfigDict(extra="forbid")

    answer_type: AnswerType = "short"
    answers: list[AnswerSpec] = Field(default_factory=list)
    wrong_answers: list[str] = Field(default_factory=list, description="Known wrong or misleading answers.")
    choices: dict[str, str] = Field(default_factory=dict, description="MCQ options by letter: {'A': '...', ...}.")
    answer_key: str | None = Field(default=None, description="The correct MCQ letter.")
    reasoning: str | None = Field(default=None, description="Reference reasoning, for judges.")

    @model_validator(mode="after")
    def _consistent(self) -> ReferenceSpec:
        if self.answer_type == "mcq":
            if not self.choices or self.answer_key not in self.choices:
                raise ValueError("an mcq reference needs choices and an answer_key among them")
        elif self.answer_type != "unanswerable" and not self.answers:
            raise ValueError(f"a {self.answer_type!r} reference needs at least one answer")
        return self


class Turn(BaseModel):
    """One earlier turn of a conversation."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant"]
    content: str


class AttributesSpec(BaseModel):
    """Typed per-instance attributes the protocols slice by."""

    model_config = ConfigDict(extra="forbid")

    question_type: str | None = None
    categories: list[str] = Field(default_factory=list)
    aspects: list[str] = Field(default_factory=list)
    date: str | None = Field(default=None, description="The date the question is asked at (time-sensitive QA).")
    history: list[Turn] = Field(default_factory=list, description="Conversation so far (conversational QA).")


class InstanceSpec(BaseModel):
    """A benchmark instance: a query, optional instructions and documents, an optional reference, under a protocol.

    Which fields a protocol requires is declared by the protocol (core.protocols): EnterpriseRAG needs a mode,
    constraints and documents; reference-answer protocols need a reference.
    """

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=ID_MAX_CHARS)
    domain: str = Field(min_length=1, max_length=ID_MAX_CHARS)
    query: str = Field(min_length=1)
    mode: Mode | None = None
    origin: Origin = "natural"
    protocol: str = Field(default=DEFAULT_PROTOCOL, max_length=ID_MAX_CHARS)
    status: VerificationStatus = "unverified"
    version: int = Field(default=1, ge=1, le=VERSION_MAX)
    language: str | None = Field(default=None, max_length=ID_MAX_CHARS,
                                 description="BCP-47 tag of the query; detected on import when absent.")
    constraints: list[ConstraintSpec] = Field(default_factory=list)
    documents: list[DocumentSpec] = Field(default_factory=list)
    reference: ReferenceSpec | None = None
    attributes: AttributesSpec = Field(default_factory=AttributesSpec)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("protocol")
    @classmethod
    def _current_protocol_id(cls, value: str) -> str:
        return RENAMED_PROTOCOLS.get(value, value)

    @model_validator(mode="after")
    def _bundle_consistency(self) -> InstanceSpec:
        ids = [c.id for c in self.constraints]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate constraint ids: {', '.join(dupes)}")
        roles = [d.role for d in self.documents]
        if self.mode == "gap" and "supporting" in roles:
            raise ValueError("a gap instance must not contain a supporting document")
        if self.mode == "conflict":
            if "conflicting" not in roles:
                raise ValueError("a conflict instance needs a conflicting document")
            groups = {d.conflict_group for d in self.documents if d.role == "conflicting"}
            summaries = [d.conflict_summary for d in self.documents if d.role == "conflicting"]
            if not all(s and s.strip() for s in summaries):
                raise ValueError(f"conflicting documents need a conflict_summary (groups: {sorted(map(str, groups))})")
        return self


class DomainSpec(BaseModel):
    """A domain of the benchmark; domains are data, not code."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=ID_MAX_CHARS)
    description: str = ""


class NonFinite(float):
    """A NaN / Infinity / overflowing number read from JSON, with why it cannot be stored (its literal named)."""

    problem: str

    def __new__(cls, value: float, problem: str) -> NonFinite:
        number = super().__new__(cls, value)
        number.problem = problem
        return number


def storable_problems(value: Any, path: str = "") -> list[tuple[str, str]]:
    """Where a parsed JSON value holds what not every database backend can store: nesting deeper than MAX_NESTING,
    NUL characters or unpaired surrogates in text (keys included), NaN / Infinity, integers beyond 64 bits.
    (field path, message) pairs; walked without recursion, so any depth is safe."""
    problems: list[tuple[str, str]] = []
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        if depth > MAX_NESTING:
            problems.append((where, f"nested deeper than {MAX_NESTING} levels"))
            continue
        if isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and (problem := text_problem(key)):
                    problems.append((where, f"key {key[:40]!r}: {problem}"))
                stack.append((child, f"{where}.{key}" if where else str(key), depth + 1))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{i}]", depth + 1) for i, child in enumerate(item))
        elif isinstance(item, str):
            if problem := text_problem(item):
                problems.append((where, problem))
        elif isinstance(item, float) and not math.isfinite(item):
            problems.append((where, item.problem if isinstance(item, NonFinite) else f"{item} is not a finite number"))
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) > INT64:
            problems.append((where, "integer does not fit in 64 bits"))
    return sorted(problems)


def text_problem(text: str) -> str | None:
    """Why a string cannot be stored as text everywhere (NUL character, unpaired surrogate), or None."""
    if "\x00" in text:
        return "contains a NUL character (\\u0000), which databases cannot store in text"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"contains an unpaired surrogate (\\u{ord(text[exc.start]):04x}), which is not valid Unicode text"
    return None
