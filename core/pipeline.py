"""The write pipeline: run -> score -> summarise, chained in one place.

Each stage writes only its own tables: generation writes responses (core.generation.runner), scoring writes verdicts
and context claims (core.scoring.scorer), summarise writes the per-response summary rows the read model uses
(core.scoring.summaries). The CLI (`gauntlet run`, `gauntlet score`), the Run evaluation page (through the
background `gauntlet run --resume`) and first start all call these functions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine

if TYPE_CHECKING:
    from core.store.leases import Fence

StageProgress = Callable[[str, int, int], None]  # (stage, done, total)


@dataclass
class PipelineResult:
    """What one pass of the pipeline did: the generation result, one scoring report per judge, judges summarised."""

    run_id: int
    generation: Any = None
    scores: list[Any] = field(default_factory=list)
    summarised: list[str] = field(default_factory=list)


def _set_stage(engine: Engine, run_id: int, stage: str, done: int, total: int, judge: str | None = None,
               fences: Iterable[Fence] = ()) -> None:
    """Record the current stage and its progress on the run row (read by the Run page); under the executor's lease
    when `fences` are given (LeaseLost once it was taken over)."""
    from sqlmodel import Session

    from core.store.leases import check_fences
    from core.store.models import Run

    with Session(engine) as session:
        check_fences(session.connection(), fences)
        run = session.get(Run, run_id)
        if run is None:
            return
        stage_info = {"stage": stage, "done": int(done), "total": int(total)} | ({"judge": judge} if judge else {})
        run.config = {**(run.config or {}), "pipeline": stage_info}
        if stage == "scoring":
            run.message = f"scoring with {judge}: {done}/{total} responses"
        session.add(run)
        session.commit()


async def score_and_summarise(engine: Engine, run_id: int, judges: list[str], *, constraint_mode: str = "batched",
                              concurrency: int | None = None, progress: StageProgress | None = None) -> PipelineResult:
    """Score `run_id` with each judge in turn (idempotent; at most `concurrency` judge calls in flight, default the
    scorer's), then refresh the summaries of every judge of the run."""
    from core.scoring.scorer import score_run
    from core.scoring.summaries import summarise_run

    result = PipelineResult(run_id)
    for judge in judges:
        def on_progress(done: int, total: int, judge: str = judge) -> None:
            if done == total or done % 10 == 0:
                _set_stage(engine, run_id, "scoring", done, total, judge)
            if progress:
                progress(f"scoring:{judge}", done, total)

        result.scores.append(await score_run(engine, run_id, judge, concurrency=concurrency,
                                             constraint_mode=constraint_mode, progress=on_progress))
    result.summarised = summarise_run(engine, run_id)
    if progress:
        progress("summarise", 1, 1)
    _set_stage(engine, run_id, "finished", 1, 1)  # `gauntlet score` alone must not leave the run marked as scoring
    return result


async def run_and_score(engine: Engine, run_id: int, *, overrides: dict[str, Any] | None = None,
                        judges: list[str] | None = None, constraint_mode: str = "batched",
                        generation_progress: Callable[[Any], None] | None = None,
                        progress: StageProgress | None = None) -> PipelineResult:
    """Generate the run's pending items, then, if generation finished, score with its judges and summarise."""
    from core.generation.jobs import split_judges
    from core.generation.runner import execute_run
    from core.generation.runs import run_options

    def on_generation(p: Any) -> None:
        if p.finished == p.total or p.finished % 10 == 0:
            _set_stage(engine, run_id, "generation", p.finished, p.total, fences=p.fences)
        if generation_progress:
            generation_progress(p)

    generation = await execute_run(engine, run_id, overrides=overrides, progress=on_generation)
    judges = split_judges(judges if judges is not None else run_options(engine, run_id).judge)
    result = PipelineResult(run_id, generation)
    if judges and generation.status == "done":
        scored = await score_and_summarise(engine, run_id, judges, constraint_mode=constraint_mode, progress=progress)
        result.scores, result.summarised = scored.scores, scored.summarised
    _set_stage(engine, run_id, "finished", 1, 1)
    return result


def run_and_score_sync(engine: Engine, run_id: int, **kwargs: Any) -> PipelineResult:
    """run_and_score from synchronous code."""
    return asyncio.run(run_and_score(engine, run_id, **kwargs))
