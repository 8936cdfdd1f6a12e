"""AppTest: on Run evaluation the protocol and set come first, 'all domains' is spelled out with its count, the run
launched is exactly the scope the form showed, and a budget below the estimate needs a confirmation naming its stop
point before Launch is enabled."""

from __future__ import annotations

import pytest
from sqlmodel import Session, func, select

from core.generation import jobs, models_admin, registered_models
from core.review.auth import create_user
from core.store.models import Response, Run
from tests.factories import add_model, seed_instances
from tests.generation.conftest import seed_qa
from tests.pages.test_run_evaluation_page import metric, open_page


@pytest.fixture
def seeded(engine, monkeypatch, tmp_path):
    monkeypatch.setenv("GAUNTLET_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    monkeypatch.setenv("GPT_X_KEY", "test-key")
    monkeypatch.setattr(jobs, "launch_in_background", lambda engine, run_id: 0)
    monkeypatch.setattr(models_admin, "reap_when_done", lambda pid: None)
    seed_qa(engine)
    seed_instances(engine, 4)
    registered_models.ensure_baselines(engine)
    add_model(engine, "gpt-x", "openai", settings={"api_key_env": "GPT_X_KEY"})
    create_user(engine, "tester", "admin", password="tester-pass-1")
    return engine


@pytest.mark.parametrize(("protocols", "conditions", "items", "domains"), [
    pytest.param([], [], 18, ["Admissions", "Energy", "Medical"], id="all-protocols"),
    pytest.param(["reference_qa"], [], 10, ["Admissions"], id="one-protocol"),
    pytest.param(["reference_qa"], ["", "closed_book"], 20, ["Admissions"], id="with-conditions"),
    pytest.param(["enterprise_rag"], [], 8, ["Energy", "Medical"], id="other-protocol"),
])
def test_the_run_launched_is_the_scope_the_form_showed(seeded, protocols, conditions, items, domains):
    at = open_page()
    at.multiselect(key="run_protocols").set_value(protocols).run()
    assert at.multiselect(key="run_domains").proto.placeholder.startswith(f"all {len(domains)} domains")
    at.multiselect(key="run_conditions").set_value(conditions)
    at.multiselect(key="run_models").set_value(["baseline:extractive", "baseline:always-refuse"]).run()
    assert metric(at, "Items") == str(items)
    assert any(f"= {items} items" in c.value for c in at.caption)
    at.button(key="run_launch").click().run()
    assert not at.exception, at.exception
    with Session(seeded) as session:
        run = session.exec(select(Run)).one()
        count = session.exec(select(func.count()).select_from(Response).where(Response.run_id == run.id)).one()
    assert count == items and run.config["domains"] == domains and run.config["protocols"] == protocols


@pytest.mark.parametrize(("budget", "asks"), [
    pytest.param(0.0, False, id="no-budget"),
    pytest.param(100.0, False, id="budget-above-estimate"),
    pytest.param(0.0001, True, id="budget-below-estimate"),
])
def test_a_budget_below_the_estimate_asks_for_a_confirmation_naming_the_stop_point(seeded, budget, asks):
    at = open_page()
    at.multiselect(key="run_models").set_value(["gpt-x"])
    at.number_input(key="run_budget").set_value(budget).run()
    boxes = [c for c in at.checkbox if c.key == "run_budget_confirmed"]
    assert any(c.value.startswith("Scope: all 2 protocols") and "= 9 items" in c.value for c in at.caption)
    assert bool(boxes) == asks
    assert at.button(key="run_launch").disabled == asks
    if asks:
        assert "stops after about 0 of 9 items" in boxes[0].label
        boxes[0].check().run()
        assert not at.button(key="run_launch").disabled
