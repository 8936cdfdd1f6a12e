"""`gauntlet report --judge J --format json` equals the read model behind the dashboards, cell by cell (to 1e-12)."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from bench.make_synthetic_results import make_results
from core.analysis import readmodel
from core.cli import app
from core.store.db import get_engine

# One xdist worker runs this module (with the other users of paper_scale_results): its expensive fixtures are built
# once, not once per worker
pytestmark = pytest.mark.xdist_group("paper-scale")

SECOND_JUDGE = "llm:synthetic-judge"


@pytest.fixture(scope="module")
def two_judge_db(session_url_factory) -> str:
    url = session_url_factory()
    make_results(url, n_models=5, n_instances=160, seed=4, extra_judges=(SECOND_JUDGE,))
    return url


@pytest.fixture(scope="module")
def paper_scale_db(session_url_factory, paper_scale_results) -> str:
    return session_url_factory(template=paper_scale_results)


def _report(url: str, monkeypatch, *args: str) -> dict:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", url)
    result = CliRunner().invoke(app, ["report", "1", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _dashboard_board(url: str, judge: str, monkeypatch):
    """The Leaderboard page's own cached computation (ui.results_view.leaderboard), all subsets and domains."""
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", url)
    from ui import results_view

    return results_view.leaderboard((1,), judge, (), (), ("test", url, judge))


def _assert_cells_equal(doc: dict, board) -> int:
    compared = 0
    cells = {(m["model"], metric): cell for m in doc["models"] for metric, cell in m["metrics"].items()}
    assert len(cells) == len(board)
    for row in board.to_dict("records"):
        cell = cells[(row["model"], row["metric"])]
        assert cell["n"] == row["n"] and cell["mark"] == row["mark"]
        for key in ("value", "ci_low", "ci_high"):
            want = row[key]
            if want is None or math.isnan(want):
                assert cell[key] is None, (row["model"], row["metric"], key)
            else:
                assert abs(cell[key] - want) <= 1e-12, (row["model"], row["metric"], key, cell[key], want)
                compared += 1
    return compared


@pytest.mark.parametrize("judge", [pytest.param("heuristic", id="heuristic"), pytest.param(SECOND_JUDGE, id="second-judge")])
def test_report_equals_dashboard_on_a_two_judge_run(two_judge_db, monkeypatch, judge) -> None:
    doc = _report(two_judge_db, monkeypatch, "--judge", judge)
    assert doc["judge"] == judge and doc["judge_label"] == ("heuristic (lexical, offline)" if judge == "heuristic" else judge)
    assert _assert_cells_equal(doc, _dashboard_board(two_judge_db, judge, monkeypatch)) > 100


def test_two_judges_are_never_pooled(two_judge_db, monkeypatch) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", two_judge_db)
    result = CliRunner().invoke(app, ["report", "1", "--format", "json"])
    assert result.exit_code == 2 and "several judges" in result.output and SECOND_JUDGE in result.output
    first, second = (_report(two_judge_db, monkeypatch, "--judge", j) for j in ("heuristic", SECOND_JUDGE))
    assert first["models"][0]["metrics"]["loose_ias"]["value"] != second["models"][0]["metrics"]["loose_ias"]["value"]


def test_report_equals_dashboard_at_paper_scale(paper_scale_db, monkeypatch) -> None:
    doc = _report(paper_scale_db, monkeypatch)
    assert doc["judge"] == "heuristic"
    assert _assert_cells_equal(doc, _dashboard_board(paper_scale_db, "heuristic", monkeypatch)) > 150
    counts = doc["models"][0]["counts"]
    assert counts["responses"] == 983 and counts["n_strict_undetermined"] > 0


def test_report_counts_undetermined_strict(two_judge_db, monkeypatch) -> None:
    doc = _report(two_judge_db, monkeypatch, "--judge", "heuristic")
    scores = readmodel.load_scores(get_engine(two_judge_db), [1], "heuristic")
    for model in doc["models"]:
        mine = scores[scores["model"] == model["model"]]
        assert model["counts"]["n_strict_undetermined"] == int(mine["strict_ias"].isna().sum())
        assert model["metrics"]["strict_ias"]["n"] == int(mine["strict_ias"].notna().sum())


@pytest.mark.parametrize("fmt", ["table", "csv"])
def test_report_other_formats_name_the_judge(two_judge_db, monkeypatch, fmt) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", two_judge_db)
    result = CliRunner().invoke(app, ["report", "1", "--judge", "heuristic", "--format", fmt])
    assert result.exit_code == 0 and "heuristic (lexical, offline)" in result.output


def test_report_states_the_gap_assumption_and_its_worst_case_bound(two_judge_db, monkeypatch) -> None:
    doc = _report(two_judge_db, monkeypatch, "--judge", "heuristic")
    bounds = readmodel.gap_bounds(readmodel.load_scores(get_engine(two_judge_db), [1], "heuristic")).set_index("model")
    for model in doc["models"]:
        gap = model["metrics"][readmodel.GAP_KEY]
        assert "missing at random" in gap["assumption"]
        low, high = gap["worst_case_bound"]
        assert (low, high) == pytest.approx(tuple(bounds.loc[model["model"], ["bound_low", "bound_high"]]))
        if gap["value"] is not None:
            assert low <= gap["value"] <= high
            # the interval shown spans the bound, so it holds however the undetermined constraints fall
            assert gap["interval"] == readmodel.GAP_METHOD and gap["ci_low"] <= low and high <= gap["ci_high"]
