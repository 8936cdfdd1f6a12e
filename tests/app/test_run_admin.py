"""Running evaluations from the app (core.generation.models_admin): which variables a model needs, preflight calls
with readable errors on the loopback fake server, honest outcome labels, retry of failed items, reaped jobs."""

from __future__ import annotations

import os
import socket

import pytest
from sqlmodel import Session, select

from core.generation import jobs, models_admin, registered_models, run_progress, runs
from core.generation.providers.base import ModelConfig, ProviderError
from core.review.auth import PermissionDenied, create_user
from core.services import runs as run_services
from core.store.models import Model, Response, Run
from core.testing.fake_server import FakeLLMServer, ScriptRule
from tests.e2e.harness import wait_until
from tests.factories import seed_instances
from tests.workspace_factories import principal

ADMIN = principal("admin")


def compat(**settings) -> ModelConfig:
    return ModelConfig(name="m", provider="openai_compatible", model_name="m", settings=settings)


@pytest.fixture
def env(monkeypatch, tmp_path):
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "X_URL", "X_KEY"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


VARIABLE_CASES = [
    pytest.param(ModelConfig(name="g", provider="openai"), {}, ["OPENAI_API_KEY (API key)"], id="openai-no-key"),
    pytest.param(ModelConfig(name="g", provider="openai"), {"OPENAI_API_KEY": "sk-test-123456"}, [], id="openai-key"),
    pytest.param(ModelConfig(name="c", provider="anthropic"), {}, ["ANTHROPIC_API_KEY (API key)"], id="anthropic"),
    pytest.param(compat(), {}, ["an endpoint: set 'Endpoint URL' (settings base_url) or 'Endpoint URL variable' "
                                "(settings base_url_env)"], id="no-endpoint"),
    pytest.param(compat(base_url_env="X_URL"), {}, ["X_URL (endpoint URL)"], id="endpoint-unset"),
    pytest.param(compat(base_url_env="X_URL"), {"X_URL": "http://127.0.0.1:1/v1"}, [], id="endpoint-set"),
    pytest.param(compat(base_url_env="X_URL", api_key_env="X_KEY"), {"X_URL": "http://h/v1"}, ["X_KEY (API key)"],
                 id="named-key-unset"),
    pytest.param(compat(base_url="http://127.0.0.1:1/v1"), {}, [], id="fixed-url"),
    pytest.param(ModelConfig(name="b", provider="baseline", is_baseline=True), {}, [], id="baseline"),
]


@pytest.mark.parametrize(("config", "variables", "missing"), VARIABLE_CASES)
def test_missing_variables(env, config, variables, missing):
    for name, value in variables.items():
        env.setenv(name, value)
    assert models_admin.missing_variables(config) == missing


@pytest.mark.parametrize(
    ("config", "message"),
    [
        pytest.param(compat(base_url_env="X URL"), "not a variable name", id="bad-variable-name"),
        pytest.param(compat(api_key="sk-live-123"), "looks like a secret", id="secret-in-settings"),
        pytest.param(ModelConfig(name="baseline:x", provider="openai"), "reserved", id="reserved-name"),
        pytest.param(ModelConfig(name="x", provider="nope"), "nope", id="unknown-provider"),
        pytest.param(ModelConfig(name=" ", provider="openai"), "name: required", id="empty-name"),
        pytest.param(compat(base_url="127.0.0.1:8000/v1"), "must start with http", id="url-without-scheme"),
        pytest.param(compat(base_url="ftp://h/v1"), "must start with http", id="url-other-scheme"),
        pytest.param(compat(base_url="http:///v1"), "no host", id="url-without-host"),
        pytest.param(compat(base_url="https://user:pw@h/v1"), "no user, password", id="url-with-credentials"),
        pytest.param(compat(base_url="https://h/v1?api_key=x"), "no user, password, query", id="url-with-query"),
        pytest.param(compat(base_url="http://h:99999/v1"), "invalid port", id="url-bad-port"),
        pytest.param(compat(base_url="http://h/v1", base_url_env="X_URL"), "not both", id="url-and-variable"),
    ],
)
def test_models_that_cannot_be_registered(config, message):
    with pytest.raises((ValueError, KeyError), match=message):
        models_admin.check_model(config)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def fake():
    server = FakeLLMServer().start()
    yield server
    server.stop()


@pytest.fixture
def faulty():
    server = FakeLLMServer(script=[ScriptRule(fault="500")]).start()
    yield server
    server.stop()


def test_preflight_reports_each_model_readably(engine, env, fake, faulty):
    create_user(engine, "admin", "admin", password="admin-pass-1")
    env.setenv("OK_URL", f"{fake.base_url}/v1")
    env.setenv("DOWN_URL", f"http://127.0.0.1:{_closed_port()}/v1")
    env.setenv("BAD_URL", f"{faulty.base_url}/v1")
    for name, variable in (("ok", "OK_URL"), ("down", "DOWN_URL"), ("broken", "BAD_URL"), ("unset", "UNSET_URL")):
        run_services.save_model(engine, ADMIN, compat(base_url_env=variable, timeout_s=5).model_copy(
            update={"name": name, "model_name": name}))
    registered_models.ensure_baselines(engine)
    results = {r.model: r for r in run_services.preflight(
        engine, ADMIN, ["ok", "down", "broken", "unset", "baseline:extractive"])}
    assert results["ok"].ok and results["ok"].message.startswith("answered in")
    assert results["baseline:extractive"].ok
    assert not results["down"].ok and results["down"].message.startswith("cannot reach http://127.0.0.1:")
    assert not results["broken"].ok and "HTTP 500" in results["broken"].message
    assert not results["unset"].ok and results["unset"].message.startswith("not set: UNSET_URL (endpoint URL)")
    assert fake.call_count == 1  # one tiny call, nothing recorded in a run


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        pytest.param("connection", "cannot reach http://h/v1", id="connection"),
        pytest.param("timeout", "no answer from http://h/v1 within 20 s", id="timeout"),
        pytest.param("http_401", "http://h/v1 refused the key in X_KEY", id="unauthorised"),
        pytest.param("http_404", "model 'm' or its API path not found at http://h/v1", id="not-found"),
    ],
)
def test_errors_are_explained(env, kind, expected):
    env.setenv("X_URL", "http://h/v1")
    config = compat(base_url_env="X_URL", api_key_env="X_KEY")
    assert models_admin.explain(ProviderError("boom", retryable=False, kind=kind), config).startswith(expected)


def _snap(status: str, done: int, failed: int, pending: int = 0) -> run_progress.RunProgress:
    return run_progress.RunProgress(1, done + failed + pending, done, failed, pending, 0, 0.0, 1.0, status)


GEN = jobs.StageLine("generation", None, 0, 0, "finished")
SCORING = jobs.StageLine("scoring", "heuristic", 1, 4, "running")
STOPPED = jobs.StageLine("scoring", "heuristic", 1, 4, "stopped")
OUTCOMES = [
    pytest.param(_snap("done", 4, 0), [GEN], "done", id="done"),
    pytest.param(_snap("done", 3, 1), [GEN], "done with failures", id="some-failed"),
    pytest.param(_snap("done", 0, 4), [GEN], "failed", id="every-item-failed"),
    pytest.param(_snap("cancelled", 1, 0, 3), [GEN], "cancelled", id="cancelled"),
    pytest.param(_snap("budget_stopped", 1, 0, 3), [GEN], "stopped at the budget", id="budget"),
    pytest.param(_snap("running", 1, 0, 3), [GEN], "generating", id="generating"),
    pytest.param(_snap("pending", 0, 0, 4), [GEN], "waiting to start", id="pending"),
    pytest.param(_snap("done", 4, 0), [GEN, SCORING], "scoring", id="scoring"),
    pytest.param(_snap("done", 4, 0), [GEN, STOPPED], "stopped (its process ended before the run finished)",
                 id="process-died"),
]


@pytest.mark.parametrize(("snapshot", "lines", "expected"), OUTCOMES)
def test_outcomes_are_honest(snapshot, lines, expected):
    assert models_admin.outcome(snapshot, lines) == expected


def fail_every_item(engine, run_id: int) -> None:
    """Mark every item of the run failed ('timeout') and the run done, as a run against a dead endpoint ends."""
    with Session(engine) as session:
        for row in session.exec(select(Response).where(Response.run_id == run_id)).all():
            row.status, row.error = "failed", "timeout"
            session.add(row)
        run = session.get(Run, run_id)
        run.status = "done"
        session.add(run)
        session.commit()


def test_retry_failed_items_runs_them_again_and_the_job_is_reaped(engine, env, tmp_path):
    env.setenv("GAUNTLET_LOG_DIR", str(tmp_path / "logs"))
    seed_instances(engine, 3)
    create_user(engine, "admin", "admin", password="admin-pass-1")
    create_user(engine, "ana", "analyst", password="ana-pass-123")
    registered_models.ensure_baselines(engine)
    run_id = runs.create_run(engine, runs.RunOptions(models=["baseline:extractive"], judge="heuristic"))
    fail_every_item(engine, run_id)
    assert models_admin.run_outcome(engine, run_id) == "failed"
    with pytest.raises(PermissionDenied):
        run_services.retry_failed_items(engine, principal("ana"), run_id)
    count, pid = run_services.retry_failed_items(engine, ADMIN, run_id)
    assert count == 3 and pid
    wait_until(lambda: models_admin.run_outcome(engine, run_id) == "done", "the retried run")
    wait_until(lambda: not os.path.exists(f"/proc/{pid}"), "the job to be reaped", timeout=15)
    assert run_services.retry_failed_items(engine, ADMIN, run_id) == (0, None)


def test_launch_reaps_its_process_without_anyone_watching(engine, env, tmp_path):
    env.setenv("GAUNTLET_LOG_DIR", str(tmp_path / "logs"))
    seed_instances(engine, 2)
    create_user(engine, "admin", "admin", password="admin-pass-1")
    registered_models.ensure_baselines(engine)
    run_id, pid = run_services.launch(engine, ADMIN, runs.RunOptions(models=["baseline:always-refuse"], name="r"))
    wait_until(lambda: runs.get_run(Session(engine), run_id).config.get("pipeline", {}).get("stage") == "finished",
               "the pipeline")
    wait_until(lambda: not os.path.exists(f"/proc/{pid}"), "the job to be reaped", timeout=15)  # a zombie keeps it
    assert models_admin.active_runs(engine) == []
    assert [name for _, name in models_admin.run_choices(engine)] == [f"run {run_id} · r · done"]


def test_saving_a_model_needs_the_role(engine):
    create_user(engine, "ana", "analyst", password="ana-pass-123")
    with pytest.raises(PermissionDenied, match="may not register models"):
        run_services.save_model(engine, principal("ana"), compat(base_url_env="X_URL"))
    with Session(engine) as session:
        assert session.exec(select(Model)).all() == []


@pytest.mark.parametrize("url", [pytest.param("http://127.0.0.1:8000/v1", id="http-loopback"),
                                 pytest.param("https://llm.example.org/v1", id="https-host")])
def test_endpoint_urls_that_are_accepted(url):
    models_admin.check_model(compat(base_url=url))


def test_a_secrets_file_edit_takes_effect_without_a_restart(env, tmp_path):
    from core.config import get_secret

    secrets = tmp_path / "secrets.toml"
    env.setenv("GAUNTLET_SECRETS_FILE", str(secrets))
    assert get_secret("X_URL") is None
    secrets.write_text('X_URL = "http://127.0.0.1:1/v1"\n')
    assert get_secret("X_URL") == "http://127.0.0.1:1/v1"
    secrets.write_text('X_URL = "http://127.0.0.1:22/v1"\n')
    assert get_secret("X_URL") == "http://127.0.0.1:22/v1"
    assert models_admin.missing_variables(compat(base_url_env="X_URL")) == []


@pytest.mark.parametrize(
    ("failed", "outcome"),
    [pytest.param(False, "waiting to start", id="pending-run"), pytest.param(True, "failed", id="failed-run")],
)
def test_run_choices_hand_their_progress_to_the_watch_panel(engine, env, monkeypatch, failed, outcome):
    """The Run evaluation page decides each run's outcome and then draws the watched run: the panel's first pass
    uses the snapshot and stage lines the outcome was decided from instead of reading them again."""
    from streamlit.testing.v1 import AppTest

    seed_instances(engine, 2)
    registered_models.ensure_baselines(engine)
    run_id = runs.create_run(engine, runs.RunOptions(models=["baseline:extractive"], judge="heuristic"))
    if failed:
        fail_every_item(engine, run_id)
    read: models_admin.Progress = {}
    labels = dict(models_admin.run_choices(engine, read=read))
    assert labels[run_id].endswith(outcome) and set(read) == {run_id}
    snap, lines = read[run_id]
    assert snap == run_progress.progress_snapshot(engine, run_id) and lines == jobs.pipeline_progress(engine, run_id)

    def panel() -> None:
        import streamlit as st

        from ui.run_admin import watch_panel

        watch_panel(st.session_state["who"], st.session_state["run"], st.session_state["read"])

    calls = []
    monkeypatch.setattr(run_progress, "progress_snapshot", lambda *a, **k: calls.append(a) or snap)
    for given, reads in ((read, 0), ({}, 1)):
        at = AppTest.from_function(panel, default_timeout=60)
        at.session_state["who"], at.session_state["run"], at.session_state["read"] = ADMIN, run_id, given
        calls.clear()
        at.run()
        assert not at.exception, at.exception
        assert len(calls) == reads and any(f"Run {run_id}: {outcome}" in m.value for m in at.markdown)


def test_run_choices_read_every_run_at_once_and_say_what_run_outcome_says(engine, env):
    """The picker reads the recent runs in one query and counts their items in one GROUP BY (not four reads per
    run); each label and each handed-over snapshot equal what one run's own read gives (pending, failed, done)."""
    from sqlalchemy import event

    seed_instances(engine, 2)
    registered_models.ensure_baselines(engine)
    made = [runs.create_run(engine, runs.RunOptions(models=["baseline:extractive"], judge="heuristic", name=name))
            for name in ("pending", "failed", "done")]
    fail_every_item(engine, made[1])
    with Session(engine) as session:
        session.get(Run, made[2]).status = "done"
        session.commit()
    counted: list[str] = []

    def count(conn, cursor, statement, *rest) -> None:
        if "FROM response" in statement:
            counted.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    read: models_admin.Progress = {}
    labels = models_admin.run_choices(engine, read=read)
    event.remove(engine, "before_cursor_execute", count)
    assert len(counted) == 1, counted
    assert labels == [(r, f"run {r} · {name} · {models_admin.run_outcome(engine, r)}")
                      for r, name in zip(made[::-1], ("done", "failed", "pending"), strict=True)]
    assert {r: snap for r, (snap, _) in read.items()} == {r: run_progress.progress_snapshot(engine, r) for r in made}
    assert {r: lines for r, (_, lines) in read.items()} == {r: jobs.pipeline_progress(engine, r) for r in made}
