"""Results sets of the aggregate golden tests in two copies each: summaries stored (rebuilt from the verdicts) and
stale (their fingerprint dropped, so the read model aggregates inline). Built once per pass by the session fixtures
of tests/analysis/conftest.py; reads never write (the tests assert it), so every read of a copy is made once and
handed out as a fresh copy of its frames."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from sqlalchemy import text
from sqlalchemy.engine import Engine

from core.scoring.summaries import rebuild_summaries, stale_summary_runs
from core.store.db import make_engine


@dataclass
class Dataset:
    """One results set (`name`: "sample" or "paper") as a stored and a stale copy, with a memo of its reads."""

    name: str
    engines: dict[bool, Engine]
    run_ids: list[int]
    judge: str
    memo: dict[Any, Any] = field(default_factory=dict)

    def at(self, stale: bool) -> tuple[Engine, list[int], str]:
        """(engine, run ids, judge) of the copy with stored (False) or stale (True) summaries."""
        return self.engines[stale], self.run_ids, self.judge

    def once(self, key: Any, compute: Callable[[], Any]) -> Any:
        """compute() the first time `key` is asked, then the same value (callers copy frames they hand out)."""
        if key not in self.memo:
            self.memo[key] = compute()
        return self.memo[key]

    def dispose(self) -> None:
        """Close both copies' connections."""
        for engine in self.engines.values():
            engine.dispose()


def make_stale(engine: Engine, run_ids: list[int], judge: str) -> None:
    """Drop the summaries' fingerprint of `judge`: the read model then aggregates inline from the verdicts."""
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM response_score_state WHERE judge = :judge"), {"judge": judge})
    assert stale_summary_runs(engine, run_ids, judge)


def summary_copies(url_factory: Callable[..., str], template: str, name: str, run_ids: list[int],
                   judge: str) -> Dataset:
    """Two copies of the database at `template`: one with the runs' summaries rebuilt, and a copy of that one made
    stale (as the tests did before each stored or stale case, once per pass instead of once per test)."""
    stored = url_factory(template=template)
    engine = make_engine(stored)
    for run_id in run_ids:
        rebuild_summaries(engine, run_id, judge)
    assert not stale_summary_runs(engine, run_ids, judge)
    engine.dispose()  # PostgreSQL copies a template only while nobody is connected to it
    stale = make_engine(url_factory(template=stored))
    make_stale(stale, run_ids, judge)
    return Dataset(name, {False: make_engine(stored), True: stale}, run_ids, judge)


def fresh(frames: tuple[pd.DataFrame, ...]) -> tuple[pd.DataFrame, ...]:
    """Fresh copies of memoised frames, so no test can change what the next one reads."""
    return tuple(f.copy() for f in frames)
