"""Typed shapes of the stored labels: one pydantic model per annotation kind and target, and of a JSONL label line.

The models check structure only (types, allowed values, no unknown fields, text that can be stored and shown); the
rules that need the target (which constraints an instance has, its mode) live with the write paths in
core/review/gold.py (validate_gold_payload) and core/review/verification.py (check_verification).
"""

from __future__ import annotations

import unicodedata
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, ValidationError

from core.store.schema import DocumentRole, VerificationStatus

Decision = Literal["accept", "reject", "needs_edit"]
Kind = Literal["verification", "gold_label", "adjudication", "retraction"]
TargetType = Literal["instance", "response"]
DECISIONS: tuple[str, ...] = get_args(Decision)
KINDS: tuple[str, ...] = get_args(Kind)
MAX_ID = 2**63 - 1  # the largest integer SQLite and PostgreSQL store in an id column


def _storable(text: str) -> str:
    """Text without lone surrogates (they cannot be encoded for the database or the browser)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode (no lone surrogates)") from None
    return text


def _author(text: str) -> str:
    name = _storable(text).strip()
    if not name:
        raise ValueError("must be a non-empty name")
    if any(unicodedata.category(ch).startswith("C") for ch in name):
        raise ValueError("must not contain control or format characters")
    return name


def _binary(value: Any) -> int:
    if isinstance(value, bool) or (type(value) is int and value in (0, 1)):
        return int(value)
    raise ValueError("must be 0/1 or true/false")


Text = Annotated[str, AfterValidator(_storable)]
Author = Annotated[str, AfterValidator(_author)]
Binary = Annotated[int, BeforeValidator(_binary)]
Id = Annotated[int, Field(ge=1, le=MAX_ID)]
# a protocol's expert label kind (core.protocols.base.LabelKind) in a gold label: unit number "1".. -> a scale value
UnitNumber = Annotated[str, StringConstraints(pattern=r"^[1-9][0-9]{0,5}$")]
ScaleValue = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,39}$")]
UnitLabels = dict[UnitNumber, ScaleValue]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class GoldPayload(_Strict):
    """A gold label or a response adjudication: each constraint yes/no, refusal (gap), conflict recognition, note;
    any further field is one of a protocol's expert label kinds, a value per unit of the answer (its shape checked
    here; which kinds a response takes, their scales and unit counts, by the write path, core.review.gold)."""

    model_config = ConfigDict(extra="allow", strict=True)
    __pydantic_extra__: dict[str, UnitLabels] = Field(init=False)

    constraints: dict[Text, Binary]
    valid_refusal: Binary | None = None
    conflict_recognized: Binary | None = None
    faithful: Binary | None = None  # production items (production_rag): the answer is supported by its documents
    note: Text = ""


class VerificationPayload(_Strict):
    """An expert's verification decision on one instance version."""

    instance_uid: Text
    instance_version: Id
    consistency: Literal["consistent", "inconsistent"]
    clashing_constraints: list[Text] = []
    consistency_note: Text = ""
    context_valid: bool
    context_note: Text = ""
    role_corrections: dict[Text, DocumentRole] = {}
    constraint_edits: dict[Text, Text] = {}
    decision: Decision
    resulting_status: VerificationStatus
    new_instance_id: Id | None = None
    edit_conflict: bool = False


class InstanceAdjudicationPayload(_Strict):
    """An admin's final decision on a verification disagreement."""

    instance_uid: Text
    instance_version: Id
    decision: Decision
    note: Text = ""
    expert_decisions: dict[Text, Decision]
    resulting_status: VerificationStatus


class RetractionPayload(_Strict):
    """An expert's undo of one of their own labels: the retracted label's client token (labels stay append-only)."""

    retracts: Text
    retracted_kind: Literal["verification", "gold_label"]
    note: Text = ""


PAYLOADS: dict[tuple[str, str], type[_Strict]] = {
    ("verification", "instance"): VerificationPayload,
    ("gold_label", "response"): GoldPayload,
    ("adjudication", "response"): GoldPayload,
    ("adjudication", "instance"): InstanceAdjudicationPayload,
    ("retraction", "instance"): RetractionPayload,
    ("retraction", "response"): RetractionPayload,
}


class TargetRef(_Strict):
    """What the target is, independent of database ids: an instance version, or a run's response of a model."""

    instance_uid: Text | None = None
    instance_version: Id = 1
    run_id: Id | None = None
    model: Text | None = None


class LabelLine(_Strict):
    """One line of a labels JSONL file (what `gauntlet labels export` writes)."""

    kind: Kind
    target_type: TargetType
    target_id: Id | None = None
    target_ref: TargetRef = TargetRef()
    author: Author
    payload: dict[Text, Any]
    guidelines_version: Text = ""
    client_token: Text | None = None
    created_at: Text | None = None


def printable(text: str) -> str:
    """`text` with unprintable characters (controls, separators, lone surrogates) as \\x / \\u escapes."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape", "backslashreplace").decode("ascii")
                   for ch in text)


def problems(error: ValidationError, prefix: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """(dotted field path, message) per failing field of a validation error, first message per field."""
    out: dict[str, str] = {}
    for item in error.errors(include_url=False):
        loc = [str(p) for p in (*prefix, *item["loc"]) if p != "[key]"]
        message = item["msg"].removeprefix("Value error, ")
        out.setdefault(printable(".".join(loc)) or "(line)", message)
    return list(out.items())


def payload_problems(kind: str, target_type: str, payload: Any) -> list[tuple[str, str]]:
    """What is wrong with the shape of a stored label's payload (empty when it is well-formed)."""
    model = PAYLOADS.get((kind, target_type))
    if model is None:
        return [("target_type", f"a {kind} label cannot target a {target_type}")]
    try:
        model.model_validate(payload)
    except ValidationError as exc:
        return problems(exc, ("payload",))
    return []
