"""Read model for reference protocols: reference_scores (one row per done response, value + status per metric) and
reference_summary (per model x condition x metric: mean, CI, n and the counts left out); reading never writes."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from sqlalchemy import event
from sqlmodel import Session, select

from core.analysis import stats
from core.analysis.readmodel import REFERENCE_SUMMARY_COLUMNS, reference_scores, reference_summary
from core.metrics import get_metric
from core.scoring.scorer import score_run
from core.store.models import Verdict
from tests.scoring.conftest import ALWAYS_REFUSE, CASES, RefWorld

METRICS = ("exact_match", "strict_exact_match", "token_f1", "rouge_l", "mcq_accuracy", "all_gold_no_wrong",
           "correctness", "consistency", "rejection")
WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER")


@pytest.fixture
def scored(ref_world: RefWorld) -> RefWorld:
    """Gold, wrong and always-refuse responses to every case, plus closed-book gold answers; scored by the heuristic."""
    for c in CASES:
        ref_world.respond("gold-model", c.uid, c.gold)
        ref_world.respond("gold-model", c.uid, c.gold, condition="closed_book")
        ref_world.respond("wrong-model", c.uid, c.wrong)
        ref_world.respond("refuser", c.uid, ALWAYS_REFUSE)
    ref_world.respond("refuser", CASES[0].uid, "never answered", condition="closed_book", status="failed")
    asyncio.run(score_run(ref_world.engine, ref_world.run_id, "heuristic"))
    return ref_world


def test_reference_scores_rows_and_columns(scored: RefWorld) -> None:
    df = reference_scores(scored.engine, [scored.run_id], "heuristic")
    assert len(df) == 4 * len(CASES)
    for m in METRICS:
        assert m in df.columns and f"{m}_status" in df.columns
    assert set(df["condition"]) == {"", "closed_book"} and set(df["language"]) == {"en", "zh", "ja"}
    assert set(df["answer_type"]) == {"short", "multi", "mcq", "unanswerable", "long"}
    assert (df["judge"] == "heuristic").all()
    row = df[(df["model"] == "gold-model") & (df["instance_uid"] == "zh-mcq") & (df["condition"] == "")].iloc[0]
    assert (row["mcq_accuracy"], row["mcq_accuracy_status"]) == (1.0, "ok")
    assert np.isnan(row["token_f1"]) and row["token_f1_status"] == "not_applicable"
    assert np.isnan(row["rejection"]) and row["rejection_status"] == "not_applicable"


def test_reference_scores_under_an_unscored_judge_has_no_values(scored: RefWorld) -> None:
    df = reference_scores(scored.engine, [scored.run_id], "llm:nobody")
    assert len(df) == 4 * len(CASES)
    assert df["correctness"].isna().all() and df["correctness_status"].isna().all()


def test_reference_summary_counts(scored: RefWorld) -> None:
    summary = reference_summary(reference_scores(scored.engine, [scored.run_id], "heuristic"))
    assert list(summary.columns) == REFERENCE_SUMMARY_COLUMNS
    assert len(summary) == 4 * len(METRICS)  # (gold, ''), (gold, closed_book), (wrong, ''), (refuser, '')
    cell = summary.set_index(["model", "condition", "metric"])
    gold = cell.loc[("gold-model", "", "correctness")]
    assert (gold["value"], gold["n"], gold["n_not_applicable"], gold["n_error"]) == (1.0, 12, 3, 0)
    assert gold["small_n"] and gold["judge_label"] == "heuristic (lexical, offline)" and gold["interval"] == "clopper-pearson"
    ci = stats.interval(np.ones(12), get_metric("correctness"))
    assert (gold["ci_low"], gold["ci_high"]) == (pytest.approx(ci.ci_low), pytest.approx(ci.ci_high))
    refuse = cell.loc[("refuser", "", "rejection")]
    assert (refuse["value"], refuse["n"], refuse["n_not_applicable"]) == (1.0, 3, 12)
    assert cell.loc[("refuser", "", "correctness"), "value"] == 0.0
    assert cell.loc[("wrong-model", "", "exact_match"), "value"] == 0.0
    consistency = cell.loc[("gold-model", "closed_book", "consistency")]
    assert (consistency["n"], consistency["n_not_applicable"]) == (3, 12)


def test_reference_summary_counts_errors_and_unscored(scored: RefWorld) -> None:
    with Session(scored.engine) as s:
        v = s.exec(select(Verdict).where(Verdict.metric == "correctness", Verdict.status == "ok")).first()
        v.status, v.value, v.reason = "error", None, "judge failed: test"
        s.add(v)
        s.delete(s.exec(select(Verdict).where(Verdict.metric == "rouge_l", Verdict.response_id == v.response_id)).one())
        s.commit()
        model = scored.responses[v.response_id][0]
    df = reference_scores(scored.engine, [scored.run_id], "heuristic")
    cell = reference_summary(df).set_index(["model", "condition", "metric"])
    condition = df.loc[df["response_id"] == v.response_id, "condition"].iloc[0]
    assert cell.loc[(model, condition, "correctness"), "n_error"] == 1
    assert cell.loc[(model, condition, "rouge_l"), "n_unscored"] == 1


def test_reading_never_writes(scored: RefWorld) -> None:
    seen: list[str] = []
    event.listen(scored.engine, "before_cursor_execute", lambda conn, cursor, sql, *a: seen.append(sql))
    reference_summary(reference_scores(scored.engine, [scored.run_id], "heuristic"))
    assert seen and not [s for s in seen if s.lstrip().upper().startswith(WRITES)]


def test_no_responses_gives_empty_frames_with_the_columns(ref_world: RefWorld) -> None:
    df = reference_scores(ref_world.engine, [ref_world.run_id, 999], "heuristic")
    assert df.empty and "correctness_status" in df.columns and "answer_type" in df.columns
    summary = reference_summary(df)
    assert summary.empty and list(summary.columns) == REFERENCE_SUMMARY_COLUMNS


def _excluding_unparseable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Declare mcq_accuracy with unparseable answers left out of the mean (the other policy a declaration can take)."""
    from dataclasses import replace

    from core.metrics import DECLARATIONS

    monkeypatch.setitem(DECLARATIONS._items, "mcq_accuracy", replace(get_metric("mcq_accuracy"), unparseable="excluded"))


@pytest.mark.parametrize(
    ("policy", "refuser_value", "refuser_n"),
    [
        pytest.param("wrong", 0.0, 3, id="counted-as-wrong-by-default"),
        pytest.param("excluded", None, 0, id="left-out-when-declared-so"),
    ],
)
def test_unparseable_mcq_answers_are_counted_whatever_the_policy(scored: RefWorld, monkeypatch: pytest.MonkeyPatch,
                                                                 policy: str, refuser_value: float | None,
                                                                 refuser_n: int) -> None:
    if policy == "excluded":
        _excluding_unparseable(monkeypatch)
    scores = reference_scores(scored.engine, [scored.run_id], "heuristic")
    refuser = scores[(scores["model"] == "refuser") & (scores["answer_type"] == "mcq")]
    assert list(refuser["mcq_accuracy_status"]) == ["unparseable"] * 3  # a refusal names no option letter
    cell = reference_summary(scores).set_index(["model", "condition", "metric"])
    mine = cell.loc[("refuser", "", "mcq_accuracy")]
    assert (mine["n"], mine["n_unparseable"]) == (refuser_n, 3)
    assert (np.isnan(mine["value"]) if refuser_value is None else mine["value"] == refuser_value)
    gold = cell.loc[("gold-model", "", "mcq_accuracy")]
    assert (gold["value"], gold["n"], gold["n_unparseable"]) == (1.0, 3, 0)


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_gauntlet_report_shows_the_unparseable_count(scored: RefWorld, fmt: str) -> None:
    import json

    from core.analysis.readmodel import run_report
    from core.commands.run import render_report

    text = render_report(run_report(scored.engine, scored.run_id, "heuristic"), fmt, [])
    if fmt == "table":
        assert "n_unparseable" in text
        return
    rows = {(r["model"], r["condition"], r["metric"]): r for r in json.loads(text)["reference_metrics"]}
    assert rows[("refuser", "", "mcq_accuracy")]["n_unparseable"] == 3
    assert rows[("gold-model", "", "mcq_accuracy")]["n_unparseable"] == 0


def test_the_scoring_pass_reports_the_unparseable_answers(ref_world: RefWorld) -> None:
    from core.commands.score import format_report

    for c in CASES:
        ref_world.respond("refuser", c.uid, ALWAYS_REFUSE)
    report = asyncio.run(score_run(ref_world.engine, ref_world.run_id, "heuristic"))
    # the English, Chinese and Japanese MCQ cases: no letter for mcq_accuracy, no letter nor option text for exact_match
    assert report.unparseable == {"mcq_accuracy": 3, "exact_match": 3}
    assert "unparseable answers (no option letter; counted as declared): {'exact_match': 3, 'mcq_accuracy': 3}" \
        in format_report(report)


def test_every_stored_status_is_a_state_its_metric_declares(scored: RefWorld) -> None:
    from core.metrics import VERDICT_STATES

    with Session(scored.engine) as session:
        pairs = set(session.exec(select(Verdict.metric, Verdict.status)).all())
    assert ("mcq_accuracy", "unparseable") in pairs
    assert all(VERDICT_STATES[status] in get_metric(metric).states for metric, status in pairs), sorted(pairs)
