"""AppTest of the Run evaluation page: register and edit models (variables named, missing ones shown), launches
blocked by an unset variable or a failed preflight, named runs, the run just launched is the one watched, honest
outcome labels and retry of failed items from the page."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from sqlmodel import Session, select
from streamlit.testing.v1 import AppTest

from core.generation import models_admin, registered_models, runs
from core.review.auth import create_user
from core.store.models import Model, Run
from tests.app.test_run_admin import fail_every_item
from tests.e2e.harness import wait_until
from tests.factories import add_model, seed_instances
from tests.pages.test_run_evaluation_page import open_models, open_page

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "run_evaluation.py")


@pytest.fixture
def seeded(engine, monkeypatch, tmp_path):
    monkeypatch.setenv("GAUNTLET_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    monkeypatch.delenv("NOPE_URL", raising=False)
    seed_instances(engine, 4)
    create_user(engine, "tester", "admin", password="tester-pass-1")
    registered_models.ensure_baselines(engine)
    return engine


def click(at: AppTest, label: str) -> AppTest:
    next(b for b in at.button if b.label == label).click().run()
    assert not at.exception, at.exception
    return at


def model_row(engine, name: str) -> Model:
    with Session(engine) as session:
        return session.exec(select(Model).where(Model.name == name)).one()


def test_register_a_model_naming_its_variables(seeded):
    at = open_page()
    at.text_input(key="model_name_new").set_value("local-qwen")
    at.text_input(key="model_url_env_new").set_value("NOPE_URL")
    at.text_input(key="model_key_env_new").set_value("NOPE_KEY")
    click(at, "Save model")
    row = model_row(seeded, "local-qwen")
    assert (row.provider, row.model_name, row.settings) == (
        "openai_compatible", "local-qwen", {"base_url_env": "NOPE_URL", "api_key_env": "NOPE_KEY"})
    assert [s.value for s in at.success] == ["Saved model local-qwen."]
    warnings = " ".join(w.value for w in at.warning)
    assert "local-qwen cannot be called" in warnings and "NOPE_URL (endpoint URL)" in warnings
    assert "NOPE_KEY (API key)" in warnings


def test_the_edit_form_loads_the_model_and_keeps_other_settings(seeded):
    add_model(seeded, "gpt-x", "openai", price_in=1.5, settings={"reasoning_effort": "low", "api_key_env": "X_KEY"})
    at = open_models(open_page())
    at.selectbox(key="model_pick").set_value("gpt-x").run()
    assert at.selectbox(key="model_provider_gpt-x").value == "openai"
    assert at.text_input(key="model_key_env_gpt-x").value == "X_KEY"
    assert at.number_input(key="model_price_in_gpt-x").value == 1.5
    at.number_input(key="model_max_tokens_gpt-x").set_value(333)
    click(at, "Save model")
    row = model_row(seeded, "gpt-x")
    assert (row.max_output_tokens, row.price_input_per_mtok) == (333, 1.5)
    assert row.settings == {"reasoning_effort": "low", "api_key_env": "X_KEY"}


@pytest.mark.parametrize(("url", "saved"), [
    pytest.param("http://127.0.0.1:1/v1", True, id="valid-endpoint-saved"),
    pytest.param("127.0.0.1:1/v1", False, id="no-scheme-refused"),
    pytest.param("https://user:pw@host/v1", False, id="credentials-refused"),
])
def test_an_endpoint_url_is_edited_on_the_page_and_validated(seeded, url, saved):
    add_model(seeded, "remote", "openai_compatible", settings={"base_url_env": "NOPE_URL", "timeout_s": 3})
    at = open_models(open_page())
    at.selectbox(key="model_pick").set_value("remote").run()
    at.text_input(key="model_url_env_remote").set_value("")
    at.text_input(key="model_url_remote").set_value(url)
    click(at, "Save model")
    row = model_row(seeded, "remote")
    if saved:
        assert row.settings == {"base_url": url, "timeout_s": 3}
        assert url in at.dataframe[0].value["endpoint"].tolist()  # the models table shows where it calls
    else:
        assert row.settings == {"base_url_env": "NOPE_URL", "timeout_s": 3}
        assert any(e.value.startswith("Not saved: base_url:") for e in at.error)


def test_an_edited_endpoint_is_used_at_the_next_check_without_a_restart(seeded):
    from core.testing.fake_server import FakeLLMServer

    add_model(seeded, "remote", "openai_compatible", settings={"base_url": f"http://127.0.0.1:{_closed_port()}/v1",
                                                               "timeout_s": 3})
    server = FakeLLMServer().start()
    try:
        at = open_page()
        at.multiselect(key="run_models").set_value(["remote"]).run()
        at.button(key="run_preflight").click().run()
        assert any(e.value.startswith("remote: cannot reach") for e in at.error)
        open_models(at).selectbox(key="model_pick").set_value("remote").run()
        at.text_input(key="model_url_remote").set_value(f"{server.base_url}/v1")
        click(at, "Save model")
        at.button(key="run_preflight").click().run()
        assert any(s.value.startswith("remote: answered in") for s in at.success), [s.value for s in at.success]
        assert server.call_count == 1
    finally:
        server.stop()


def test_a_model_whose_variable_is_unset_cannot_be_launched(seeded):
    add_model(seeded, "remote", "openai_compatible", settings={"base_url_env": "NOPE_URL"})
    at = open_page()
    at.multiselect(key="run_models").set_value(["remote"]).run()
    assert any("remote cannot be called: NOPE_URL (endpoint URL) not set" in e.value for e in at.error)
    assert at.button(key="run_launch").disabled and at.button(key="run_preflight").disabled


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_failed_preflight_stops_the_launch(seeded, monkeypatch):
    monkeypatch.setenv("DOWN_URL", f"http://127.0.0.1:{_closed_port()}/v1")
    add_model(seeded, "down", "openai_compatible", settings={"base_url_env": "DOWN_URL", "timeout_s": 3})
    at = open_page()
    at.multiselect(key="run_models").set_value(["down", "baseline:extractive"]).run()
    at.button(key="run_launch").click().run()
    assert any(e.value.startswith("down: cannot reach http://127.0.0.1:") for e in at.error)
    assert any("Not launched" in e.value for e in at.error)
    with Session(seeded) as session:
        assert session.exec(select(Run)).all() == []


def test_the_run_just_launched_is_watched_and_named(seeded):
    older = runs.create_run(seeded, runs.RunOptions(models=["baseline:always-refuse"], name="older"))
    at = open_page()
    assert at.selectbox(key="run_selected").value == older
    at.text_input(key="run_name").set_value("fresh").run()
    at.multiselect(key="run_models").set_value(["baseline:extractive"]).run()
    at.button(key="run_launch").click().run()
    assert not at.exception, at.exception
    with Session(seeded) as session:
        newest = session.exec(select(Run).order_by(Run.id.desc())).first()
    assert newest.id != older and newest.name == "fresh"
    launched = f"Run {newest.id} launched in the background"
    assert any(launched in t.value for t in at.toast) and any(launched in s.value for s in at.success)
    assert at.selectbox(key="run_selected").value == newest.id


def test_a_fully_failed_run_says_failed_and_its_items_can_be_retried(seeded):
    run_id = runs.create_run(seeded, runs.RunOptions(models=["baseline:extractive"], judge="heuristic"))
    fail_every_item(seeded, run_id)
    at = open_page()
    assert any(m.value.endswith(f"Run {run_id}: failed") for m in at.markdown)
    assert f"run {run_id} · failed" in at.selectbox(key="run_selected").options
    at.button(key=f"run_retry_{run_id}").click().run()
    assert not at.exception, at.exception
    assert any("4 item(s) back to pending" in s.value for s in at.success)
    assert any("4 item(s) back to pending" in t.value for t in at.toast)  # kept through the page's rerun
    wait_until(lambda: models_admin.run_outcome(seeded, run_id) == "done", "the retried run", timeout=60)
    at.run()
    assert any(m.value.endswith(f"Run {run_id}: done") for m in at.markdown)
