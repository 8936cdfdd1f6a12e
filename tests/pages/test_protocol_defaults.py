"""Protocol pages open on the newest scored run that holds THEIR protocol (not simply the newest run), and show the
heuristic judge's Strict IAS banner only where Strict IAS is shown (issue 28 item 5)."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine
from sqlmodel import Session, select

from core.protocols.views import newest_run_holding
from core.store.models import Domain, Instance, Model, Response, Run, Verdict
from tests.pages import state_counts as sc
from tests.pages.test_dashboards import REPO

BANNER = "Strict IAS is mostly undetermined"


def _run_of(engine, protocol: str, name: str) -> int:
    """A newer run with one done, heuristically scored response to one `protocol` instance; returns its id."""
    with Session(engine) as session:
        domain = session.exec(select(Domain)).first()
        model = session.exec(select(Model)).first()
        run = Run(name=name, status="done")
        instance = Instance(uid=f"{protocol}-1", domain_id=domain.id, query="Which option?", protocol=protocol,
                            mode=None, reference={"answer_key": "A", "choices": {"A": "a", "B": "b"}})
        session.add_all([run, instance])
        session.flush()
        response = Response(run_id=run.id, model_id=model.id, instance_id=instance.id, status="done", text="A")
        session.add(response)
        session.flush()
        session.add(Verdict(response_id=response.id, run_id=run.id, judge="heuristic", metric="mcq_accuracy",
                            value=1.0, method="heuristic"))
        session.commit()
        return int(run.id)


@pytest.fixture(scope="module")
def runs_url(session_url_factory):
    """Run 1: EnterpriseRAG (synthetic, heuristic judge); run 2: one RAGStress response; run 3: one misleading-evidence
    response (the newest run)."""
    url = sc.synthetic_results(session_url_factory())
    engine = create_engine(url)
    assert [_run_of(engine, "kb_corruption", "stress"), _run_of(engine, "misleading_evidence", "misleading")] == [2, 3]
    engine.dispose()
    return url


@pytest.mark.parametrize(("protocol", "runs", "expected"), [
    pytest.param("enterprise_rag", [1, 2, 3], 1, id="enterprise-in-the-oldest"),
    pytest.param("kb_corruption", [1, 2, 3], 2, id="ragstress-in-the-middle"),
    pytest.param("misleading_evidence", [1, 2, 3], 3, id="misleading-in-the-newest"),
    pytest.param("kb_corruption", [1, 3], None, id="none-holds-it"),
])
def test_newest_run_holding(runs_url, protocol, runs, expected) -> None:
    engine = create_engine(runs_url)
    assert newest_run_holding(engine, protocol, runs) == expected
    engine.dispose()


@pytest.mark.parametrize(("page", "run", "banner"), [
    pytest.param("leaderboard", 1, True, id="leaderboard-enterprise-run-with-ias-banner"),
    pytest.param("domains", 1, True, id="domains-enterprise-run-with-ias-banner"),
    pytest.param("robustness", 1, True, id="robustness-enterprise-run"),
    pytest.param("constraint_errors", 1, True, id="constraint-errors-enterprise-run"),
    pytest.param("model_pairs", 1, True, id="model-pairs-enterprise-run"),
    pytest.param("stress_tests", 2, False, id="stress-tests-ragstress-run-no-ias-banner"),
    pytest.param("misleading_evidence", 3, False, id="misleading-evidence-its-run-no-ias-banner"),
])
def test_page_opens_on_the_newest_run_of_its_protocol(runs_url, monkeypatch, page, run, banner) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", runs_url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    at = sc.open_page(str(REPO / "pages" / f"{page}.py"))
    assert at.multiselect(key="results_runs_w").value == [run]
    assert any(BANNER in w.value for w in at.warning) is banner


@pytest.mark.parametrize(("metric", "mode"), [
    pytest.param("rejection", "gap", id="rejection-behind-the-gap-chart"),
    pytest.param("conflict_recognition", "conflict", id="recognition-behind-the-conflict-chart"),
])
def test_robustness_drills_down_to_the_responses(runs_url, monkeypatch, metric, mode) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", runs_url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    at = sc.open_page(str(REPO / "pages" / "robustness.py"))
    at.toggle(key="rb_drill_load").set_value(True).run()  # the drill-down reads the responses once switched on
    at.selectbox(key="rb_drill_metric").set_value(metric).run()
    rows = next(f.value for f in at.dataframe if "response_id" in f.value and metric in f.value)
    assert not rows.empty and set(rows["mode"]) == {mode}
    assert at.selectbox(key="rb_drill_pick").value == int(rows["response_id"].iloc[0])
