"""Which planner an item gets and the build over a source: HotpotQA and MedQA items are planned by builder.py, the
ranked passages of TriviaQA-RC and SearchQA by builder_passages.py (which builds on builder.py's open-QA typing, so the
choice between them sits above both)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from core.protocols.misleading_evidence import builder_passages
from core.protocols.misleading_evidence.builder import (
    CompleteJson,
    NoSafeEdit,
    Plan,
    Skipped,
    StressBuild,
    llm_edit,
    plan_mcq,
    plan_open,
    stress_instance,
)
from core.protocols.misleading_evidence.builder_generative import (
    check_plan,
    describe_failures,
    failed,
    generate_plan,
    with_checks,
    yes_no_gate,
)
from core.protocols.progress import Progress, counted
from core.store.schema import InstanceSpec

if TYPE_CHECKING:
    from core.construction.cost import BuildEstimate
    from core.generation.providers.base import ModelConfig


def plan_for(spec: InstanceSpec, seed: int = 0) -> Plan:
    """The plan of one reference instance (MCQ or open QA); NoSafeEdit says why there is none."""
    if spec.reference is None or spec.reference.answer_type == "unanswerable":
        raise NoSafeEdit("no answered reference")
    if spec.reference.answer_type == "mcq":
        return plan_mcq(spec, seed)
    if spec.metadata.get("format") in builder_passages.FORMATS:
        return builder_passages.plan_passages(spec, seed)
    if not any(d.role == "supporting" for d in spec.documents):
        raise NoSafeEdit("no supporting paragraph to edit")
    return plan_open(spec, seed)


def _count(out: StressBuild, verdicts: dict) -> None:
    for name, verdict in verdicts.items():
        tally = out.checks.setdefault(name, {"passed": 0, "failed": 0})
        tally["passed" if verdict.passed else "failed"] += 1


def _generated(spec: InstanceSpec, out: StressBuild, complete_json: CompleteJson, method: str,
               judge: CompleteJson | None, judge_name: str, attempts: int) -> tuple[Plan | None, str]:
    """The generator's plan for one item, checked; a failed attempt is retried with the failures named."""
    feedback, reason = "", ""
    for attempt in range(attempts):
        try:
            plan = generate_plan(spec, complete_json, method, feedback)
        except NoSafeEdit as exc:
            reason = f"generator: {exc}"
            continue
        verdicts = check_plan(spec, plan, judge, judge_name, generated=True)
        _count(out, verdicts)
        if not failed(verdicts):
            return with_checks(plan, verdicts), ""
        feedback = describe_failures(verdicts)
        reason = f"generated edit failed checks ({feedback})"
        if attempt + 1 < attempts:
            out.regenerated += 1
    return None, reason


def build_stress(specs: Sequence[InstanceSpec], seed: int = 0, complete_json: CompleteJson | None = None,
                 llm_name: str = "", progress: Progress | None = None, *, generate: bool = False,
                 check: bool = False, judge: CompleteJson | None = None, judge_name: str = "",
                 attempts: int = 2) -> StressBuild:
    """RAG-Stress instances for every item with a safe edit; the others listed with their reason. With
    `complete_json`, an LLM re-words each edit (kept only when it passes the checks of `llm_edit`); with `generate`
    too, it writes the edit of every open-QA item the rules skip or that fails a check. With `check` (implied by
    `generate`), every open-QA item is checked (builder_generative.CHECKS; rules, else `judge`) and built only if it passes,
    its verdicts stored in its metadata. `progress(done, total)` after each item."""
    out = StressBuild()
    check = check or generate
    method = f"llm:{llm_name}" if llm_name else "llm"
    for spec in counted(specs, progress):
        open_qa = spec.reference is not None and spec.reference.answer_type not in ("mcq", "unanswerable")
        plan: Plan | None = None
        reason = ""
        try:
            plan = plan_for(spec, seed)
        except NoSafeEdit as exc:
            reason = str(exc)
        if plan is not None and not check and open_qa and spec.reference is not None \
                and spec.reference.answers[0].text.strip().lower() in ("yes", "no"):
            gate = yes_no_gate(spec, plan)  # every yes/no edit, checked or not: a yes/no question, answer flipped
            if failed(gate):
                reason, plan = f"yes/no edit failed checks ({describe_failures(gate)})", None
                out.dropped.append(Skipped(spec.id, reason))
        if plan is not None and complete_json is not None and not generate:
            plan, rejected = llm_edit(plan, complete_json, method)
            if rejected:
                out.llm_rejected.append(Skipped(spec.id, rejected))
            else:
                out.llm_edits += 1
        if plan is not None and check and open_qa:
            verdicts = check_plan(spec, plan, judge, judge_name or "judge")
            _count(out, verdicts)
            if failed(verdicts):
                reason = f"rule edit failed checks ({describe_failures(verdicts)})"
                out.dropped.append(Skipped(spec.id, reason))
                plan = None
            else:
                plan = with_checks(plan, verdicts)
        if plan is None and generate and complete_json is not None and open_qa:
            plan, why = _generated(spec, out, complete_json, method, judge, judge_name or "judge", attempts)
            if plan is not None:
                out.generated += 1
                out.dropped = [d for d in out.dropped if d.id != spec.id]
            else:
                reason = f"{reason}; {why}" if why else reason
        if plan is None:
            out.skipped.append(Skipped(spec.id, reason))
            continue
        out.instances.append(stress_instance(spec, plan, seed))
    return out


SOURCE_FORMATS = ("hotpotqa", "medqa", "triviaqa", "searchqa")


def build_stress_file(source: Path, fmt: str, out: Path, seed: int = 0, *, limit: int | None = None,
                      complete_json: CompleteJson | None = None, llm_name: str = "",
                      skipped: Path | None = None, progress: Progress | None = None, generate: bool = False,
                      check: bool = False, judge: CompleteJson | None = None,
                      judge_name: str = "") -> tuple[StressBuild, int, Path]:
    """Parse `source` (layout `fmt`), build RAG-Stress instances from its first `limit` items, write them to `out`
    (importable JSONL) and the skipped items to `skipped` (default OUT.skipped.jsonl). Returns (build, items read, skipped list); a source with
    errors raises ValueError naming the first ones."""
    from core.ingest.importers import get_importer

    if fmt not in SOURCE_FORMATS:
        raise ValueError(f"format must be one of {', '.join(SOURCE_FORMATS)}")
    parsed = get_importer(fmt).parse(source)
    if not parsed.ok:
        raise ValueError("; ".join(e.located(source) for e in parsed.errors[:20]))
    specs = [spec for _, spec in parsed.instances][:limit]
    result = build_stress(specs, seed=seed, complete_json=complete_json, llm_name=llm_name, progress=progress,
                          generate=generate, check=check, judge=judge, judge_name=judge_name)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(s.model_dump_json() + "\n" for s in result.instances), encoding="utf-8")
    listed = skipped or out.with_suffix(".skipped.jsonl")
    listed.write_text("".join(json.dumps({"id": s.id, "reason": s.reason}, ensure_ascii=False) + "\n"
                              for s in result.skipped), encoding="utf-8")
    return result, len(specs), listed


def estimate_stress_file(source: Path, fmt: str, limit: int | None, *, llm: ModelConfig | None = None,
                         judge: ModelConfig | None = None, generate: bool = False) -> BuildEstimate:
    """The upper-bound LLM cost of building `source` (its first `limit` items) before the build starts: every open-QA
    item's supporting evidence in tokens, through cost.estimate_stress (`llm` re-words, or writes with `generate`)."""
    from core.construction.cost import estimate_stress
    from core.generation.tokens import count_tokens
    from core.ingest.importers import get_importer

    parsed = get_importer(fmt).parse(source)
    specs = [spec for _, spec in parsed.instances][:limit]
    tokens = [sum(count_tokens(d.text) for d in spec.documents if d.role == "supporting") for spec in specs
              if spec.reference is not None and spec.reference.answer_type not in ("mcq", "unanswerable")]
    return estimate_stress(tokens, reword=None if generate else llm, generator=llm if generate else None, judge=judge)
