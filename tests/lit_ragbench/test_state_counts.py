"""The RAG abilities page under every score state: a caption under each table and chart with each state's count, and
the count columns in the CSV beside it (see tests/pages/state_counts.py)."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine
from sqlmodel import Session, col, select

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


@pytest.mark.parametrize(("prefix", "csv", "per_category"), [
    pytest.param("Responses behind the table (each once)", None, False, id="overview-table"),
    pytest.param("Behind the bars and table, summed over the cells", "lit_category_bars.csv", True,
                 id="category-bars-and-table"),
])
def test_every_state_is_counted_under_the_view(world, monkeypatch, prefix, csv, per_category) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    spy = sc.DownloadSpy(monkeypatch)
    before = sc.caption_counts(sc.captions_with(sc.open_page(PAGE, {"lit_judge": JUDGE}), prefix)[0])
    engine = create_engine(world.url)
    with sc.injected_states(engine, run_ids=[world.run_id], judge=JUDGE, metric="judged_accuracy", model=GOLD,
                         condition="", protocol="lit_ragbench") as injected:
        after = sc.caption_counts(sc.captions_with(sc.open_page(PAGE, {"lit_judge": JUDGE}), prefix)[0])
        expected = category_deltas(engine, injected.instance_uids) if per_category else sc.DELTAS
        assert {state: after[state] - before[state] for state in after} == expected
        if csv:
            shown = spy.frame(csv)
            assert {state: int(shown[column].sum()) for state, column in sc.COUNT_COLUMNS.items()} == after
    engine.dispose()


def language_counts(frame) -> dict[str, int]:
    """Each state's count in an English-vs-Japanese frame, summed over its rows and both languages."""
    return {state: int(frame[[f"{column}_{lang}" for lang in ("en", "ja")]].to_numpy().sum())
            for state, column in sc.COUNT_COLUMNS.items()}


@pytest.mark.parametrize("source", [
    pytest.param("csv", id="en-ja-csv"),
    pytest.param("table", id="en-ja-table-columns"),
])
def test_english_vs_japanese_counts_the_states_of_each_language(world, monkeypatch, source) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    spy = sc.DownloadSpy(monkeypatch)

    def shown() -> dict[str, int]:
        at = sc.open_page(PAGE, {"lit_judge": JUDGE, "lit_lang_model": GOLD})
        if source == "csv":
            return language_counts(spy.frame("lit_en_ja.csv"))
        return language_counts(next(t.value for t in at.dataframe if "diff_ja_en" in t.value.columns))

    before = shown()
    engine = create_engine(world.url)
    with sc.injected_states(engine, run_ids=[world.run_id], judge=JUDGE, metric="judged_accuracy", model=GOLD,
                            condition="", protocol="lit_ragbench") as injected:
        after = shown()
        expected = category_deltas(engine, injected.instance_uids)
    engine.dispose()
    assert {state: after[state] - before[state] for state in after} == expected


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
