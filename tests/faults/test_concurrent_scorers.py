"""Several `gauntlet score` processes of the same judge at once: all succeed, no unique-constraint crash, no
duplicate verdict, and the total is what one scorer writes (idempotent); context claims are insert-or-reuse."""

from __future__ import annotations

import asyncio
import re
import subprocess

from sqlalchemy import func
from sqlmodel import Session, select

from core.config import REPO_ROOT
from core.generation import registered_models, runner, runs
from core.scoring.judges.base import ContextClaimsOutcome
from core.scoring.scorer import score_lease, score_run, store_context_claims
from core.store.leases import release_lease, take_lease
from core.store.models import ContextClaims, Verdict
from tests.factories import seed_instances
from tests.faults.conftest import figure, gauntlet, wait_until

SCORERS = 3
INSTANCES = 30


def verdict_counts(engine) -> tuple[int, int]:
    """(verdict rows, distinct (response, metric, judge, constraint) keys)."""
    with Session(engine) as session:
        rows = session.exec(select(Verdict.response_id, Verdict.metric, Verdict.judge, Verdict.constraint_id)).all()
    return len(rows), len(set(rows))


def test_concurrent_scorers_of_one_judge_are_safe_and_idempotent(engine, db_url, tmp_path):
    seed_instances(engine, INSTANCES)
    registered_models.ensure_baselines(engine)
    run_id = runs.create_run(engine, runs.RunOptions(models=["baseline:extractive", "baseline:always-refuse"]))
    assert asyncio.run(runner.execute_run(engine, run_id)).status == "done"
    env = {"GAUNTLET_DATABASE_URL": db_url, "GAUNTLET_SECRETS_FILE": str(tmp_path / "none.toml"),
           "PATH": "/usr/bin:/bin"}
    logs = [tmp_path / f"scorer-{k}.log" for k in range(SCORERS)]
    held = take_lease(engine, score_lease(run_id, "heuristic"), "the test")  # all of them start while it is held
    processes = [subprocess.Popen(gauntlet("score", str(run_id), "--judge", "heuristic"), cwd=REPO_ROOT, env=env,
                                  stdout=log.open("w"), stderr=subprocess.STDOUT) for log in logs]
    wait_until(lambda: all("waiting for it" in log.read_text() for log in logs), timeout=90,
               what="every scorer to wait for the lease")
    release_lease(engine, held)
    for process in processes:
        process.wait(timeout=120)
    outcomes = [(process.returncode, log.read_text()) for process, log in zip(processes, logs, strict=True)]
    written = [int(m.group(1)) for _, out in outcomes for m in re.finditer(r"(\d+) verdicts written", out)]
    rows, keys = verdict_counts(engine)
    again = asyncio.run(score_run(engine, run_id, "heuristic"))
    with Session(engine) as session:
        claims = session.exec(select(func.count()).select_from(ContextClaims)).one()
    figure(f"concurrent scorers: {SCORERS} processes started together, exit {[code for code, _ in outcomes]}, verdicts written "
           f"{written} (total {sum(written)}), rows {rows}, distinct keys {keys}, context-claim rows {claims} for "
           f"{INSTANCES} instances, a fourth pass wrote {again.verdicts_written}")
    assert all(code == 0 for code, _ in outcomes), [out for _, out in outcomes]
    assert not any("Traceback" in out or "IntegrityError" in out for _, out in outcomes)
    assert rows == keys == sum(written) > 0, "a verdict was stored twice"
    assert sorted(written)[:-1] == [0] * (SCORERS - 1), "scorers of one judge take turns: the later ones skip"
    assert again.verdicts_written == 0 and again.verdicts_skipped > 0
    assert claims <= INSTANCES


def test_context_claims_are_insert_or_reuse(engine):
    instance = seed_instances(engine, 1)[0]
    first = ContextClaimsOutcome(core=["a"], supplementary=[], calls=1)
    second = ContextClaimsOutcome(core=["b"], supplementary=[], calls=1)
    assert store_context_claims(engine, instance, "heuristic", first) is first
    kept = store_context_claims(engine, instance, "heuristic", second)  # another scorer got there first
    assert kept.core == ["a"]
    with Session(engine) as session:
        assert [c.core for c in session.exec(select(ContextClaims))] == [["a"]]
