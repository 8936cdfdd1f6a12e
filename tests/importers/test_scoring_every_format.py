"""Scoring works on every importer's output: one record of each of the twelve public formats plus the native format in
one database, then first start and `gauntlet score` end to end as subprocesses; a scoring failure during first start
is recorded on the run and shown, never left as "being scored"."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlmodel import Session, select

from core import first_start
from core.analysis import readmodel
from core.config import REPO_ROOT
from core.generation import registered_models, runner, runs
from core.generation.models_admin import active_runs
from core.ingest.importers import IMPORTERS, NATIVE, import_source
from core.store.models import FailureCount, Instance, Response, Run, Verdict
from core.store.schema import NO_MODE
from tests.importers.test_importers import CASES, _records, _slice
from tests.pages.test_dashboards import page_as

MINI = REPO_ROOT / "tests" / "fixtures" / "mini.jsonl"
PUBLIC = list(dict.fromkeys(case.values[0].fmt for case in CASES))  # the first slice of each public format
PASSAGE_FORMATS = ("triviaqa", "searchqa")  # read with their evidence files / one file per question: one record each


@pytest.fixture(autouse=True)
def no_first_start_job(monkeypatch) -> None:
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")  # the pages opened here must not launch one in the background


def test_the_cases_cover_every_registered_format() -> None:
    assert len(PUBLIC) == 10 and sorted([*PUBLIC, *PASSAGE_FORMATS, NATIVE]) == sorted(IMPORTERS.names())


def _one_passage_record(fmt: str, tmp_path: Path) -> Path:
    """One published TriviaQA-RC record (its qa file beside the published evidence) or one SearchQA question file."""
    fixtures = REPO_ROOT / "tests" / "fixtures"
    if fmt == "searchqa":
        return fixtures / "searchqa" / "test" / "000528-5243_doublejeopardy_aneforani_1600.json"
    root = tmp_path / "triviaqa"
    (root / "qa").mkdir(parents=True)
    (root / "evidence").symlink_to(fixtures / "triviaqa" / "evidence")
    qa = json.loads((fixtures / "triviaqa" / "qa" / "wikipedia-dev.json").read_text(encoding="utf-8"))
    (root / "qa" / "one.json").write_text(json.dumps(qa | {"Data": qa["Data"][:1]}), encoding="utf-8")
    return root / "qa" / "one.json"


def _import_one_of_each(engine, tmp_path: Path) -> None:
    native = tmp_path / "native.jsonl"
    native.write_text(MINI.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    assert import_source(engine, native, fmt=NATIVE).ok
    for fmt in PUBLIC:
        case = next(c.values[0] for c in CASES if c.values[0].fmt == fmt)
        (tmp_path / fmt).mkdir()
        path, _ = _slice(case, tmp_path / fmt, _records(case, limit=1))
        report = import_source(engine, path, fmt=fmt)
        assert report.ok and len(report.created) == 1, (fmt, report.errors[:3])
    for fmt in PASSAGE_FORMATS:
        report = import_source(engine, _one_passage_record(fmt, tmp_path), fmt=fmt)
        assert report.ok and len(report.created) == 1, (fmt, report.errors[:3])


def _env(db_url: str, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return env | {"GAUNTLET_DATABASE_URL": db_url, "GAUNTLET_SECRETS_FILE": str(tmp_path / "none.toml"),
                  "PYTHONPATH": str(REPO_ROOT)}


def _python(module: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """`python -m MODULE ARGS` in the repository, its output captured."""
    return subprocess.run([sys.executable, "-m", module, *args], check=False, cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def _first_start(engine, db_url: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess, int]:
    done = _python("core.first_start", env=_env(db_url, tmp_path))
    run = first_start.first_start_run(engine)
    return done, int(run.id) if run else 0


def _gauntlet_score(engine, db_url: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess, int]:
    models = [m.name for m in registered_models.ensure_baselines(engine)]
    run_id = runs.create_run(engine, runs.RunOptions(models=models, concurrency=4))
    assert asyncio.run(runner.execute_run(engine, run_id)).status == "done"
    done = _python("core.cli", "score", str(run_id), "--judge", "heuristic", env=_env(db_url, tmp_path))
    return done, run_id


@pytest.mark.parametrize("entry", [pytest.param(_first_start, id="first-start"),
                                   pytest.param(_gauntlet_score, id="gauntlet-score")])
def test_one_record_of_every_format_scores_end_to_end(entry: Callable, engine, db_url, tmp_path) -> None:
    _import_one_of_each(engine, tmp_path)
    done, run_id = entry(engine, db_url, tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    with Session(engine) as session:
        instances = session.exec(select(Instance.id, Instance.mode)).all()
        answered = set(session.exec(select(Response.instance_id).where(Response.run_id == run_id,
                                                                        Response.status == "done")).all())
        scored = set(session.exec(select(Response.instance_id).join(Verdict, Verdict.response_id == Response.id)
                                  .where(Response.run_id == run_id)).all())
        counted = [(r.mode, r.verdicts)
                   for r in session.exec(select(FailureCount).where(FailureCount.run_id == run_id))]
    assert answered == scored == {i for i, _ in instances}
    modeless = sum(n for mode, n in counted if mode == NO_MODE)
    assert modeless > 0 and any(mode is None for _, mode in instances)  # the IFEval prompt, counted under NO_MODE
    counts = readmodel.load_failure_counts(engine, [run_id], "heuristic")
    assert readmodel.modeless_verdicts(counts) == modeless
    assert not readmodel.unscored_first_start_runs(engine) and run_id not in active_runs(engine)
    page = page_as("constraint_errors", "analyst").run()
    assert not page.exception and not page.error
    captions = [c.value for c in page.caption]
    assert any(f"Left out: {modeless:,} constraint verdicts" in c for c in captions), captions


BROKEN_SCORING = """
import core.pipeline

async def broken(*_args, **_kwargs):
    raise RuntimeError("disk full\\nsecond line")

core.pipeline.score_and_summarise = broken
"""


def test_a_first_start_scoring_failure_is_recorded_and_not_left_as_being_scored(engine, db_url, tmp_path) -> None:
    assert import_source(engine, MINI, fmt=NATIVE).ok
    (tmp_path / "sitecustomize.py").write_text(BROKEN_SCORING, encoding="utf-8")  # scoring fails in that process
    env = _env(db_url, tmp_path) | {"PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO_ROOT}"}
    done = _python("core.first_start", env=env)
    assert done.returncode == 1 and "disk full" in done.stderr, done.stderr[-2000:]
    run_id = int(first_start.first_start_run(engine).id)
    assert readmodel.unscored_first_start_runs(engine) == [] and run_id not in active_runs(engine)
    assert readmodel.failed_first_start_runs(engine) == [(run_id, "RuntimeError: disk full")]
    assert readmodel.first_start_runs(engine) == ([], [(run_id, "RuntimeError: disk full")])  # the pages' one read
    with Session(engine) as session:
        assert session.get(Run, run_id).message.endswith("failed: RuntimeError: disk full")
    shown = page_as("leaderboard", "analyst").run()
    assert [e.value for e in shown.error if "First start failed" in e.value and "disk full" in e.value]
    assert not [i.value for i in shown.info if "is being run through" in i.value]

    assert first_start.ensure_first_start_run(engine) == run_id  # a retry resumes the run and clears the failure
    assert readmodel.failed_first_start_runs(engine) == [] and not readmodel.unscored_first_start_runs(engine)
