"""Repeated answers in the read model (readmodel.repeats): one row per item whose value is the mean over its
repeats, n = items in the leaderboard, intervals inside the metric's range, the latest of overlapping runs kept
whole; frames without repeats pass through unchanged."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.analysis import readmodel


def _frame(rows: list[tuple[int, int, str, str, float | None]]) -> pd.DataFrame:
    """(run_id, response_id, model, instance_uid, strict_ias) rows in the response_scores layout's relevant columns."""
    frame = pd.DataFrame(rows, columns=["run_id", "response_id", "model", "instance_uid", "strict_ias"])
    frame["strict_ias"] = frame["strict_ias"].astype(float)
    frame["strict_ias_state"] = np.where(frame["strict_ias"].isna(), "judge_error", "scored")
    frame["judge_cost_usd"] = 0.5
    return frame


PER_ITEM_CASES = [
    # name, responses, expected (model, instance) -> value, expected states
    ("three-repeats-are-a-pass-rate", [(1, 1, "a", "q1", 1), (1, 2, "a", "q1", 0), (1, 3, "a", "q1", 1)],
     {("a", "q1"): 2 / 3}, {("a", "q1"): "scored"}),
    ("a-repeat-without-value-leaves-the-item-undetermined", [(1, 1, "a", "q1", 1), (1, 2, "a", "q1", None),
                                                              (1, 3, "a", "q1", 1)],
     {("a", "q1"): np.nan}, {("a", "q1"): "judge_error"}),
    ("state-of-the-repeat-without-a-value", [(1, 1, "a", "q1", None), (1, 2, "a", "q1", 1)],
     {("a", "q1"): np.nan}, {("a", "q1"): "judge_error"}),
    ("latest-run-kept-with-all-its-repeats", [(1, 1, "a", "q1", 0), (2, 5, "a", "q1", 1), (2, 6, "a", "q1", 0)],
     {("a", "q1"): 0.5}, {("a", "q1"): "scored"}),
    ("models-and-items-apart", [(1, 1, "a", "q1", 1), (1, 2, "b", "q1", 0), (1, 3, "a", "q1", 0),
                                (1, 4, "b", "q1", 0), (1, 5, "a", "q2", 1), (1, 6, "a", "q2", 1)],
     {("a", "q1"): 0.5, ("b", "q1"): 0.0, ("a", "q2"): 1.0}, {("a", "q1"): "scored", ("b", "q1"): "scored",
                                                              ("a", "q2"): "scored"}),
]


@pytest.mark.parametrize(("rows", "values", "states"), [c[1:] for c in PER_ITEM_CASES],
                         ids=[c[0] for c in PER_ITEM_CASES])
def test_each_item_is_its_mean_over_its_repeats(rows, values, states):
    out = readmodel.latest_per_model_instance(_frame(rows))
    got = {(r["model"], r["instance_uid"]): r for r in out.to_dict("records")}
    assert set(got) == set(values) and len(out) == len(values)
    for key, value in values.items():
        assert got[key]["strict_ias"] == pytest.approx(value, nan_ok=True)
        assert got[key]["strict_ias_state"] == states[key]


def test_the_leaderboard_counts_items_and_flags_flaky_ones():
    """40 items, 20 of them right on one repeat of two: mean 0.75 with n = 40 and an interval inside [0, 1]."""
    rows = [(1, 2 * i + k, "a", f"q{i}", 1.0 if i >= 20 or k == 0 else 0.0) for i in range(40) for k in range(2)]
    frame = _frame(rows)
    [row] = [r for r in readmodel.mean_rows(readmodel.latest_per_model_instance(frame), ["strict_ias"])]
    assert row["value"] == pytest.approx(0.75) and row["n"] == 40
    assert 0 <= row["ci_low"] < 0.75 < row["ci_high"] <= 1
    summary = readmodel.repeat_summary(frame, ["strict_ias"])
    assert summary.to_dict("records") == [{"model": "a", "repeats": 2, "items": 40, "flaky_items": 20}]
    assert "a: 2 repeats per item, 40 items, 20 flaky" in readmodel.repeat_text(summary)


def repeated_seed(folder, verdicts: tuple[tuple[int, int], tuple[int, int]]):
    """The seeded database with a second repeat of (model-a, E-noisy) and heuristic (c1, c2) verdicts on both repeats;
    (seeded, first repeat's response id)."""
    from sqlmodel import Session

    from core.store.models import Response
    from tests.workspace_factories import add_verdicts, seeded_db

    s = seeded_db(folder)
    first = s.responses[("model-a", "E-noisy")]
    with Session(s.engine) as session:
        original = session.get_one(Response, first)
        again = Response(run_id=original.run_id, model_id=original.model_id, instance_id=original.instance_id,
                         status="done", text="1. Peak load 400 MW [Report 1]", repeat=1)
        session.add(again)
        session.commit()
        second = int(again.id)  # type: ignore[arg-type]
    add_verdicts(s.engine, s, "heuristic", {(rid, cid): v for rid, pair in ((first, verdicts[0]), (second, verdicts[1]))
                                            for cid, v in zip(("c1", "c2"), pair, strict=True)})
    return s, first


STORED_CASES = [
    # name, (c1, c2) verdicts of repeat 0 and of repeat 1 of (model-a, E-noisy), its Strict IAS over the repeats
    ("pass-then-fail-is-half", ((1, 1), (1, 0)), 0.5),
    ("fail-then-pass-is-half", ((1, 0), (1, 1)), 0.5),
    ("pass-twice-is-one", ((1, 1), (1, 1)), 1.0),
]


@pytest.mark.parametrize(("verdicts", "strict"), [c[1:] for c in STORED_CASES], ids=[c[0] for c in STORED_CASES])
def test_a_stored_repeat_is_averaged_into_its_item(tmp_path, verdicts, strict):
    """The seeded run with a second repeat of one EnterpriseRAG item: load_scores (report, pages, picker, exports)
    holds one row per item, the item's Strict IAS is its mean over both repeats, and the report says so."""
    s, first = repeated_seed(tmp_path, verdicts)
    scores = readmodel.load_scores(s.engine, [s.run_id], "heuristic")
    assert len(scores) == len(s.responses)
    item = scores[(scores["model"] == "model-a") & (scores["instance_uid"] == "E-noisy")]
    assert item["strict_ias"].tolist() == [strict] and item["response_id"].tolist() == [first]
    report = readmodel.run_report(s.engine, s.run_id, "heuristic")
    assert "model-a: 2 repeats per item, 4 items, " in report.note
    s.engine.dispose()


PAGE_CASES = [("flaky-item-counted", ((1, 1), (1, 0)), 1), ("stable-item-not-flaky", ((1, 1), (1, 1)), 0)]


@pytest.mark.parametrize(("verdicts", "flaky"), [c[1:] for c in PAGE_CASES], ids=[c[0] for c in PAGE_CASES])
def test_the_leaderboard_page_states_the_repeats(tmp_path, monkeypatch, verdicts, flaky):
    from tests.pages import state_counts as sc
    from tests.pages.test_dashboards import REPO

    s, _ = repeated_seed(tmp_path, verdicts)
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", s.url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    at = sc.open_page(str(REPO / "pages" / "leaderboard.py"))
    assert f"Repeated runs: model-a: 2 repeats per item, 4 items, {flaky} flaky" in [c.value[:60] for c in at.caption]
    s.engine.dispose()
