"""The Stress tests page on the calibrated world: Δ heatmap, severity curves, mixed vs worst, drill-down to the
retrieved documents; analysts and viewers may open it."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.kb_corruption.conftest import MARKED, REPO
from tests.pages.signin import sign_in

TIMEOUT = 60


def _numbers(value):
    if isinstance(value, dict) and "bdata" in value:
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"])).tolist()
    return [_numbers(v) for v in value] if isinstance(value, list) else value


@pytest.fixture
def page(world, monkeypatch):
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")

    def open_as(role: str) -> AppTest:
        return sign_in(AppTest.from_file(str(REPO / "pages" / "stress_tests.py"), default_timeout=TIMEOUT), role).run()

    return open_as


def charts(at: AppTest) -> list[dict]:
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


@pytest.mark.parametrize("role", ["analyst", "viewer"])
def test_page_opens_for_results_readers(page, role):
    at = page(role)
    assert not at.exception, at.exception
    assert at.title[0].value == "Stress tests"
    assert any("heuristic (lexical, offline)" in c.value for c in at.caption)


def test_delta_heatmap_and_drill_down(page):
    at = page("analyst")
    at.selectbox(key="rs_delta_model").set_value(MARKED)
    at.selectbox(key="rs_drill_model").set_value(MARKED)
    at.selectbox(key="rs_drill_condition").set_value("factual_subtle")
    at.run()
    assert not at.exception, at.exception
    heatmap = next(c for c in charts(at) if c["data"][0]["type"] == "heatmap")
    z = np.array(_numbers(heatmap["data"][0]["z"]), dtype=float)
    assert z.tolist() == [[100.0] * 3, [0.0] * 3, [0.0] * 3, [0.0] * 3]
    assert "heuristic (lexical, offline)" in heatmap["layout"]["title"]["text"]
    titles = [c["layout"].get("title", {}).get("text", "") for c in charts(at)]
    assert any(t.startswith("Accuracy by severity") for t in titles) and any(t.startswith("Mixed") for t in titles)
    shown = " ".join(m.value for m in at.markdown)
    assert "[doc 1]" in shown and "factual · subtle" in shown and "own entry" in shown


def test_expert_is_refused(page):
    at = page("expert")
    assert not at.get("plotly_chart") and not at.title and at.error


PAPER_TABLES = [
    pytest.param("Table 1", "Contradiction injection (obvious)", id="table-1-model-by-15-conditions"),
    pytest.param("Table delta", "Numeric typo (subtle)", id="delta-per-type-and-severity"),
    pytest.param("Table gamma", "Relevance poisoning", id="gamma-per-pair-and-type"),
    pytest.param("Table mixed", "Worst condition", id="mixed-vs-worst"),
    pytest.param("Table severity", "Moderate", id="severity-curves"),
]


@pytest.mark.parametrize(("tab", "column"), PAPER_TABLES)
def test_paper_tables_are_on_the_page_with_their_downloads(page, tab, column):
    at = page("analyst")
    assert not at.exception, at.exception
    assert not next(t for t in at.tabs if t.label == tab).dataframe  # in a collapsed expander: built on request only
    at.toggle(key=f"rs_paper_kb_corruption_{tab.removeprefix('Table ')}_build").set_value(True).run()
    assert not at.exception, at.exception
    chosen = next(t for t in at.tabs if t.label == tab)
    frame = chosen.dataframe[0].value
    assert column in frame.columns and MARKED in " ".join(map(str, frame.iloc[:, 0]))
    labels = {b.proto.label for b in chosen.get("download_button")}
    assert {"Markdown", "CSV", "Latex"} <= labels
    assert any(c.value.startswith("States behind the table (summed over its cells): ") for c in chosen.caption)
