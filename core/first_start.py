"""First start: run the bundled sample through the offline baselines and score it with rule checks + the heuristic judge.

So that a newcomer without an API key sees every results page on real computed numbers. Idempotent: a finished
first-start run means nothing to do; an interrupted one is resumed (generation and scoring both skip finished work).

    python -m core.first_start        # what `make app` launches in the background
"""

from __future__ import annotations

import asyncio
import logging
import sys

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from core.store.db import saved_id
from core.store.first_start_state import FAILED_KEY
from core.store.models import Instance, Run

LABEL = "baselines + heuristic judge"
RUN_NAME = f"First start: sample through {LABEL}"
JUDGE = "heuristic"
log = logging.getLogger(__name__)


def first_start_run(engine: Engine) -> Run | None:
    """The most recent first-start run, if any."""
    with Session(engine) as session:
        runs = session.exec(select(Run).order_by(col(Run.id).desc())).all()
        return next((r for r in runs if (r.config or {}).get("first_start")), None)


def _record_attempt(engine: Engine, run_id: int, failure: str | None) -> None:
    """Store the outcome of an attempt on the run: the failure (shown by the results pages) or, starting one, none."""
    with Session(engine) as session:
        run = session.get(Run, run_id)
        if run is None:
            raise ValueError(f"no run with id {run_id}")
        config = {k: v for k, v in (run.config or {}).items() if k != FAILED_KEY}
        run.config = config | ({FAILED_KEY: failure} if failure else {})
        if failure:
            run.message = f"{LABEL}: failed: {failure}"
        session.add(run)
        session.commit()


def _set_message(engine: Engine, run_id: int, message: str) -> None:
    with Session(engine) as session:
        run = session.get_one(Run, run_id)
        run.message = message
        session.add(run)
        session.commit()


def _mark(engine: Engine, run_id: int) -> None:
    with Session(engine) as session:
        run = session.get_one(Run, run_id)
        run.config = {**(run.config or {}), "first_start": True, "label": LABEL, "judge": JUDGE}
        session.add(run)
        session.commit()


def ensure_first_start_run(engine: Engine) -> int | None:
    """Create, generate and score the first-start run; None when a finished one exists or there is no instance."""
    from core.generation.registered_models import ensure_baselines
    from core.generation.runs import RunOptions, create_run
    from core.pipeline import run_and_score
    from core.scoring.judges.text import snippet

    existing = first_start_run(engine)
    if existing is not None and existing.status == "done" and (existing.config or {}).get("scored"):
        return None
    with Session(engine) as session:
        if session.exec(select(Instance.id).where(Instance.is_latest == True).limit(1)).first() is None:  # noqa: E712
            log.warning("no benchmark instance: import one (gauntlet init-db loads the sample) before the first start")
            return None
    if existing is None:
        models = [m.name for m in ensure_baselines(engine)]
        run_id = create_run(engine, RunOptions(models=models, name=RUN_NAME, judge=JUDGE, concurrency=4))
        _mark(engine, run_id)
    else:
        run_id = saved_id(existing)

    def generation_progress(p) -> None:
        _set_message(engine, run_id, f"{LABEL}: generating {p.finished}/{p.total}")

    def scoring_progress(stage: str, done: int, total: int) -> None:
        if stage.startswith("scoring") and (done == total or done % 5 == 0):
            _set_message(engine, run_id, f"{LABEL}: scoring {done}/{total}")

    _record_attempt(engine, run_id, None)
    try:
        result = asyncio.run(run_and_score(engine, run_id, judges=[JUDGE], generation_progress=generation_progress,
                                           progress=scoring_progress))
    except Exception as exc:
        first_line = (str(exc).splitlines() or [""])[0]
        _record_attempt(engine, run_id, f"{type(exc).__name__}: {snippet(first_line)}")
        raise
    if not result.scores:
        return run_id
    report = result.scores[0]
    with Session(engine) as session:
        run = session.get_one(Run, run_id)
        run.config = {**(run.config or {}), "scored": True}
        run.message = f"{LABEL}: {report.responses} responses scored, {report.verdicts_written} verdicts written"
        session.add(run)
        session.commit()
    return run_id


def main() -> int:
    """Initialise the database (loading the sample if empty) and ensure the first-start run."""
    from core.commands.data import init_db
    from core.store.db import get_engine

    logging.basicConfig(level=logging.INFO, format="%(asctime)s first-start %(message)s")
    log.info(init_db())
    try:
        run_id = ensure_first_start_run(get_engine())
    except Exception:
        log.exception("first start failed (recorded on the run; the results pages show it)")
        return 1
    log.info("first-start run %s", "already present" if run_id is None else f"#{run_id} done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
