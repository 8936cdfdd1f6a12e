"""The gold budget planner panel on Gold labels & adjudication (AppTest): it states the number and the instances,
and its button puts them into the experts' queue, re-checking the role server-side when clicked."""

from __future__ import annotations

import pytest
from sqlmodel import Session, func, select
from streamlit.testing.v1 import AppTest

from core.review.auth import update_user
from core.store.models import Assignment
from tests.app.test_write_matrix import ROOT
from tests.review.test_gold_plan import pick_a_over_judge_b, planned_run
from tests.workspace_factories import principal

PLAN_TAB = "Plan the next labels"  # the planner's tab (only the chosen tab of the page is drawn)


@pytest.fixture
def page(tmp_path, monkeypatch):
    s, _ = planned_run(tmp_path)
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", s.url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    at = AppTest.from_file(str(ROOT / "pages" / "adjudicate.py"), default_timeout=60)
    at.session_state["gauntlet_principal"] = principal("admin")
    at.session_state["adj_tab"] = PLAN_TAB
    at.run()
    assert not [d for d in at.dataframe if "inclusion probability" in d.value.columns]  # not built until opened
    at.toggle(key="plan_open").set_value(True)
    return s, at.run()


def _assignments(s) -> int:
    with Session(s.engine) as session:
        return session.exec(select(func.count()).select_from(Assignment)).one()


def _planned(at: AppTest) -> AppTest:
    at.button(key="plan_compute").click().run()
    assert not at.exception, at.exception
    return at


def test_the_panel_states_the_number_and_the_instances(page) -> None:
    _, at = page
    assert not at.exception, at.exception
    assert [at.selectbox(key=k).value for k in ("plan_model_a", "plan_model_b")] == ["model-a", "model-b"]
    at = _planned(at)
    summary = next(i.value for i in at.info if "model-a vs model-b" in i.value)
    assert "first uniform batch" in summary
    table = next(d.value for d in at.dataframe if "inclusion probability" in d.value.columns)
    assert len(table) > 0 and table["inclusion probability"].between(0, 1).all()


@pytest.mark.parametrize(("role", "writes"), [pytest.param("admin", True, id="admin-enqueues"),
                                              pytest.param("analyst", False, id="demoted-to-analyst-refused"),
                                              pytest.param("expert", False, id="demoted-to-expert-refused")])
def test_the_button_enqueues_only_with_the_role(page, role: str, writes: bool) -> None:
    s, at = page
    at = _planned(at)
    table = next(d.value for d in at.dataframe if "inclusion probability" in d.value.columns)
    rows = int((table["domain"] == "Energy").sum())  # the experts cover Energy only: the rest is reported
    update_user(s.engine, "admin", role=role)
    at.button(key="plan_enqueue").click().run()
    assert not at.exception, at.exception
    if writes:
        assert _assignments(s) > 0 and any(f"Queued {2 * rows} responses" in m.value for m in at.success)
    else:
        assert _assignments(s) == 0
        assert any(f"Your role ({role}) may not draw a gold-label sample" in e.value for e in at.error)


def test_the_pair_defaults_to_the_pickers_pick_and_runner_up(tmp_path, monkeypatch) -> None:
    s, responses = planned_run(tmp_path)
    pick_a_over_judge_b(s, responses)
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", s.url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    at = AppTest.from_file(str(ROOT / "pages" / "adjudicate.py"), default_timeout=60)
    at.session_state["gauntlet_principal"] = principal("admin")
    at.session_state["adj_tab"] = PLAN_TAB
    at.run()
    at.toggle(key="plan_open").set_value(True).run()
    at.selectbox(key="plan_metric").set_value("conflict_recognition").run()
    assert not at.exception, at.exception
    assert [at.selectbox(key=k).value for k in ("plan_model_a", "plan_model_b")] == ["model-a", "model-b"]
    assert any("recommended pick and model-b its runner-up" in c.value for c in at.caption)


def test_draw_a_sample_quotes_the_benchmark_for_every_strategy(page) -> None:
    from core.review.gold import SAMPLING_STRATEGIES, design_evidence

    _, at = page
    at.session_state["adj_tab"] = "Draw a sample"
    captions = [c.value for c in at.run().caption]
    evidence = design_evidence()
    for strategy in SAMPLING_STRATEGIES:  # the default's gain and each alternative's loss, from data/sampling_designs
        shown = next(c for c in captions if c.startswith(evidence[strategy][:12]))
        assert ("NOT narrower: not the default" in shown) == (strategy != SAMPLING_STRATEGIES[0])
        assert "× the labels" in shown and "With 10, 20 labels" in shown  # below the grid: measured there too
    default = next(c for c in captions if c.startswith(evidence[SAMPLING_STRATEGIES[0]][:12]))
    assert "NOT narrower below 30 labels" not in default and "interval would be narrower there" in default
