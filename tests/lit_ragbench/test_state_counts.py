"""The RAG abilities page under every score state: a caption under each table and chart with each state's count, and
the count columns in the CSV beside it (see tests/pages/state_counts.py)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import pytest
from sqlalchemy import create_engine
from sqlmodel import Session, col, select
from streamlit.testing.v1 import AppTest

from core.protocols.lit_ragbench import aspect_codes, categories_of
from core.store.models import Instance
from tests.lit_ragbench.conftest import GOLD, JUDGE, REPO
from tests.pages import state_counts as sc

# One xdist worker builds the session-scoped fixture these modules share (built once, not once per worker)
pytestmark = pytest.mark.xdist_group("lit_ragbench-world")

PAGE = str(REPO / "pages" / "rag_abilities.py")
INJECTED_STATES = ("judge_error", "unparseable", "not_applicable", "unjudged")  # in the order of the four answers


def category_deltas(engine, uids: list[str]) -> dict[str, int]:
    """What the four answers change in a caption summed over category cells: a question counts once per category."""
    with Session(engine) as session:
        rows = session.execute(select(col(Instance.uid), col(Instance.attributes))
                               .where(col(Instance.uid).in_(uids))).all()
    per_uid = {uid: len(categories_of(aspect_codes(list((attributes or {}).get("aspects", []))))) for uid, attributes in rows}
    counts = [per_uid[uid] for uid in uids]
    return {"scored": -sum(counts), **dict(zip(INJECTED_STATES, counts, strict=True)), "skipped": 0}


@dataclass(frozen=True)
class Shown:
    """What the page shows before and while GOLD's four answers carry the injected states (one render each)."""
    before: AppTest
    after: AppTest
    before_csvs: dict[str, pd.DataFrame]
    after_csvs: dict[str, pd.DataFrame]
    expected: dict[str, int]


def open_with(url: str, widgets: dict[str, str], csvs: tuple[str, ...]) -> tuple[AppTest, dict[str, pd.DataFrame]]:
    """The page opened on `url` with `widgets` set, and the named CSV downloads it offers."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GAUNTLET_DATABASE_URL", url)
        mp.setenv("GAUNTLET_FIRST_START", "0")
        spy = sc.DownloadSpy(mp)
        at = sc.open_page(PAGE, widgets)
    return at, {name: spy.frame(name) for name in csvs}


def shown_with(world, widgets: dict[str, str], csvs: tuple[str, ...]) -> Shown:
    """The page before and while GOLD's answers carry the injected states, with the category deltas they make."""
    before, before_csvs = open_with(world.url, widgets, csvs)
    engine = create_engine(world.url)
    with sc.injected_states(engine, run_ids=[world.run_id], judge=JUDGE, metric="judged_accuracy", model=GOLD,
                            condition="", protocol="lit_ragbench") as injected:
        after, after_csvs = open_with(world.url, widgets, csvs)
        expected = category_deltas(engine, injected.instance_uids)
    engine.dispose()
    return Shown(before, after, before_csvs, after_csvs, expected)


@pytest.fixture(scope="module")
def judged_view(world) -> Shown:
    """The page under JUDGE, shared by the cases that read its captions and category CSV."""
    return shown_with(world, {"lit_judge": JUDGE}, ("lit_category_bars.csv",))


@pytest.mark.parametrize(("prefix", "csv", "per_category"), [
    pytest.param("Responses behind the table (each once)", None, False, id="overview-table"),
    pytest.param("Behind the bars and table, summed over the cells", "lit_category_bars.csv", True,
                 id="category-bars-and-table"),
])
def test_every_state_is_counted_under_the_view(judged_view, prefix, csv, per_category) -> None:
    before = sc.caption_counts(sc.captions_with(judged_view.before, prefix)[0])
    after = sc.caption_counts(sc.captions_with(judged_view.after, prefix)[0])
    expected = judged_view.expected if per_category else sc.DELTAS
    assert {state: after[state] - before[state] for state in after} == expected
    if csv:
        shown = judged_view.after_csvs[csv]
        assert {state: int(shown[column].sum()) for state, column in sc.COUNT_COLUMNS.items()} == after


def language_counts(frame) -> dict[str, int]:
    """Each state's count in an English-vs-Japanese frame, summed over its rows and both languages."""
    return {state: int(frame[[f"{column}_{lang}" for lang in ("en", "ja")]].to_numpy().sum())
            for state, column in sc.COUNT_COLUMNS.items()}


@pytest.fixture(scope="module")
def language_view(world) -> Shown:
    """The page with GOLD's English-vs-Japanese comparison, shared by the CSV and table cases."""
    return shown_with(world, {"lit_judge": JUDGE, "lit_lang_model": GOLD}, ("lit_en_ja.csv",))


@pytest.mark.parametrize("source", [
    pytest.param("csv", id="en-ja-csv"),
    pytest.param("table", id="en-ja-table-columns"),
])
def test_english_vs_japanese_counts_the_states_of_each_language(language_view, source) -> None:
    def shown(at: AppTest, csvs: dict[str, pd.DataFrame]) -> dict[str, int]:
        if source == "csv":
            return language_counts(csvs["lit_en_ja.csv"])
        return language_counts(next(t.value for t in at.dataframe if "diff_ja_en" in t.value.columns))

    before = shown(language_view.before, language_view.before_csvs)
    after = shown(language_view.after, language_view.after_csvs)
    assert {state: after[state] - before[state] for state in after} == language_view.expected


@pytest.mark.parametrize("language", [pytest.param("en", id="english"), pytest.param("ja", id="japanese")])
def test_abstention_tradeoff_csv_counts_the_abstention_cell(world, monkeypatch, language) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    spy = sc.DownloadSpy(monkeypatch)
    engine = create_engine(world.url)
    with sc.injected_states(engine, run_ids=[world.run_id], judge=JUDGE, metric="judged_accuracy", model=GOLD,
                            condition="", protocol="lit_ragbench"):
        sc.open_page(PAGE, {"lit_judge": JUDGE}).radio(key="lit_cat_lang").set_value(language).run()
        cells = spy.frame("lit_category_bars.csv").query("key == 'Abstention'")
        points = spy.frame("lit_abstention_tradeoff.csv").query("language == @language")
    engine.dispose()
    keys = ["model", "condition"]
    merged = cells.merge(points, on=keys, suffixes=("", "_point"))
    assert len(merged) == len(points) > 0
    for column in sc.COUNT_COLUMNS.values():
        assert (merged[f"aa_{column}"] == merged[column]).all(), column
    assert sum(int(points[f"aa_{c}"].sum()) for c in sc.COUNT_COLUMNS.values()) > 0


def answerable_deltas(engine, uids: list[str]) -> dict[str, int]:
    """What the four answers change in over-abstention's counts: only answerable (non-Abstention) questions count."""
    with Session(engine) as session:
        rows = dict(session.execute(select(col(Instance.uid), col(Instance.attributes))
                                    .where(col(Instance.uid).in_(uids))).all())
    answerable = ["Abstention" not in categories_of(aspect_codes(list((rows[u] or {}).get("aspects", [])))) for u in uids]
    return {"scored": -sum(answerable), **dict(zip(INJECTED_STATES, map(int, answerable), strict=True)), "skipped": 0}


def over_abstention_counts(frame) -> dict[str, int]:
    """Each state's count of over-abstention in a trade-off frame, summed over its rows."""
    return {state: int(frame[f"oa_{column}"].sum()) for state, column in sc.COUNT_COLUMNS.items()}


@pytest.mark.parametrize("verdicts", [pytest.param(("refusal", "judged_accuracy"), id="both-verdicts-fail")])
def test_abstention_tradeoff_csv_splits_over_abstention_by_state(world, monkeypatch, verdicts) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    spy = sc.DownloadSpy(monkeypatch)

    def shown():
        at = sc.open_page(PAGE, {"lit_judge": JUDGE})
        overview = next(t.value for t in at.dataframe if "over-abstention" in t.value.columns)
        return spy.frame("lit_abstention_tradeoff.csv").query("model == @GOLD"), overview[overview["model"] == GOLD]

    before = over_abstention_counts(shown()[0])
    engine = create_engine(world.url)
    with sc.injected_states(engine, run_ids=[world.run_id], judge=JUDGE, metric=verdicts[0], metrics=verdicts[1:],
                            model=GOLD, condition="", protocol="lit_ragbench") as injected:
        points, overview = shown()
        expected = answerable_deltas(engine, injected.instance_uids)
    engine.dispose()
    after = over_abstention_counts(points)
    assert {state: after[state] - before[state] for state in after} == expected
    assert sum(expected.values()) == 0 and expected["scored"] < 0
    assert (points["oa_n_scored"] == points["oa_n"]).all()
    text = " ".join(overview["over-abstention"])  # the overview's cell names the states, not one 'undetermined'
    assert "(undetermined: " in text and all(f"1 {word}" in text or not n for word, n in
                                              (("judge error", expected["judge_error"]),
                                               ("unjudged", expected["unjudged"])))
    assert (points["oa_undetermined"] == points[[f"oa_{c}" for c in sc.COUNT_COLUMNS.values()]].sum(axis=1)
            - points["oa_n_scored"]).all()
