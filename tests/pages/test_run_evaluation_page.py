"""AppTest: the Run evaluation page estimates, launches generation + scoring with the chosen judges as one background
job, shows both stages' progress, cancels, and re-checks the admin role server-side."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import Session, func, select
from streamlit.testing.v1 import AppTest

from core.generation import jobs, registered_models, runs
from core.review.auth import create_user, update_user
from core.store.models import Response, Run, Verdict
from tests.factories import add_model, seed_instances
from tests.pages.signin import sign_in

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "run_evaluation.py")
HEURISTIC_LINE = "Scoring with heuristic (lexical, offline)"


@pytest.fixture
def seeded(engine, monkeypatch, tmp_path):
    monkeypatch.setenv("GAUNTLET_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    seed_instances(engine, 6)
    create_user(engine, "tester", "admin", password="tester-pass-1")
    return engine


def open_page() -> AppTest:
    at = sign_in(AppTest.from_file(PAGE, default_timeout=30), "admin")
    at.run()
    assert not at.exception, at.exception
    return at


def open_models(at: AppTest) -> AppTest:
    """Open the Models panel, as a click on its header does (its body is drawn only while it is open)."""
    at.session_state["run_models_panel"] = True
    at.run()
    assert not at.exception, at.exception
    return at


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def progress_texts(at: AppTest) -> list[str]:
    return [p.proto.text for p in at.get("progress")]


def only_run(engine) -> Run:
    with Session(engine) as session:
        return session.exec(select(Run)).one()


def wait_for_pipeline(engine, run_id: int, seconds: float = 60) -> list[jobs.StageLine]:
    """Wait for the run's background process (launched by this test process) to exit, then read its pipeline once:
    every line must be finished (or not scored)."""
    pid = _pid(engine, run_id)
    assert jobs.wait_for_exit(pid, seconds), f"background job {pid} still running after {seconds:.0f} s"
    lines = jobs.pipeline_progress(engine, run_id)
    assert all(line.state in ("finished", "not scored") for line in lines), f"background job exited unfinished: {lines}"
    return lines


def _pid(engine, run_id: int) -> int:
    with Session(engine) as session:
        return session.get(Run, run_id).config["pid"]


def test_registers_baselines_when_missing(seeded):
    at = open_page()
    at.button(key="run_add_baselines").click().run()
    assert "baseline:extractive" in at.multiselect(key="run_models").options


def _models_panel(at: AppTest) -> tuple[bool, bool]:
    """(the models table drawn, the register/edit form drawn)."""
    table = any("missing" in frame.value.columns for frame in at.dataframe)
    return table, any(w.key == "model_pick" for w in at.selectbox)


# name -> (real models registered, panel opened by the user, (table drawn, form drawn))
MODELS_PANEL = {
    "no real model: open at first, table and form drawn": ([], False, (True, True)),
    "a real model: closed, nothing of its body drawn": (["gpt-test"], False, (False, False)),
    "a real model, opened by a click: table and form drawn": (["gpt-test"], True, (True, True)),
}


@pytest.mark.parametrize(("real", "opened", "drawn"), MODELS_PANEL.values(), ids=MODELS_PANEL.keys())
def test_the_models_panel_draws_its_body_only_while_open(seeded, real, opened, drawn):
    registered_models.ensure_baselines(seeded)
    for name in real:
        add_model(seeded, name, settings={"api_key_env": "NOPE_KEY"})
    at = open_models(open_page()) if opened else open_page()
    assert _models_panel(at) == drawn
    assert [e.label for e in at.expander][:1] == ["Models"]
    warned = any("cannot be called" in w.value for w in at.warning)  # the table's warning for the unset key
    assert warned is (bool(real) and drawn[0])


@pytest.mark.parametrize(
    ("modes", "limit", "items"),
    [pytest.param([], 0, 12, id="all"), pytest.param(["gap"], 0, 4, id="gap-only"), pytest.param([], 3, 6, id="limit")],
)
def test_estimate_follows_the_choices(seeded, modes, limit, items):
    registered_models.ensure_baselines(seeded)
    at = open_page()
    at.multiselect(key="run_models").set_value(["baseline:extractive", "baseline:always-refuse"])
    at.multiselect(key="run_modes").set_value(modes)
    at.number_input(key="run_limit").set_value(limit).run()
    assert metric(at, "Items") == str(items) and metric(at, "Paid calls") == "0"


def test_judges_offered_are_heuristic_and_llm_per_real_model(seeded):
    registered_models.ensure_baselines(seeded)
    add_model(seeded, "gpt-test")
    at = open_page()
    judges = at.multiselect(key="run_judges")
    assert judges.options == ["heuristic (lexical, offline)", "llm:gpt-test"]
    assert judges.value == ["heuristic"]
    at.multiselect(key="run_models").set_value(["baseline:extractive"])
    judges.set_value(["heuristic", "llm:gpt-test"]).run()
    assert any("LLM judge calls are paid on top" in c.value for c in at.caption)


def test_launch_generates_and_scores_with_the_chosen_judge(seeded):
    registered_models.ensure_baselines(seeded)
    at = open_page()
    at.multiselect(key="run_models").set_value(["baseline:extractive"])
    at.multiselect(key="run_judges").set_value(["heuristic"]).run()
    at.button(key="run_launch").click().run()
    assert not at.exception, at.exception
    assert "launched in the background" in at.success[0].value
    run = only_run(seeded)
    assert run.config["judge"] == "heuristic" and run.config["pid"] > 0
    lines = wait_for_pipeline(seeded, run.id)
    assert [(line.stage, line.judge, line.done, line.total, line.state) for line in lines] == [
        ("generation", None, 6, 6, "finished"), ("scoring", "heuristic", 6, 6, "finished")]
    with Session(seeded) as session:
        scored = session.exec(select(func.count(func.distinct(Verdict.response_id)))
                              .where(Verdict.run_id == run.id, Verdict.judge == "heuristic")).one()
        done = session.exec(select(func.count()).where(Response.run_id == run.id, Response.status == "done")).one()
        assert session.get(Run, run.id).config["pipeline"]["stage"] == "finished"
    assert scored == done == 6
    at.run()
    texts = progress_texts(at)
    assert f"Generation · run {run.id}: done - 6/6 (finished)" in texts
    assert f"{HEURISTIC_LINE}: 6/6 responses (finished)" in texts
    assert metric(at, "Done") == "6"


def test_launch_without_a_judge_generates_only(seeded):
    registered_models.ensure_baselines(seeded)
    at = open_page()
    at.multiselect(key="run_models").set_value(["baseline:always-refuse"])
    at.multiselect(key="run_judges").set_value([]).run()
    assert any("will be generated but not scored" in w.value for w in at.warning)
    at.button(key="run_launch").click().run()
    run = only_run(seeded)
    assert run.config["judge"] is None
    assert [line.stage for line in wait_for_pipeline(seeded, run.id)] == ["generation"]
    with Session(seeded) as session:
        assert session.exec(select(func.count()).select_from(Verdict)).one() == 0


def test_launch_is_refused_when_the_role_was_taken_away(seeded):
    registered_models.ensure_baselines(seeded)
    at = open_page()
    at.multiselect(key="run_models").set_value(["baseline:extractive"]).run()
    update_user(seeded, "tester", role="viewer")
    at.button(key="run_launch").click().run()
    assert not at.exception, at.exception
    assert any("may not launch an evaluation run" in e.value for e in at.error), [e.value for e in at.error]
    with Session(seeded) as session:
        assert session.exec(select(Run)).all() == []


def test_cancel_a_run_that_is_not_running(seeded):
    registered_models.ensure_baselines(seeded)
    run_id = runs.create_run(seeded, runs.RunOptions(models=["baseline:extractive"], judge="heuristic"))
    at = open_page()
    assert f"{HEURISTIC_LINE}: waiting for generation" in progress_texts(at)
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


DEAD_PID = 99_999_999  # above Linux's pid_max: never a live process

PROGRESS_CASES = [
    pytest.param("running", None, {}, [("generation", 0, 6, "running"), ("scoring", 0, 0, "waiting"),
                                       ("scoring", 0, 0, "waiting")], id="not-started"),
    pytest.param("done", {"stage": "scoring", "done": 4, "total": 6, "judge": "heuristic"}, {},
                 [("generation", 0, 6, "finished"), ("scoring", 4, 6, "running"), ("scoring", 0, 6, "waiting")],
                 id="first-judge-scoring"),
    pytest.param("done", {"stage": "scoring", "done": 2, "total": 6, "judge": "llm:j"}, {},
                 [("generation", 0, 6, "finished"), ("scoring", 6, 6, "finished"), ("scoring", 2, 6, "running")],
                 id="second-judge-scoring"),
    pytest.param("done", {"stage": "scoring", "done": 6, "total": 6, "judge": "llm:j"}, {},
                 [("generation", 0, 6, "finished"), ("scoring", 6, 6, "finished"), ("scoring", 6, 6, "running")],
                 id="last-judge-scored-summaries-refreshing"),
    pytest.param("cancelled", {"stage": "finished", "done": 1, "total": 1}, {},
                 [("generation", 0, 6, "finished"), ("scoring", 0, 0, "not scored"), ("scoring", 0, 0, "not scored")],
                 id="cancelled-not-scored"),
    pytest.param("done", {"stage": "scoring", "done": 4, "total": 6, "judge": "heuristic"}, {"pid": DEAD_PID},
                 [("generation", 0, 6, "finished"), ("scoring", 4, 6, "stopped"), ("scoring", 0, 6, "stopped")],
                 id="process-died-while-scoring"),
]


@pytest.mark.parametrize(("status", "pipeline", "extra", "expected"), PROGRESS_CASES)
def test_pipeline_progress_reads_the_run_row(seeded, status, pipeline, extra, expected):
    registered_models.ensure_baselines(seeded)
    run_id = runs.create_run(seeded, runs.RunOptions(models=["baseline:extractive"], judge="heuristic,llm:j"))
    with Session(seeded) as session:
        run = session.get(Run, run_id)
        run.status = status
        run.config = {**run.config, **extra, **({"pipeline": pipeline} if pipeline else {})}
        session.add(run)
        session.commit()
    lines = jobs.pipeline_progress(seeded, run_id)
    assert [line.judge for line in lines] == [None, "heuristic", "llm:j"]
    assert [(line.stage, line.done, line.total, line.state) for line in lines] == expected
