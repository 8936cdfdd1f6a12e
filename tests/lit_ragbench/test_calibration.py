"""Calibration on every question of both languages: always-refuse scores 1.0 on Abstention, 0 on the four answerable
categories and over-abstention 1.0; a model returning the gold answer scores 1.0 everywhere with no over-abstention;
under the heuristic judge and under a scripted LLM judge on the fake server."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from core.cli import app
from core.protocols.lit_ragbench import ABSTENTION, ASPECTS, CATEGORIES
from core.protocols.lit_ragbench.analysis import lit_report
from core.store.db import make_engine
from tests.lit_ragbench.conftest import GOLD, HEURISTIC, JUDGE, REFUSE

# One xdist worker builds the session-scoped fixture these modules share (built once, not once per worker)
pytestmark = pytest.mark.xdist_group("lit_ragbench-world")

JUDGES = [pytest.param(HEURISTIC, id="heuristic"), pytest.param(JUDGE, id="scripted-llm-judge")]
# Questions per category and per aspect in each language (a question counts for each of its aspects).
CATEGORY_N = {"Integration": 12, "Reasoning": 23, "Logic": 30, "Table": 31, "Abstention": 60}
ASPECT_N = {"A_negative_only": 54, "R_calculate": 12, "I_multiple": 12, "R_multihop": 11, "L_synonym": 11,
            "L_numerical_inclusion": 10, "L_conceptual_inclusion": 9, "T_html_cell_merged": 9, "T_html": 8,
            "T_markdown": 7, "T_csv": 7, "A_chunk_incompletion": 3, "A_conflicted": 3}


@pytest.fixture(scope="module")
def reports(world) -> dict[str, dict[str, pd.DataFrame]]:
    engine = make_engine(world.url)
    return {judge: lit_report(engine, [world.run_id], judge) for judge in (HEURISTIC, JUDGE)}


def _cells(table: pd.DataFrame, model: str, language: str) -> pd.Series:
    mine = table[(table["model"] == model) & (table["language"] == language)]
    return mine.set_index("key")["value"]


@pytest.mark.parametrize("judge", JUDGES)
@pytest.mark.parametrize("language", ["en", "ja"])
def test_always_refuse_is_right_only_on_abstention(reports, judge, language) -> None:
    report = reports[judge]
    categories = _cells(report["categories"], REFUSE, language)
    assert categories.to_dict() == {c: float(c == ABSTENTION) for c in CATEGORIES}
    aspects = _cells(report["aspects"], REFUSE, language)
    assert aspects.to_dict() == {a: float(ASPECTS[a].category == ABSTENTION) for a in ASPECTS}
    abstention = report["abstention"].set_index(["model", "language"]).loc[(REFUSE, language)]
    assert (abstention["over_abstention"], abstention["oa_n"], abstention["oa_undetermined"]) == (1.0, 54, 0)
    assert abstention["abstention_accuracy"] == 1.0 and abstention["aa_n"] == 60
    overall = report["overall"].set_index(["model", "language"]).loc[(REFUSE, language)]
    assert overall["value"] == pytest.approx(0.2) and overall["n_categories"] == 5
    assert overall["micro_value"] == pytest.approx(60 / 114)


@pytest.mark.parametrize("judge", JUDGES)
@pytest.mark.parametrize("language", ["en", "ja"])
def test_gold_answers_score_one_everywhere(reports, judge, language) -> None:
    report = reports[judge]
    assert set(_cells(report["categories"], GOLD, language)) == {1.0}
    assert _cells(report["aspects"], GOLD, language).to_dict() == dict.fromkeys(ASPECTS, 1.0)
    abstention = report["abstention"].set_index(["model", "language"]).loc[(GOLD, language)]
    assert (abstention["over_abstention"], abstention["oa_n"]) == (0.0, 54)
    overall = report["overall"].set_index(["model", "language"]).loc[(GOLD, language)]
    assert (overall["value"], overall["micro_value"], overall["n"]) == (1.0, 1.0, 114)


@pytest.mark.parametrize("judge", JUDGES)
def test_every_question_is_counted_for_each_of_its_aspects(reports, judge) -> None:
    cells = reports[judge]["categories"]
    for language in ("en", "ja"):
        mine = cells[(cells["model"] == GOLD) & (cells["language"] == language)].set_index("key")
        assert mine["n"].to_dict() == CATEGORY_N
        assert (mine[["n_error", "n_unscored", "n_not_applicable"]] == 0).all().all()
        assert mine["small_n"].to_dict() == {c: n < 30 for c, n in CATEGORY_N.items()}
    aspects = reports[judge]["aspects"]
    assert aspects[(aspects["model"] == GOLD) & (aspects["language"] == "ja")].set_index("key")["n"].to_dict() == ASPECT_N


def test_scores_name_their_judge_and_language_table_pairs_en_with_ja(reports) -> None:
    report = reports[JUDGE]
    assert set(report["categories"]["judge_label"]) == {"llm:judge-bot"}
    assert set(reports[HEURISTIC]["overall"]["judge_label"]) == {"heuristic (lexical, offline)"}
    languages = report["languages"].set_index(["model", "key"])
    refuse = languages.loc[REFUSE]
    assert (refuse["value_en"] == refuse["value_ja"]).all() and (refuse["diff_ja_en"] == 0).all()
    assert (refuse["n_en"] == refuse["n_ja"]).all()
    assert languages.loc[(REFUSE, ABSTENTION), ["value_en", "value_ja"]].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("fmt", ["json", "table"])
def test_report_command_prints_the_same_numbers(world, monkeypatch, fmt) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    out = CliRunner().invoke(app, ["lit-ragbench", "report", str(world.run_id), "--judge", JUDGE, "--format", fmt])
    assert out.exit_code == 0, out.output
    if fmt == "table":
        assert "judge: llm:judge-bot" in out.output and "Abstention   1.000 [0.940, 1.000]  n=60" in out.output
        return
    doc = json.loads(out.output)
    overall = {(r["model"], r["language"]): r for r in doc["overall"]}
    assert overall[(REFUSE, "ja")]["value"] == pytest.approx(0.2) and overall[(GOLD, "en")]["value"] == 1.0
    assert {r["judge_label"] for r in doc["categories"]} == {"llm:judge-bot"}
    assert {(r["model"], r["language"], r["over_abstention"]) for r in doc["abstention"]} == {
        (REFUSE, "en", 1.0), (REFUSE, "ja", 1.0), (GOLD, "en", 0.0), (GOLD, "ja", 0.0)}
