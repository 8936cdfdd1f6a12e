"""AppTests of the results pages on a small synthetic results set written through the real tables."""

from __future__ import annotations

import base64
import json

import numpy as np

import pytest
from streamlit.testing.v1 import AppTest

from pathlib import Path

from bench.make_synthetic_results import make_results
from core import results
from core.db import make_engine

TIMEOUT = 60
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def db_url(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('dash') / 'results.db'}"
    make_results(url, n_models=4, n_instances=90, seed=1)
    return url


@pytest.fixture
def app(db_url, monkeypatch):
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", db_url)

    def open_page(name: str) -> AppTest:
        at = AppTest.from_file(str(REPO / "pages" / f"{name}.py"), default_timeout=TIMEOUT)
        at.session_state["role"] = "analyst"
        return at.run()

    return open_page


@pytest.fixture(scope="module")
def expected(db_url):
    engine = make_engine(db_url)
    scores = results.prepare_scores(results.load_response_scores(engine, [1], "heuristic"))
    return scores, results.model_catalog(engine)


def values(arr) -> list:
    """A plotly JSON array: plain list, or a typed array {'dtype', 'bdata'} (plotly >= 6)."""
    if isinstance(arr, dict) and "bdata" in arr:
        return np.frombuffer(base64.b64decode(arr["bdata"]), dtype=np.dtype(arr["dtype"])).tolist()
    return list(arr)


def specs(at: AppTest) -> list[dict]:
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def test_leaderboard_traces_carry_model_means(app, expected):
    at = app("leaderboard")
    assert not at.exception, at.exception
    scores, _ = expected
    charts = specs(at)
    assert len(charts) == 3
    traces = {t["name"]: t for t in charts[0]["data"]}
    assert set(traces) == {"Faithfulness", "Answer Coverage", "Loose IAS", "Strict IAS"}
    means = scores.groupby("model")["loose_ias"].mean() * 100
    got = dict(zip(values(traces["Loose IAS"]["x"]), values(traces["Loose IAS"]["y"]), strict=True))
    assert got == pytest.approx(means.to_dict())
    table = at.dataframe[0].value
    assert "calibration baseline" in table["Group"].tolist()
    assert len(at.get("download_button")) == 3


def test_domains_radar_per_domain_and_heatmap(app, expected):
    at = app("domains")
    assert not at.exception, at.exception
    scores, _ = expected
    radar, heat = specs(at)
    first_model = radar["data"][0]["name"]
    first_domain = radar["layout"]["annotations"][0]["text"]
    row = scores[(scores["model"] == first_model) & (scores["domain"] == first_domain)]
    assert values(radar["data"][0]["r"])[:4] == pytest.approx([row[k].mean() * 100 for k in results.DOMAIN_METRICS])
    assert len(heat["data"][0]["y"]) == scores["domain"].nunique()


@pytest.mark.parametrize(
    ("level", "view", "y_key"),
    [
        pytest.param("category", "rate", "failure_rate", id="category-rate"),
        pytest.param("category", "normalised", "share_of_failures", id="category-normalised"),
        pytest.param("sub_dimension", "stacked", "failed", id="subdimension-stacked"),
    ],
)
def test_constraint_errors_views(app, db_url, level, view, y_key):
    at = app("constraint_errors")
    at.radio(key="ce_level").set_value(level)
    at.radio(key="ce_view").set_value(view)
    at.run()
    assert not at.exception, at.exception
    fig = specs(at)[0]
    engine = make_engine(db_url)
    counts = results.load_failure_counts(engine, [1], "heuristic")
    if level == "sub_dimension":
        counts = counts[counts["category"] == "persona"]
    rates = results.failure_rates(counts, level)
    trace = fig["data"][0]
    group = rates[rates[level] == rates[level].min()].set_index("model")[y_key] * (1 if view == "stacked" else 100)
    assert dict(zip(values(trace["x"]), values(trace["y"]), strict=True)) == pytest.approx(group.to_dict())
    assert fig["layout"]["barmode"] == ("group" if view == "rate" else "stack")
    # the fallback chooser shows the failing constraints of the first model with their reasons
    table = at.dataframe[0].value
    assert set(table["reason"]) == {"synthetic verdict"} and len(table) > 0
