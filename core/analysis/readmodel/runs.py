"""Scored runs, their judges, first-start runs and per-model generation figures."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sqlalchemy import func, select, text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from core.analysis.readmodel.responses import RULE_JUDGE, read_sql
from core.scoring.summaries import runs_sql
from core.store.first_start_state import first_start_failure, first_start_pending
from core.store.models import Run, Verdict
from core.store.run_kinds import evaluation_run

_GENERATION_SQL = """
SELECT m.name AS model, r.status, r.cached, r.input_tokens, r.output_tokens, r.cost_usd, r.latency_ms
FROM response r JOIN model m ON m.id = r.model_id WHERE r.run_id = :run
"""


def scored_runs(engine: Engine) -> pd.DataFrame:
    """Evaluation runs not hidden that have verdicts, newest first: id, name, status, config, verdicts."""
    from sqlmodel import col

    # the count per run as a correlated subquery (answered from the run_id index, no join of every verdict to its run)
    verdicts = (select(func.count()).select_from(Verdict).where(col(Verdict.run_id) == Run.id)
                .correlate(Run).scalar_subquery())
    held = select(col(Verdict.id)).where(col(Verdict.run_id) == Run.id).correlate(Run).exists()
    with Session(engine) as session:
        rows = session.execute(select(col(Run.id), col(Run.name), col(Run.status), col(Run.config), verdicts)
                               .where(evaluation_run(), held)
                               .order_by(col(Run.id).desc())).all()
    return pd.DataFrame(rows, columns=["id", "name", "status", "config", "verdicts"])


# the scored runs (not hidden, with verdicts), newest first: one index probe per run instead of counting every verdict
# (the results pages' run choice needs no count); built once, as every results page reads it on a cold render
_RUN_TABLE = Run.__table__  # type: ignore[attr-defined]
_SCORED_RUN_LIST = (select(_RUN_TABLE.c.id, _RUN_TABLE.c.name, _RUN_TABLE.c.status, _RUN_TABLE.c.config)
                    .where(evaluation_run(), select(Verdict.__table__.c.id)  # type: ignore[attr-defined]
                           .where(Verdict.__table__.c.run_id == _RUN_TABLE.c.id).exists())  # type: ignore[attr-defined]
                    .order_by(_RUN_TABLE.c.id.desc()))


def scored_run_rows(engine: Engine) -> list[tuple[int, str | None, str, dict | None]]:
    """The runs of scored_runs (not hidden, with verdicts; newest first) without their verdict counts, as plain
    (id, name, status, config) rows: no frame (the results sidebar turns them into labels)."""
    with engine.connect() as conn:  # a plain connection, no ORM session
        return [(int(i), name, status, config) for i, name, status, config in conn.execute(_SCORED_RUN_LIST)]


def scored_run_list(engine: Engine) -> pd.DataFrame:
    """scored_run_rows as a frame: id, name, status, config."""
    return pd.DataFrame(scored_run_rows(engine), columns=["id", "name", "status", "config"])


_RUN_JUDGES_SQL = """
WITH RECURSIVE j(judge) AS (
  SELECT MIN(judge) FROM verdict
  UNION ALL SELECT (SELECT MIN(v.judge) FROM verdict v WHERE v.judge > j.judge) FROM j WHERE j.judge IS NOT NULL)
SELECT j.judge FROM j
WHERE j.judge IS NOT NULL AND EXISTS (SELECT 1 FROM verdict v WHERE v.run_id IN ({runs}) AND v.judge = j.judge)
"""


def run_judges(engine: Engine, run_ids: Sequence[int]) -> list[str]:
    """Judges that scored any of the runs (LLM judges first); ['rule'] when only rule checks ran. Read by index seeks
    (each distinct judge, then whether the runs hold one of its verdicts), not a scan of the runs' verdicts."""
    with engine.connect() as conn:
        judges = [str(j) for (j,) in conn.execute(text(runs_sql(_RUN_JUDGES_SQL, run_ids)))]
    named = sorted(j for j in judges if j != RULE_JUDGE)
    return sorted(named, key=lambda j: (not j.startswith("llm:"), j)) or ([RULE_JUDGE] if judges else [])


@dataclass(frozen=True)
class ConfiguredRun:
    """A run with a config, as the first-start banner reads it: id, progress message and config."""

    id: int
    message: str | None
    config: dict


# every results page reads it on every run: three columns through a plain connection (no ORM session or Run objects)
_CONFIGURED_RUNS = select(Run.__table__.c.id, Run.__table__.c.message, Run.__table__.c.config).where(  # type: ignore[attr-defined]
    Run.__table__.c.config.is_not(None))  # type: ignore[attr-defined]
_RUN_STATES = select(_RUN_TABLE.c.id, _RUN_TABLE.c.status, _RUN_TABLE.c.message, _RUN_TABLE.c.config)

RunState = tuple[int, str, str | None, dict | None]  # a run's id, status, progress message and config


def run_states(engine: Engine) -> list[RunState]:
    """Every run's (id, status, progress message, config), read live: one read of the runs serves a results page's
    first-start banner (first_start_runs) and its live refresh (core.generation.models_admin.active_runs)."""
    with engine.connect() as conn:
        return [(int(i), status, message, config) for i, status, message, config in conn.execute(_RUN_STATES)]


def _configured_runs(engine: Engine, states: list[RunState] | None = None) -> list[ConfiguredRun]:
    if states is not None:
        return [ConfiguredRun(i, message, config or {}) for i, _, message, config in states if config is not None]
    with engine.connect() as conn:
        return [ConfiguredRun(int(i), message, config or {}) for i, message, config in conn.execute(_CONFIGURED_RUNS)]


def unscored_first_start_runs(engine: Engine) -> list[ConfiguredRun]:
    """First-start runs still being generated or scored (not those whose last attempt failed)."""
    return _pending_first_start(_configured_runs(engine))


def failed_first_start_runs(engine: Engine) -> list[tuple[int, str]]:
    """(run id, why) of first-start runs whose last attempt failed."""
    return _failed_first_start(_configured_runs(engine))


def first_start_runs(engine: Engine, states: list[RunState] | None = None
                     ) -> tuple[list[ConfiguredRun], list[tuple[int, str]]]:
    """unscored_first_start_runs and failed_first_start_runs from one read of the runs (a page shows both), or from
    the run_states a page has read."""
    configured = _configured_runs(engine, states)
    return _pending_first_start(configured), _failed_first_start(configured)


def _pending_first_start(configured: list[ConfiguredRun]) -> list[ConfiguredRun]:
    return [r for r in configured if first_start_pending(r.config)]


def _failed_first_start(configured: list[ConfiguredRun]) -> list[tuple[int, str]]:
    return [(r.id, why) for r in configured if (why := first_start_failure(r.config))]


def generation_summary(engine: Engine, run_id: int) -> pd.DataFrame:
    """Per model of one run: items, done, failed, pending, cached, tokens, cost, paid spend, latency mean and p95."""
    frame = read_sql(engine, _GENERATION_SQL, {"run": int(run_id)})
    rows = []
    for model, g in frame.groupby("model", sort=True):
        done = g[g["status"] == "done"]
        latency = done.loc[~done["cached"].astype(bool), "latency_ms"].dropna().to_numpy(float)
        rows.append({"model": model, "items": len(g), "done": len(done), "failed": int((g["status"] == "failed").sum()),
                     "pending": int((g["status"] == "pending").sum()), "cached": int(done["cached"].astype(bool).sum()),
                     "input_tokens": int(done["input_tokens"].sum()), "output_tokens": int(done["output_tokens"].sum()),
                     "cost_usd": round(float(done["cost_usd"].sum()), 6),
                     "spent_usd": round(float(done.loc[~done["cached"].astype(bool), "cost_usd"].sum()), 6),
                     "latency_ms_mean": round(float(latency.mean()), 1) if latency.size else None,
                     "latency_ms_p95": round(float(np.percentile(latency, 95, method="nearest")), 1) if latency.size else None})
    return pd.DataFrame(rows)
