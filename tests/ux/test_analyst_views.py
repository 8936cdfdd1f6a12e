"""For analysts, on a real first-start run (baselines answered the bundled sample, heuristic judge): the exact prompt
that was sent, every judge's reasons side by side, several models' responses side by side, and filters in the URL."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import Session, select
from streamlit.testing.v1 import AppTest

from core import first_start
from core.analysis.responses import instance_responses, judges_side_by_side, prompt_sent
from core.commands.data import SAMPLE_DOMAINS, SAMPLE_FILE
from core.generation.run_prompts import instance_prompt
from core.ingest.io import import_file
from core.ingest.sets import benchmark_sets, import_set_file
from core.review.auth import Principal, now_utc
from core.store.db import make_engine
from core.store.models import Constraint, LLMCall, Response, Verdict
from ui.auth import SESSION_KEY

ROOT = Path(__file__).resolve().parents[2]
OTHER_JUDGE = "llm:judge-b"


@pytest.fixture(scope="module")
def template(session_url_factory) -> str:
    url = session_url_factory()
    engine = make_engine(url)
    assert import_file(engine, SAMPLE_FILE, domains_path=SAMPLE_DOMAINS, author="sample").ok
    assert first_start.ensure_first_start_run(engine) is not None
    engine.dispose()
    return url


@pytest.fixture
def db(template, backend_url_factory, monkeypatch):
    url = backend_url_factory(template=template)
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    engine = make_engine(url)
    yield engine
    engine.dispose()


def _first_response(engine) -> Response:
    with Session(engine) as s:
        return s.exec(select(Response).where(Response.status == "done").order_by(Response.id)).first()


def test_prompt_sent_is_the_stored_call(db):
    response = _first_response(db)
    sent = prompt_sent(db, response.id)
    with Session(db) as s:
        call = s.get(LLMCall, response.cache_key)
        rebuilt, _ = instance_prompt(s, response.instance_id, "stored", 0, response.condition)
    assert sent.source == "sent" and sent.messages == call.request["messages"]
    assert [m["content"] for m in sent.messages] == [m.content for m in rebuilt]  # the runner sent exactly this
    assert sent.parameters["temperature"] == 0.0


def test_prompt_without_a_stored_call_is_rebuilt_and_says_so(db):
    response = _first_response(db)
    with Session(db) as s:
        s.delete(s.get(LLMCall, response.cache_key))
        s.commit()
    sent = prompt_sent(db, response.id)
    assert sent.source == "rebuilt" and "rebuilt from the instance" in sent.note
    assert [m["role"] for m in sent.messages] == ["system", "user"]


def _second_judge(db, response: Response) -> None:
    with Session(db) as s:
        constraints = s.exec(select(Constraint).where(Constraint.instance_id == response.instance_id)).all()
        for c in constraints:
            s.add(Verdict(response_id=response.id, run_id=response.run_id, judge=OTHER_JUDGE, metric="constraint",
                          constraint_id=c.id, passed=True, method="batched", reason=f"B says {c.cid} holds"))
        s.add(Verdict(response_id=response.id, run_id=response.run_id, judge=OTHER_JUDGE, metric="faithfulness",
                      value=0.5, method="single", reason="half the claims are supported"))
        s.commit()


def test_judges_side_by_side(db):
    response = _first_response(db)
    _second_judge(db, response)
    table = judges_side_by_side(db, response.id).set_index("item")
    assert {"heuristic (lexical, offline)", OTHER_JUDGE, f"{OTHER_JUDGE} · reason"} <= set(table.columns)
    assert table.loc["c1", f"{OTHER_JUDGE} · reason"] == "B says c1 holds" and table.loc["c1", OTHER_JUDGE] == "pass"
    assert table.loc["faithfulness", OTHER_JUDGE] == "50%"
    assert table.loc["faithfulness", "heuristic (lexical, offline)"] != ""


def page(name: str, **params: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / f"{name}.py"), default_timeout=60)
    now = now_utc()
    at.session_state[SESSION_KEY] = Principal("ana", "analyst", (), now, now)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def test_compare_page_opens_a_linked_response_side_by_side(db):
    response = _first_response(db)
    _second_judge(db, response)
    at = page("compare_responses", response=str(response.id))
    assert at.selectbox(key="cmp_instance").value == response.instance_id
    models = {r.model for r in instance_responses(db, response.instance_id)}
    shown = "\n".join(m.value for m in at.markdown)
    assert all(f"**{m}**" in shown for m in models) and len(models) == 2
    codes = [c.value for c in at.code]
    assert any("Answer the user's question" in c or "documents" in c.lower() for c in codes)  # the prompts sent
    assert at.query_params["instance"] == str(response.instance_id)
    assert set(at.query_params["responses"].split(",")) == {str(r.response_id) for r in instance_responses(db, response.instance_id)}
    judges = at.dataframe[-1].value
    assert OTHER_JUDGE in judges.columns and "heuristic (lexical, offline)" in judges.columns


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        pytest.param({"subset": "gap", "judge": "heuristic"}, {"results_subset": "gap", "results_judge": "heuristic"},
                     id="subset-and-judge"),
        pytest.param({"subset": "nonsense"}, {"results_subset": "all"}, id="unknown-value-ignored"),
        pytest.param({"accepted": "1"}, {"results_accepted": True}, id="accepted-only"),
    ],
)
def test_a_link_reopens_the_filtered_view(db, params, expected):
    at = page("leaderboard", **params)
    for key, value in expected.items():
        widget = at.sidebar.toggle(key=key) if key == "results_accepted" else at.sidebar.selectbox(key=key)
        assert widget.value == value
    kept = {k: v for k, v in params.items() if v != "nonsense"}
    assert {k: at.query_params[k] for k in kept} == kept and at.query_params.get("subset") != "nonsense"
    at.sidebar.selectbox(key="results_subset").set_value("conflict").run()
    assert at.query_params["subset"] == "conflict"


def test_set_and_accepted_filters_narrow_the_leaderboard(db):
    assert import_set_file(db, SAMPLE_FILE, "sample").ok  # the instances the run answered, unchanged
    assert import_set_file(db, ROOT / "tests" / "fixtures" / "mini.jsonl", "mini").ok  # nothing of it was run
    ids = {s.name: s.id for s in benchmark_sets(db)}
    at = page("leaderboard")
    full = at.dataframe[0].value
    at.sidebar.selectbox(key="results_set").set_value(ids["sample"]).run()
    assert at.dataframe[0].value.equals(full) and "set sample" in at.caption[1].value
    assert at.query_params["set"] == str(ids["sample"])
    at.sidebar.selectbox(key="results_set").set_value(ids["mini"]).run()
    assert not at.dataframe and any("No scored responses match" in i.value for i in at.info)
    at.sidebar.selectbox(key="results_set").set_value(None).run()
    at.sidebar.toggle(key="results_accepted").set_value(True).run()  # no instance of the sample is accepted yet
    assert not at.dataframe and "accepted instances only" in at.caption[1].value
    assert at.query_params["accepted"] == "1" and "set" not in at.query_params


def _detail_script() -> None:
    import streamlit as st

    from ui.drilldown import response_detail

    response_detail(st.session_state["rid"], "heuristic", "t")


@pytest.mark.parametrize(
    ("tab", "judges_drawn", "prompt_drawn"),
    [
        pytest.param(None, False, False, id="first-render-verdicts-only"),
        pytest.param("All judges side by side", True, False, id="judges-tab-chosen"),
        pytest.param("Prompt sent", False, True, id="prompt-tab-chosen"),
    ],
)
def test_drilldown_reads_judges_and_prompt_when_their_tab_is_chosen(db, tab, judges_drawn, prompt_drawn):
    response = _first_response(db)
    _second_judge(db, response)
    at = AppTest.from_function(_detail_script, default_timeout=60)
    at.session_state["rid"] = response.id
    at.run()
    if tab is not None:
        at.session_state[f"t_tabs_{response.id}"] = tab
        at.run()
    assert not at.exception, at.exception
    assert [t.label for t in at.tabs] == ["Verdicts", "All judges side by side", "Prompt sent"]
    assert len(at.tabs[0].dataframe) == 2  # the chosen judge's constraint and metric verdicts, always drawn
    judges = at.tabs[1].dataframe
    assert bool(judges) == judges_drawn
    if judges_drawn:
        assert OTHER_JUDGE in judges[0].value.columns
    assert bool(at.tabs[2].code) == prompt_drawn
