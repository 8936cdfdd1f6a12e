"""AppTest: the Run evaluation page estimates, launches a background run that finishes, and cancels a run."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlmodel import Session, select
from streamlit.testing.v1 import AppTest

from core.generation import runner
from core.store.models import Run
from tests.factories import seed_instances
from tests.pages.signin import sign_in

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "run_evaluation.py")


@pytest.fixture
def seeded(engine, monkeypatch, tmp_path):
    monkeypatch.setenv("GAUNTLET_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    seed_instances(engine, 6)
    return engine


def open_page() -> AppTest:
    at = sign_in(AppTest.from_file(PAGE, default_timeout=30), "admin")
    at.run()
    assert not at.exception, at.exception
    return at


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def test_registers_baselines_when_missing(seeded):
    at = open_page()
    at.button(key="run_add_baselines").click().run()
    assert "baseline:extractive" in at.multiselect(key="run_models").options


@pytest.mark.parametrize(
    ("modes", "limit", "items"),
    [pytest.param([], 0, 12, id="all"), pytest.param(["gap"], 0, 4, id="gap-only"), pytest.param([], 3, 6, id="limit")],
)
def test_estimate_follows_the_choices(seeded, modes, limit, items):
    runner.ensure_baselines(seeded)
    at = open_page()
    at.multiselect(key="run_models").set_value(["baseline:extractive", "baseline:always-refuse"])
    at.multiselect(key="run_modes").set_value(modes)
    at.number_input(key="run_limit").set_value(limit).run()
    assert metric(at, "Items") == str(items) and metric(at, "Paid calls") == "0"


def test_launch_runs_in_background_and_progress_shows_done(seeded):
    runner.ensure_baselines(seeded)
    at = open_page()
    at.multiselect(key="run_models").set_value(["baseline:extractive"]).run()
    at.button(key="run_launch").click().run()
    assert not at.exception, at.exception
    assert "launched in the background" in at.success[0].value
    with Session(seeded) as session:
        run = session.exec(select(Run)).one()
    deadline = time.monotonic() + 40
    while runner.progress_snapshot(seeded, run.id).status != "done":
        assert time.monotonic() < deadline, "background run did not finish"
        time.sleep(0.2)
    with Session(seeded) as session:
        assert session.get(Run, run.id).config["pid"] > 0
    at.run()
    assert any(f"run {run.id}: done - 6/6" in p.proto.text for p in at.get("progress"))
    assert metric(at, "Done") == "6"


def test_cancel_a_run_that_is_not_running(seeded):
    runner.ensure_baselines(seeded)
    run_id = runner.create_run(seeded, runner.RunOptions(models=["baseline:extractive"]))
    at = open_page()
    at.button(key=f"run_cancel_{run_id}").click().run()
    assert not at.exception, at.exception
    with Session(seeded) as session:
        assert session.get(Run, run_id).status == "cancelled"


@pytest.mark.parametrize("role", ["expert", "analyst", "viewer"])
def test_only_admins_may_launch_runs(seeded, role):
    at = sign_in(AppTest.from_file(PAGE, default_timeout=30), role)
    at.run()
    assert [e.value for e in at.error] == [f"Your role ({role}) may not open this page."]
    assert not at.button and not at.multiselect
