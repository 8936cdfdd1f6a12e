"""Judge checks and probes stored: the write behind `gauntlet judge check|probe` (the analysis layer measures, and
never writes)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from core.store.db import saved_id
from core.store.models import JudgeCheck

if TYPE_CHECKING:
    from core.analysis.judge_check import CheckResult


def save_check(engine: Engine, kind: str, judge: str, judge_model: str, prompt_hash: str, suite: str, n: int,
               figures: dict[str, Any], fitness: str = "") -> int:
    """Store one judge check or probe result; its id."""
    row = JudgeCheck(kind=kind, judge=judge, judge_model=judge_model, prompt_hash=prompt_hash, suite=suite, n=n,
                     figures=figures, fitness=fitness)
    with Session(engine) as session:
        session.add(row)
        session.commit()
        return saved_id(row)


def store_check(engine: Engine, result: CheckResult) -> int:
    """Store a suite check with the judge's version; its id."""
    return save_check(engine, "suite", result.judge, result.judge_model, result.prompt_hash, result.suite,
                      result.n_pairs, result.figures(), result.fitness.label if result.fitness else "")
