"""Calibration on the fake server: a model returning the first alternative of the gold answer scores EM 1.0 on every
ability and setting and 0 adherence to anti-references; a model copying the anti-answer scores adherence 1.0 and 0 on
the gold answer. The same holds on every built question without a server (the metric alone)."""

from __future__ import annotations

import pytest

from core.protocols.domainrag import ABILITIES, ANTI, applicable_conditions
from core.protocols.domainrag.analysis import ANTI_MEASURES, ANTI_SCOPES, domainrag_report
from core.scoring.reference import reference_metric
from core.store.db import make_engine
from tests.domainrag.conftest import (
    ANTI_BOT,
    CONDITIONS,
    GOLD,
    HEURISTIC,
    PER_SUBSET,
    first_alternative,
)

# One xdist worker builds the session-scoped fixture these modules share (built once, not once per worker)
pytestmark = pytest.mark.xdist_group("domainrag-world")


@pytest.fixture(scope="module")
def report(world):
    engine = make_engine(world.url)
    yield domainrag_report(engine, [world.run_id], HEURISTIC)
    engine.dispose()


def test_every_item_was_answered_and_scored(world, report) -> None:
    scores = report["scores"]
    expected = sum(len([c for c in CONDITIONS if c in applicable_conditions(s)]) for s in world.specs)
    assert len(scores) == 2 * expected
    assert set(scores["exact_match_status"]) == {"ok"}
    assert set(scores["ability"]) == set(ABILITIES)


def test_gold_bot_scores_exact_match_one_on_every_ability_and_setting(report) -> None:
    table = report["ability_setting"]
    gold = table[(table["model"] == GOLD) & (table["setting"] != "anti_reference")]
    assert set(gold["ability"]) == set(ABILITIES)
    assert (gold["value"] == 1.0).all(), gold[gold["value"] != 1.0][["ability", "setting", "value"]]
    assert (gold["n"] == PER_SUBSET).all() and gold["small_n"].all()
    assert set(gold["judge_label"]) == {"heuristic (lexical, offline)"}


def test_gold_bot_long_answers_are_consistent_and_overlap_fully(report) -> None:
    scores = report["scores"]
    long_form = scores[(scores["model"] == GOLD) & scores["ability"].isin(["conversational", "multidoc"])]
    assert not long_form.empty
    assert (long_form[["consistency", "rouge_l", "token_f1"]] == 1.0).all().all()
    short = scores[(scores["model"] == GOLD) & (scores["ability"] == "extractive")]
    assert set(short["consistency_status"]) == {"not_applicable"}


@pytest.mark.parametrize(
    ("model", "close_book", "golden", "anti"),
    [pytest.param(GOLD, 1.0, 1.0, 0.0, id="gold-bot-ignores-the-evidence"),
     pytest.param(ANTI_BOT, 0.0, 0.0, 1.0, id="anti-bot-follows-the-anti-reference")],
)
def test_anti_reference_adherence(report, model, close_book, golden, anti) -> None:
    table = report["anti_adherence"]
    assert set(table["scope"]) == {ANTI_SCOPES["disjoint"], ANTI_SCOPES["all"]}
    mine = table[(table["model"] == model) & (table["scope"] == ANTI_SCOPES["disjoint"])].set_index("measure")
    assert mine.loc[ANTI_MEASURES["close_book"], "value"] == close_book
    assert mine.loc[ANTI_MEASURES["golden"], "value"] == golden
    assert mine.loc[ANTI_MEASURES["anti"], "value"] == anti
    assert (mine["n"] == PER_SUBSET).all()


def test_noise_curve_has_every_count_and_position(report) -> None:
    curve = report["noise_curve"]
    gold = curve[curve["model"] == GOLD]
    lines = {line: sorted(g["noise_count"]) for line, g in gold.groupby("line")}
    assert lines == {"first": [4, 9, 14, 19, 24], "middle": [4, 9, 14, 19, 24], "last": [4, 9, 14, 19, 24],
                     "repeated_gold": [4, 9, 14, 19, 24], "no noise (golden)": [0]}
    assert (gold["value"] == 1.0).all() and (gold["n"] == PER_SUBSET).all()


def test_html_vs_text_bars(report) -> None:
    bars = report["html_vs_text"]
    assert sorted(bars[bars["model"] == GOLD]["format"]) == ["html", "html_as_text", "text"]


def test_every_built_question_calibrates_without_a_server(specs) -> None:
    """Gold's first alternative scores EM 1.0 against every gold reference (all 395 questions). On the 39 faithful
    questions whose anti-answer shares no item with the gold answer, the anti-answer scores 1.0 against the
    anti-reference's answer and 0 against the gold one, and gold scores 0 against the anti-answer; on the other 10
    (lists with an item dropped or swapped) the anti-answer's gold score is the share of gold items it repeats."""
    primary = {s.id: s for s in specs if s.attributes.question_type != ANTI}
    assert len(primary) == 395
    assert [_em(s.reference, _copy(s.reference.answers[0])) for s in primary.values()] == [1.0] * 395
    anti = [s for s in specs if s.attributes.question_type == ANTI]
    kinds = {s.id: s.attributes.aspects[0] for s in anti}
    assert len(anti) == 49 and sum(k == "disjoint" for k in kinds.values()) == 39
    for s in anti:
        gold = primary[s.metadata["derived_from"]]
        assert gold.attributes.aspects == s.attributes.aspects
        reply, gold_reply = _copy(s.reference.answers[0]), _copy(gold.reference.answers[0])
        assert _em(s.reference, reply) == 1.0
        if kinds[s.id] == "disjoint":
            assert (_em(gold.reference, reply), _em(s.reference, gold_reply)) == (0.0, 0.0), s.id
        else:
            assert _em(gold.reference, reply) == _kept_share(gold.reference.answers, s.reference.answers[0].parts)


def _copy(answer) -> str:
    return first_alternative(answer)


def _em(reference, reply: str) -> float:
    return reference_metric("exact_match", reference, reply, "zh").value


def _kept_share(gold_answers, anti_parts: list[str]) -> float:
    """By hand: the best gold alternative's share of items that the anti-answer repeats verbatim."""
    return max(sum(p in anti_parts for p in a.parts) / len(a.parts) for a in gold_answers)


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_report_command(world, monkeypatch, fmt) -> None:
    import json

    from typer.testing import CliRunner

    from core.cli import app

    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    result = CliRunner().invoke(app, ["domainrag", "report", str(world.run_id), "--format", fmt])
    assert result.exit_code == 0, result.output
    if fmt == "json":
        cells = json.loads(result.output)["anti_adherence"]
        adherence = {(c["model"], c["scope"]): c["value"] for c in cells if c["measure"] == ANTI_MEASURES["anti"]}
        assert adherence[(ANTI_BOT, ANTI_SCOPES["disjoint"])] == 1.0 and adherence[(GOLD, ANTI_SCOPES["disjoint"])] == 0.0
    else:
        assert "judge: heuristic (lexical, offline)" in result.output and "anti-reference adherence:" in result.output
        assert "score vs noise count" in result.output and "n=3†" in result.output
