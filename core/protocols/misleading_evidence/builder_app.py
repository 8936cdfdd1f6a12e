"""The Build benchmark tab's build of RAG-Stress misleading evidence (declared as the package's Builder), and its
LLM-cost estimate shown for confirmation before a build with a generator or judge model."""

from __future__ import annotations

from pathlib import Path

from core.construction.cost import BuildEstimate
from core.construction.fact_checks import Assist
from core.generation.providers.base import ModelConfig
from core.protocols.base import BuildResult
from core.protocols.misleading_evidence.builder_plans import build_stress_file, estimate_stress_file
from core.protocols.progress import Progress


def estimate(source: Path, *, fmt: str = "", limit: int | None = None, generator: ModelConfig | None = None,
             judge: ModelConfig | None = None) -> BuildEstimate:
    """The upper-bound LLM cost of the tab's build: the generator writes the edit of every open-QA item the rules skip
    or that fails a check, the judge (else the generator) decides the checks rules cannot (as `--llm M --generate`)."""
    return estimate_stress_file(source, fmt, limit, llm=generator, judge=judge or generator,
                                generate=generator is not None)


def build(source: Path, out_dir: Path, *, fmt: str = "", seed: int = 0, limit: int | None = None,
          bm25_only: bool = True, progress: Progress | None = None, assist: Assist | None = None) -> BuildResult:
    """`gauntlet misleading-evidence build` from a HotpotQA or MedQA file: out_dir/instances.jsonl, the skipped items
    with their reasons. With `assist`, every open-QA item is checked and the generator writes the edits the rules
    cannot (`--llm M --generate --judge J`)."""
    models = assist or Assist()
    result, items, _ = build_stress_file(
        source, fmt, out_dir / "instances.jsonl", seed, limit=limit, progress=progress,
        complete_json=models.generate, llm_name=models.generate_name, generate=models.generate is not None,
        check=assist is not None, judge=models.judge or models.generate, judge_name=models.judge_name)
    lines = [f"{items} source items: {len(result.instances)} built, {len(result.skipped)} without a safe edit"]
    if assist is not None:
        lines.append(f"written by the generator: {result.generated} ({result.regenerated} written again after a "
                     f"failed check); dropped by the checks: {len(result.dropped)}")
        lines += [f"check {name}: " + ", ".join(f"{k} {v}" for k, v in row.items())
                  for name, row in result.checks.items()]
    lines += [f"skipped, {reason}: {count}" for reason, count in result.reasons().items()]
    return BuildResult(out_dir / "instances.jsonl", len(result.instances), lines,
                       [f"{s.id}: {s.reason}" for s in result.skipped])
