"""Whether an instance or a query was written or edited by an LLM, and by which model: the one mark that every page,
table, export, CLI listing and report note shows (they all call `generated_mark` / `query_mark`, none decides alone).

What the mark reads from an instance's metadata (each builder records its own):
- `query_origin: generated` (+ `query_generated_by`): the question was drafted by an LLM (`gauntlet draft-queries`);
- `rag_stress.generated` / `rag_stress.method = "llm:<model>"`: the misleading evidence was written, or the rule's edit
  reworded, by a model;
- `atomic_ids` shorter than the constraints, or atomics "removed by LLM review" (`llm_model`): EnterpriseRAG's
  instruction set augmented or pruned by a model (`gauntlet build --llm`);
- `llm_generated`: any builder's own list of `{"part", "how", "model"}` records (e.g. an LLM-written conflict).
The mark written into exports (`generated`) is derived, never read back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

GENERIC_KEY = "llm_generated"
EXPORT_KEY = "generated"
UNKNOWN_MODEL = "model not recorded"
HUMAN = "not generated (rules or people)"


@dataclass(frozen=True)
class GeneratedPart:
    """One part of an item an LLM produced: what (`part`), how (drafted, written, edited, added) and by which model."""

    part: str
    how: str
    model: str = ""

    def text(self) -> str:
        """'query drafted by gpt-x'."""
        return f"{self.part} {self.how} by {self.model or UNKNOWN_MODEL}"


@dataclass(frozen=True)
class GeneratedMark:
    """The LLM-made parts of one item (never empty: no part, no mark)."""

    parts: tuple[GeneratedPart, ...]

    @property
    def models(self) -> list[str]:
        """The models named, in order of first mention ('model not recorded' when a part names none)."""
        return list(dict.fromkeys(p.model or UNKNOWN_MODEL for p in self.parts))

    @property
    def edited_only(self) -> bool:
        """True when an LLM only edited rule-made content (nothing drafted, written or added)."""
        return all(p.how == "edited" for p in self.parts)

    def short(self) -> str:
        """The table cell: 'LLM-generated (gpt-x)' or 'LLM-edited (gpt-x)'."""
        return f"{'LLM-edited' if self.edited_only else 'LLM-generated'} ({', '.join(self.models)})"

    def label(self) -> str:
        """The full line: 'LLM-generated: query drafted by gpt-x; misleading evidence written by gpt-y'."""
        return f"{'LLM-edited' if self.edited_only else 'LLM-generated'}: " + "; ".join(p.text() for p in self.parts)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for exports: the short mark, the models and each part."""
        return {"mark": self.short(), "models": self.models,
                "parts": [{"part": p.part, "how": p.how, "model": p.model} for p in self.parts]}


def _model_of(method: str) -> str:
    return method.split(":", 1)[1] if method.startswith("llm:") else ""


def _rag_stress_parts(rag: Mapping[str, Any]) -> list[GeneratedPart]:
    method = str(rag.get("method") or "")
    if rag.get("generated"):
        return [GeneratedPart("misleading evidence", "written", _model_of(method))]
    if method.startswith("llm"):
        return [GeneratedPart("misleading evidence", "edited", _model_of(method))]
    return []


def _instruction_parts(meta: Mapping[str, Any], constraints: int | None) -> list[GeneratedPart]:
    model = str(meta.get("llm_model") or "")
    out = []
    atomics = meta.get("atomic_ids")
    if constraints is not None and isinstance(atomics, list) and constraints > len(atomics):
        out.append(GeneratedPart(f"{constraints - len(atomics)} constraint(s)", "added", model))
    if any(isinstance(r, list | tuple) and len(r) > 1 and "LLM" in str(r[1]) for r in meta.get("removed_atomics") or []):
        out.append(GeneratedPart("instruction set", "edited", model))
    return out


def _bundle_parts(bundle: Mapping[str, Any], model: str) -> list[GeneratedPart]:
    """EnterpriseRAG conflicts and gaps whose edit the build's generator wrote (core.construction.simulate)."""
    if not bundle.get("generated"):
        return []
    part = "conflicting evidence" if "edited_fact" in bundle else "gap evidence"
    return [GeneratedPart(part, "written", str(bundle.get("generated_by") or model))]


def _generic_parts(records: Iterable[Any]) -> list[GeneratedPart]:
    return [GeneratedPart(str(r.get("part") or "item"), str(r.get("how") or "written"), str(r.get("model") or ""))
            for r in records if isinstance(r, Mapping)]


_MARK_KEYS = frozenset({"query_origin", "rag_stress", "atomic_ids", "removed_atomics", "bundle", GENERIC_KEY})


def generated_mark(meta: Mapping[str, Any] | None, constraints: int | None = None) -> GeneratedMark | None:
    """The LLM mark of an instance from its metadata (and its constraint count, for EnterpriseRAG augmentation);
    None when no part of it came from an LLM."""
    meta = meta or {}
    if meta.keys().isdisjoint(_MARK_KEYS):
        return None  # none of the keys a part is read from (most instances: a list of a thousand pays nothing)
    parts: list[GeneratedPart] = []
    if meta.get("query_origin") == "generated":
        parts.append(GeneratedPart("query", "drafted", str(meta.get("query_generated_by") or "")))
    parts += _rag_stress_parts(meta.get("rag_stress") or {})
    parts += _instruction_parts(meta, constraints)
    parts += _bundle_parts(meta.get("bundle") or {}, str(meta.get("llm_model") or ""))
    parts += _generic_parts(meta.get(GENERIC_KEY) or [])
    return GeneratedMark(tuple(parts)) if parts else None


def query_mark(query: Mapping[str, Any]) -> GeneratedMark | None:
    """The mark of a query record (a line of a queries file): drafted by an LLM or not."""
    if query.get("query_origin") != "generated":
        return None
    return GeneratedMark((GeneratedPart("query", "drafted", str(query.get("generated_by") or "")),))


def mark_cell(mark: GeneratedMark | None) -> str:
    """The table cell of a mark: its short form, or '' for human-written items."""
    return mark.short() if mark else ""


def mark_counts(marks: Iterable[GeneratedMark | None]) -> dict[str, int]:
    """Items per short mark ('human- or rule-made' for unmarked ones), most frequent first."""
    counts: dict[str, int] = {}
    for mark in marks:
        key = mark.short() if mark else HUMAN
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def spec_marks(lines: Iterable[str]) -> list[GeneratedMark | None]:
    """The mark of every instance in interchange JSONL lines (a built or exported file)."""
    out = []
    for line in lines:
        if line.strip():
            record = json.loads(line)
            out.append(generated_mark(record.get("metadata"), len(record.get("constraints") or [])))
    return out
