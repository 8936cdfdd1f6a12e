"""The Domain abilities page on the calibrated world: every chart carries the read model's numbers, names the judge
and n, and says 'no data' rather than drawing 0; a viewer may open it, an expert may not."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.protocols.domainrag.analysis import ANTI_SCOPES
from tests.domainrag.conftest import ANTI_BOT, GOLD
from tests.pages.signin import sign_in
from tests.pages.test_dashboards import specs, values

# One xdist worker builds the session-scoped fixture these modules share (built once, not once per worker)
pytestmark = pytest.mark.xdist_group("domainrag-world")

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "domain_abilities.py")
LABEL = "heuristic (lexical, offline)"


@pytest.fixture
def opened(world, monkeypatch):
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")

    def open_as(role: str = "analyst") -> AppTest:
        return sign_in(AppTest.from_file(PAGE, default_timeout=60), role).run()

    return open_as


def test_charts_carry_the_calibrated_numbers(opened) -> None:
    at = opened()
    at.selectbox(key="dr_noise_model").set_value(GOLD)
    at.selectbox(key="dr_grid_model").set_value(GOLD).run()
    assert not at.exception, at.exception
    noise, html, grid, anti = specs(at)
    lines = {t["name"]: values(t["y"]) for t in noise["data"]}
    assert lines == {name: [100.0] * 5 for name in ("gold first", "gold in the middle", "gold last",
                                                    "gold repeated (same size)")}
    assert values(noise["data"][0]["x"]) == [4, 9, 14, 19, 24]
    assert {t["name"] for t in html["data"]} == {"plain text", "cleaned HTML", "HTML converted to text (ours)"}
    assert list(grid["data"][0]["y"]) == ["Extractive", "Conversational", "Structural", "Faithful", "Time-sensitive",
                                          "Multi-document"]
    cells = grid["data"][0]["text"]
    assert any("n=3†" in str(c) for row in cells for c in row) and any(c == "no data" for row in cells for c in row)
    bars = {t["name"]: dict(zip(t["x"], values(t["y"]), strict=True)) for t in anti["data"]}
    assert bars["anti-reference (anti-answer)"] == {ANTI_BOT: 100.0, GOLD: 0.0}
    assert bars["golden reference (gold answer)"] == {ANTI_BOT: 0.0, GOLD: 100.0}


def test_every_view_names_the_judge_and_n(opened) -> None:
    at = opened()
    captions = " ".join(c.value for c in at.caption)
    assert f"Judge: **{LABEL}**" in captions and captions.count(LABEL) >= 5
    views = [f.value for f in at.dataframe if "value [95% CI] n" in f.value]
    listed = [f.value for f in at.dataframe if "response_id" in f.value]  # the drill-down (the opened one below it)
    assert len(views) == 4 and len(listed) == 1
    for frame in [*views, *listed]:
        assert set(frame["judge"]) == {LABEL}
    for frame in views:
        assert frame["value [95% CI] n"].str.contains(r"n=\d").all()
    assert any("Setting" in f.value.columns for f in at.dataframe) and f"Judge: {LABEL}" in captions  # Table 2


@pytest.mark.parametrize(("ability", "setting", "expected"), [
    pytest.param("extractive", "golden", {"golden": 100.0}, id="extractive-golden-all-right"),
    pytest.param("faithful", "anti_reference", {"anti_reference": 0.0}, id="faithful-anti-reference-scored-on-anti"),
    pytest.param("extractive", "noisy", None, id="extractive-noise-sweep-one-setting"),
])
def test_drill_down_lists_the_responses_behind_a_cell(opened, ability, setting, expected) -> None:
    at = opened()
    at.selectbox(key="dr_dd_model").set_value(GOLD)
    at.selectbox(key="dr_dd_ability").set_value(ability).run()
    at.selectbox(key="dr_dd_setting").set_value(setting).run()
    assert not at.exception, at.exception
    rows = next(f.value for f in at.dataframe if "response_id" in f.value)
    assert not rows.empty and set(rows["model"]) == {GOLD} and set(rows["ability"]) == {ability}
    assert set(rows["setting"]) == {setting}
    if expected:
        assert {setting: rows["exact_match"].mean() * 100} == expected
    else:
        assert rows["condition"].str.startswith("noise_").all()
    picked = at.selectbox(key="dr_drill_pick").value
    assert picked == int(rows["response_id"].iloc[0])
    assert any(f"**{GOLD}** on" in m.value for m in at.markdown)


@pytest.mark.parametrize(("tokenizer", "column"), [pytest.param("jieba", "Extractive F1", id="jieba"),
                                                   pytest.param("char", "Extractive Rouge-L", id="char")])
def test_the_papers_table_2_on_the_page(opened, tokenizer, column) -> None:
    at = opened()
    at.selectbox(key="dr_paper_domainrag_2_tokenizer").set_value(tokenizer).run()
    assert not at.exception, at.exception
    table = next(f.value for f in at.dataframe if "Setting" in f.value.columns)
    gold = table[(table["Setting"] == "Golden Reference") & (table["Model"] == GOLD)]
    assert re.fullmatch(r"100\.0 \[\d+\.\d, 100\.0\] \(n = 3\)", gold[column].item()), gold[column].item()
    assert [b.label for b in at.get("download_button")][:3] == ["Markdown", "CSV", "Latex"]


def test_switching_the_scope_and_the_metric(opened) -> None:
    at = opened()
    at.radio(key="dr_anti_scope").set_value(ANTI_SCOPES["all"]).run()
    at.selectbox(key="dr_metric").set_value("consistency").run()
    assert not at.exception, at.exception
    grid = specs(at)[2]
    cells = [str(c) for row in grid["data"][0]["text"] for c in row]
    assert cells.count("no data") > len(cells) // 2  # consistency applies to long answers only


@pytest.mark.parametrize(("role", "allowed"), [pytest.param("viewer", True, id="viewer"),
                                               pytest.param("expert", False, id="expert")])
def test_results_readers_only(opened, role, allowed) -> None:
    at = opened(role)
    assert (not at.exception and bool(at.title) and at.title[0].value == "Domain abilities") is allowed
