"""The RAG abilities page on the calibrated LIT-RAGBench world: charts carry the read model's numbers, the judge is
named, en and ja sit side by side, the drill-down shows the shuffled context and the judge's reasons."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.review.auth import Principal, now_utc
from tests.lit_ragbench.conftest import GOLD, HEURISTIC, JUDGE, REFUSE, REPO
from tests.pages.test_dashboards import specs, values
from ui.auth import SESSION_KEY

# One xdist worker builds the session-scoped fixture these modules share (built once, not once per worker)
pytestmark = pytest.mark.xdist_group("lit_ragbench-world")

PAGE = str(REPO / "pages" / "rag_abilities.py")


def page(role: str = "analyst") -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    now = now_utc()
    at.session_state[SESSION_KEY] = Principal(username=f"{role}-user", role=role, domains=(), login_at=now, last_seen=now)
    return at


@pytest.fixture
def opened(world, monkeypatch):
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")

    def open_as(judge: str = JUDGE, role: str = "analyst") -> AppTest:
        at = page(role).run()
        if judge != at.selectbox(key="lit_judge").value:
            at.selectbox(key="lit_judge").set_value(judge).run()
        assert not at.exception, at.exception
        return at

    return open_as


@pytest.mark.parametrize("judge", [pytest.param(JUDGE, id="llm"), pytest.param(HEURISTIC, id="heuristic")])
def test_category_radar_bars_and_overview(opened, judge) -> None:
    at = opened(judge)
    radar, bars, aspects, _, _ = specs(at)
    assert len(values(aspects["data"][0]["y"])) == 13
    polygons = {t["name"]: values(t["r"]) for t in radar["data"]}
    assert polygons[GOLD] == [100.0] * 6 and polygons[REFUSE] == [0.0, 0.0, 0.0, 0.0, 100.0, 0.0]
    refuse_bars = next(t for t in bars["data"] if t["name"] == REFUSE)
    assert list(refuse_bars["x"]) == ["Integration", "Reasoning", "Logic", "Table", "Abstention"]
    assert values(refuse_bars["error_y"]["array"])[4] == 0.0 and values(refuse_bars["y"])[4] == 100.0
    overview = at.dataframe[0].value.set_index(["model", "language"])
    assert overview.loc[(REFUSE, "Japanese"), "over-abstention"].startswith("100.0% [")
    assert overview.loc[(GOLD, "English"), "category-averaged accuracy"].endswith("n=114 over 5/5 categories†")
    label = "heuristic (lexical, offline)" if judge == HEURISTIC else JUDGE
    assert set(overview["judge"]) == {label}
    assert any(label in c.value for c in at.caption) or any(label in m.value for m in at.markdown)


def test_tradeoff_scatter_and_english_beside_japanese(opened) -> None:
    at = opened()
    tradeoff = specs(at)[3]
    points = {(t["name"], x): y for t in tradeoff["data"] for x, y in zip(values(t["x"]), values(t["y"]), strict=True)}
    assert points == {("English", 100.0): 100.0, ("English", 0.0): 100.0,
                      ("Japanese", 100.0): 100.0, ("Japanese", 0.0): 100.0}
    en_ja = specs(at)[4]
    assert [t["name"] for t in en_ja["data"]] == ["English", "Japanese"]


def test_drill_down_shows_the_shuffled_context_and_the_judges_reason(opened) -> None:
    at = opened()
    at.selectbox(key="lit_dd_model").set_value(REFUSE)
    at.selectbox(key="lit_dd_key").set_value("T_html_cell_merged").run()
    assert not at.exception, at.exception
    assert any("9 responses" in c.value for c in at.caption)
    text = "\n".join(m.value for m in at.markdown)
    assert "Context as the model saw it" in text and "seed 0" in text and "positives at [doc" in text
    assert any("scripted: differs from the reference" in str(df.value) for df in at.dataframe)
    heads = [e.label for e in at.expander]
    assert any(" positive · html · stored #" in h for h in heads)
    stored = [int(h.rsplit("stored #", 1)[1].split(" ")[0]) for h in heads if "stored #" in h]
    assert stored != sorted(stored)


@pytest.mark.parametrize("role", ["expert", "anonymous"])
def test_only_results_readers_may_open_it(world, monkeypatch, role) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    at = AppTest.from_file(PAGE, default_timeout=60)
    if role != "anonymous":
        now = now_utc()
        at.session_state[SESSION_KEY] = Principal(username="u", role=role, domains=(), login_at=now, last_seen=now)
    at.run()
    assert not at.get("plotly_chart") and not at.dataframe
