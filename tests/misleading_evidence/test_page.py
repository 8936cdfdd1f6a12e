"""The Misleading evidence page on the calibration runs (AppTest), the evidence drill-down and its escaping."""

from __future__ import annotations

import asyncio
import json

import pytest
from streamlit.testing.v1 import AppTest

from core.commands.data import SAMPLE_FILE
from core.generation import registered_models, runner, runs
from core.generation.ratelimit import ManualClock
from core.ingest.io import import_file
from core.pipeline import score_and_summarise
from core.protocols.misleading_evidence import analysis as misleading_evidence
from core.store.db import make_engine
from tests.misleading_evidence.conftest import repo_path
from tests.pages.signin import sign_in
from tests.pages.test_dashboards import values

# One xdist worker builds the session-scoped fixture these modules share (built once, not once per worker)
pytestmark = pytest.mark.xdist_group("misleading_evidence-calibration")


@pytest.fixture
def page(calibration, monkeypatch):
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", calibration.url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    at = sign_in(AppTest.from_file(str(repo_path("pages", "misleading_evidence.py")), default_timeout=60), "analyst")
    return at.run()


def test_bars_scatter_audit_and_drilldown(page, calibration) -> None:
    at = page
    assert not at.exception, at.exception
    charts = [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
    assert len(charts) == 2
    bars = {t["name"]: t for t in charts[0]["data"]}
    assert len(bars) == 6
    follower = [i for i, x in enumerate(bars["prioritise the documents · end"]["x"]) if x.startswith("follower")]
    assert values(bars["prioritise the documents · end"]["y"])[follower[0]] == 100.0
    assert bars["prioritise the documents · end"]["x"][follower[0]] == "follower (n=4†)"  # HotpotQA, shown first
    assert "heuristic (lexical, offline)" in charts[0]["layout"]["yaxis"]["title"]["text"]
    points = {name: y for trace in charts[1]["data"] for name, y in zip(trace["text"], values(trace["y"]), strict=True)}
    assert points["follower"] == 100.0 and points["ignorer"] == 0.0

    at.selectbox(key="rs_a").set_value("ckpt-a").run()
    at.selectbox(key="rs_b").set_value("ckpt-b").run()
    audit = next(df.value for df in at.dataframe if "outcome" in df.value.columns)
    row = audit[(audit["outcome"] == "beneficial correction")].iloc[0]
    assert (row["count_a"], row["count_b"]) == (0, 1)  # HotpotQA (questions 0-3): only ckpt-b's question 3

    at.selectbox(key="rs_model").set_value("follower").run()
    marked = [m.value for m in at.markdown if "<mark>" in m.value]
    assert len(marked) == 2  # clean and misleading evidence of the chosen position
    uid = at.selectbox(key="rs_uid").value
    wrong = next(i for i in calibration.instances if i.id == uid).reference.wrong_answers[0]
    assert wrong in marked[1] and "<del>" in marked[1]
    assert len(at.code) == 3  # the model's answers closed book, with clean and with misleading evidence

    paper = next(df.value for df in at.dataframe if "Dataset · model" in df.value.columns)
    assert len(paper) == 15  # 3 datasets x (4 models + their mean)
    assert at.selectbox(key="rs_dataset").options == ["HotpotQA (en)", "MedQA (en)", "MedQA (zh)"]
    at.selectbox(key="rs_dataset").set_value("MedQA (zh)").run()
    bars = {t["name"]: t for t in json.loads(at.get("plotly_chart")[0].proto.spec)["data"]}
    assert "follower (n=3†)" in bars["prioritise the documents · end"]["x"]


def test_no_misleading_evidence_runs_says_what_to_do(db_url, monkeypatch) -> None:
    engine = make_engine(db_url)
    registered_models.ensure_baselines(engine)
    assert import_file(engine, SAMPLE_FILE).ok  # an EnterpriseRAG-only run: nothing for this page
    run_id = runs.create_run(engine, runs.RunOptions(models=["baseline:always-refuse"], limit=2))
    asyncio.run(runner.execute_run(engine, run_id, clock=ManualClock()))
    asyncio.run(score_and_summarise(engine, run_id, ["heuristic"]))
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    at = sign_in(AppTest.from_file(str(repo_path("pages", "misleading_evidence.py")), default_timeout=60),
                 "viewer").run()
    assert not at.exception, at.exception
    assert any("gauntlet misleading-evidence build" in i.value for i in at.info)
    assert not at.get("plotly_chart")


@pytest.mark.parametrize(("document", "expected"), [
    pytest.param({"before_span": "It stands at ", "span": "York", "after_span": ".", "replaced": "Leeds"},
                 "It stands at <mark>York</mark> <del>Leeds</del>.", id="misleading"),
    pytest.param({"before_span": "At ", "span": "Leeds", "after_span": ".", "replaced": ""},
                 "At <mark>Leeds</mark>.", id="clean"),
    pytest.param({"before_span": "<script>alert(1)</script> ", "span": "<b>x</b>", "after_span": " <img src=x>",
                  "replaced": "</mark><script>"},
                 "&lt;script&gt;alert(1)&lt;/script&gt; <mark>&lt;b&gt;x&lt;/b&gt;</mark> "
                 "<del>&lt;/mark&gt;&lt;script&gt;</del> &lt;img src=x&gt;", id="untrusted-escaped"),
])
def test_edit_markdown_escapes_untrusted_text(document, expected) -> None:
    assert misleading_evidence.edit_markdown(document) == expected
