"""Built items for the generated-mark and side-by-side tests: a misleading-evidence item whose edit a model wrote (the
real generative path: plan from a rewrite, automatic checks by rule, stress instance), a drafted query."""

from __future__ import annotations

from pathlib import Path

from core.protocols.misleading_evidence.builder import stress_instance
from core.protocols.misleading_evidence.builder_generative import (
    check_plan,
    evidence_of,
    plan_from_rewrite,
    with_checks,
)
from core.store.schema import InstanceSpec

TEXT = "The Old Mill was built in 1887 by the Harker family. It burned down and was rebuilt <b>in stone</b>."
SOURCE = {
    "id": "mill-1", "domain": "Energy", "query": "When was the Old Mill built?", "protocol": "reference_qa",
    "reference": {"answer_type": "short", "answers": [{"text": "1887"}]},
    "documents": [{"doc_id": "mill-1#d1", "title": "Old Mill", "text": TEXT, "role": "supporting",
                   "variant": {"sentence_offsets": [0, 52]}}],
}


def generated_stress_item(writer: str = "writer-m", wrong: str = "1891") -> InstanceSpec:
    """One misleading-evidence item whose edit `writer` wrote, checked (verdicts stored) and built."""
    spec = InstanceSpec.model_validate(SOURCE)
    evidence = evidence_of(spec)
    reply = {"wrong_answer": wrong, "answer_type": "year",
             "sentences": {"0": evidence.sentences[0].replace("1887", wrong)}}
    plan = plan_from_rewrite(evidence, reply, f"llm:{writer}")
    return stress_instance(spec, with_checks(plan, check_plan(spec, plan, generated=True)))


def write_specs(specs: list[InstanceSpec], path: Path) -> Path:
    """The specs as interchange JSONL."""
    path.write_text("".join(s.model_dump_json() + "\n" for s in specs), encoding="utf-8")
    return path


def drafted_query_meta(model: str = "drafter-m") -> dict:
    """An EnterpriseRAG instance's metadata for a query `gauntlet draft-queries` drafted with `model`."""
    return {"query_id": "gen-doc1", "query_origin": "generated", "query_generated_by": model}

