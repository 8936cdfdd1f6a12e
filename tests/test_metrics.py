"""Aggregation: IAS arithmetic (table-driven), per-response scores, per model x subset summaries, failure counts."""

from __future__ import annotations

import asyncio
import math

import pandas as pd
import pytest

from core.analysis.readmodel import (
    CONSTRAINT_COLUMNS,
    RESPONSE_COLUMNS,
    constraint_verdicts,
    failure_count_rows,
    failure_counts,
    ias,
    model_subset_summary,
    response_scores,
    stale_summary_runs,
    verdict_counts,
)
from core.pipeline import score_and_summarise
from tests.judges.conftest import REFUSAL, World, world  # noqa: F401

OK_Y, OK_N, ERR, UNJ = ("ok", True), ("ok", False), ("error", None), ("not_applicable", None)


@pytest.mark.parametrize(
    ("name", "pairs", "loose", "strict", "n_judged", "n_errors", "n_unjudged"),
    [
        ("all_pass", [OK_Y, OK_Y, OK_Y], 1.0, 1.0, 3, 0, 0),
        ("one_fail", [OK_Y, OK_N, OK_Y, OK_Y], 0.75, 0.0, 4, 0, 0),
        ("error_no_fail_undetermined", [OK_Y, OK_Y, ERR], 1.0, None, 2, 1, 0),
        ("error_and_fail_undetermined_complete_case", [OK_N, OK_Y, ERR], 0.5, None, 2, 1, 0),
        ("unjudged_excluded_undetermined", [OK_Y, UNJ], 1.0, None, 1, 0, 1),
        ("only_errors", [ERR, ERR], None, None, 0, 2, 0),
        ("empty", [], None, None, 0, 0, 0),
        ("ok_without_passed_counts_unjudged", [OK_Y, ("ok", None)], 1.0, None, 1, 0, 1),
    ],
)
def test_ias(name, pairs, loose, strict, n_judged, n_errors, n_unjudged) -> None:
    got = ias(pairs)
    assert (got.loose, got.strict, got.n_judged, got.n_errors, got.n_unjudged) == (
        loose, strict, n_judged, n_errors, n_unjudged), name


def scored(world: World) -> None:
    asyncio.run(score_and_summarise(world.engine, world.run_id, ["heuristic"]))


def test_response_scores_rows_and_columns(world: World) -> None:
    good = world.respond("gen-a", "noisy")
    refuse = world.respond("gen-b", "noisy", REFUSAL)
    gap = world.respond("gen-a", "gap")
    scored(world)
    df = response_scores(world.engine, [world.run_id], "heuristic").set_index("response_id")
    assert set(df.reset_index().columns) == set(RESPONSE_COLUMNS)
    assert len(df) == 3
    # noisy: c1 rule pass, c2 persona unjudged by heuristic, c3/c4 precondition pass, c5 citation [1] pass
    assert df.loc[good, "loose_ias"] == 1.0 and pd.isna(df.loc[good, "strict_ias"])
    assert df.loc[good, "n_constraints"] == 5 and df.loc[good, "n_constraint_unjudged"] == 1
    assert pd.isna(df.loc[good, "loose_persona"]) and df.loc[good, "loose_knowledge_protocol"] == 1.0
    assert df.loc[good, "refusal"] == 0.0 and df.loc[refuse, "refusal"] == 1.0
    # the refusal cites no document: citation fails, but the unjudged persona constraint leaves Strict undetermined
    # (complete case: a failure next to an unjudged constraint does not make Strict 0)
    assert pd.isna(df.loc[refuse, "strict_ias"]) and df.loc[refuse, "loose_ias"] == pytest.approx(3 / 4)
    assert pd.isna(df.loc[refuse, "faithfulness"]) and df.loc[refuse, "faithfulness_status"] == "not_applicable"
    assert df.loc[gap, "rejection"] == 1.0 and df.loc[gap, "coverage_status"] == "not_applicable"
    assert bool(df.loc[gap, "has_protocol"]) and df.loc[gap, "cost_usd"] == pytest.approx(0.001)
    assert df.loc[good, "faithfulness"] == 1.0


def test_unscored_responses_still_listed(world: World) -> None:
    world.respond("gen-a", "noisy")
    df = response_scores(world.engine, [world.run_id], "heuristic")
    # the instance's 5 constraints have no verdict yet: all unjudged, nothing determined
    row = df.iloc[0]
    assert len(df) == 1 and row["n_constraints"] == 5 and row["n_constraint_unjudged"] == 5 and pd.isna(row["loose_ias"])
    assert pd.isna(row["strict_ias"])


def test_other_judges_verdicts_are_not_mixed_in(world: World) -> None:
    world.respond("gen-a", "noisy")
    scored(world)
    df = response_scores(world.engine, [world.run_id], "llm:judge-x")
    # only rule verdicts count for a judge that has not scored yet; its own constraints are unjudged
    row = df.iloc[0]
    assert row["n_constraints"] == 5 and row["n_constraint_unjudged"] == 4 and pd.isna(row["strict_ias"])
    assert pd.isna(row["faithfulness_status"])


def test_constraint_verdicts_and_failure_counts(world: World) -> None:
    world.respond("gen-a", "noisy")
    world.respond("gen-b", "noisy", REFUSAL)
    scored(world)
    cv = constraint_verdicts(world.engine, [world.run_id], "heuristic")
    assert list(cv.columns) == list(CONSTRAINT_COLUMNS) and len(cv) == 10
    assert set(cv["judge"]) == {"rule", "heuristic"}
    fc = failure_counts(cv).set_index(["model", "category", "sub_dimension"])
    assert fc.loc[("gen-b", "knowledge_protocol", "citation"), "n_failed"] == 1
    assert fc.loc[("gen-a", "knowledge_protocol", "citation"), "failure_rate"] == 0.0
    assert fc.loc[("gen-a", "persona", "role"), "n_unjudged"] == 1
    assert math.isnan(fc.loc[("gen-a", "persona", "role"), "failure_rate"])


def test_model_subset_summary(world: World) -> None:
    world.respond("gen-a", "noisy")
    world.respond("gen-a", "gap")
    world.respond("gen-b", "noisy", REFUSAL)
    scored(world)
    summary = model_subset_summary(response_scores(world.engine, [world.run_id], "heuristic"))
    s = summary.set_index(["model", "mode"])
    assert s.loc[("gen-b", "noisy"), "over_abstention"] == 1.0
    assert s.loc[("gen-a", "noisy"), "over_abstention"] == 0.0
    assert s.loc[("gen-a", "gap"), "rejection"] == 1.0 and s.loc[("gen-a", "gap"), "n_coverage_na"] == 1
    assert s.loc[("gen-b", "noisy"), "n_faithfulness_na"] == 1
    assert s.loc[("gen-a", "noisy"), "n_strict_undetermined"] == 1


def test_empty_inputs(world: World) -> None:
    assert response_scores(world.engine, [world.run_id], "heuristic").empty
    assert failure_counts(constraint_verdicts(world.engine, [world.run_id], "heuristic")).empty
    assert model_subset_summary(response_scores(world.engine, [world.run_id], "heuristic")).empty


# Hand-checked verdict sets on the noisy fixture instance (c1 rule/output, c2 llm/persona, c5 llm/knowledge_protocol):
# constraint verdicts as cid -> (judge, status, passed), metric verdicts as metric -> (status, value).
NAN = float("nan")
PRE = {"c3": ("heuristic", "ok", True), "c4": ("heuristic", "ok", True)}  # precondition-satisfied on noisy
LOADER_CASES = [
    pytest.param({"c1": ("rule", "ok", True), "c2": ("heuristic", "ok", True), "c5": ("heuristic", "ok", True), **PRE},
                 {"faithfulness": ("ok", 0.8)},
                 dict(loose_ias=1.0, strict_ias=1.0, loose_persona=1.0, loose_output=1.0, loose_knowledge_protocol=1.0,
                      n_constraints=5, n_constraint_errors=0, n_constraint_unjudged=0, faithfulness=0.8),
                 id="all-pass-strict-one"),
    pytest.param({"c1": ("rule", "ok", True), "c2": ("heuristic", "ok", False), "c5": ("heuristic", "ok", True), **PRE}, {},
                 dict(loose_ias=4 / 5, strict_ias=0.0, loose_persona=0.0, loose_output=1.0, n_constraints=5),
                 id="one-fail-strict-zero"),
    pytest.param({"c1": ("rule", "ok", True), "c2": ("heuristic", "error", None), "c5": ("heuristic", "ok", True), **PRE}, {},
                 dict(loose_ias=1.0, strict_ias=NAN, loose_persona=NAN, n_constraints=5, n_constraint_errors=1),
                 id="error-leaves-denominator-strict-undetermined"),
    pytest.param({"c1": ("rule", "ok", True), "c2": ("heuristic", "not_applicable", None), "c5": ("heuristic", "ok", None),
                  **PRE}, {},
                 dict(loose_ias=1.0, strict_ias=NAN, loose_knowledge_protocol=1.0, n_constraints=5, n_constraint_unjudged=2),
                 id="unjudged-leaves-denominator-strict-undetermined"),
    pytest.param({"c1": ("rule", "ok", False), "c2": ("heuristic", "error", None), "c5": ("heuristic", "ok", True), **PRE}, {},
                 dict(loose_ias=3 / 4, strict_ias=NAN, loose_persona=NAN, n_constraint_errors=1),
                 id="failure-next-to-error-strict-undetermined-complete-case"),
    pytest.param({"c2": ("heuristic", "error", None)}, {},
                 dict(loose_ias=NAN, strict_ias=NAN, n_constraints=5, n_constraint_errors=1, n_constraint_unjudged=4),
                 id="only-errors-nothing-determined"),
    pytest.param({"c1": ("rule", "ok", True), "c2": ("llm:judge-x", "ok", False), "c5": ("rule", "ok", False), **PRE}, {},
                 dict(loose_ias=1.0, strict_ias=NAN, n_constraints=5, n_constraint_unjudged=2, loose_persona=NAN),
                 id="other-judge-and-rule-verdict-on-llm-constraint-ignored-so-strict-undetermined"),
    pytest.param({"c1": ("rule", "ok", True), **PRE}, {},
                 dict(loose_ias=1.0, strict_ias=NAN, n_constraints=5, n_constraint_unjudged=2),
                 id="constraints-without-any-verdict-are-unjudged-never-a-silent-pass"),
    pytest.param({"c1": ("rule", "ok", True)},
                 {"faithfulness": ("not_applicable", 0.7), "coverage": ("ok", 0.5), "refusal": ("error", None),
                  "rejection": ("ok", 1.0)},
                 dict(faithfulness=NAN, faithfulness_status="not_applicable", coverage=0.5, coverage_status="ok",
                      refusal=NAN, refusal_status="error", rejection=1.0, conflict_recognition=NAN,
                      conflict_recognition_status=None, judge_calls=9, judge_cost_usd=0.09),
                 id="metric-not-applicable-and-error-are-nan-with-status"),
]


@pytest.mark.parametrize(("constraints", "metrics", "want"), LOADER_CASES)
def test_response_scores_on_hand_checked_verdicts(world: World, constraints, metrics, want) -> None:
    from sqlmodel import Session, select

    from core.store.models import Constraint, Verdict

    rid = world.respond("gen-a", "noisy")
    with Session(world.engine) as s:
        cons = {c.cid: c.id for c in s.exec(select(Constraint).where(Constraint.instance_id == world.instances["noisy"])).all()}
        for cid, (judge, status, passed) in constraints.items():
            s.add(Verdict(response_id=rid, run_id=world.run_id, judge=judge, metric="constraint", constraint_id=cons[cid],
                          status=status, passed=passed, calls=1, cost_usd=0.01))
        for metric, (status, value) in metrics.items():
            s.add(Verdict(response_id=rid, run_id=world.run_id, judge="heuristic", metric=metric, status=status,
                          value=value, calls=2, cost_usd=0.02))
        s.commit()
    df = response_scores(world.engine, [world.run_id], "heuristic")
    assert list(df.columns) == list(RESPONSE_COLUMNS) and len(df) == 1
    float_cols = ["loose_ias", "strict_ias", "loose_persona", "loose_output", "loose_knowledge_protocol",
                  "faithfulness", "coverage", "rejection", "conflict_recognition", "refusal", "cost_usd", "judge_cost_usd"]
    assert all(df[c].dtype == float for c in float_cols), df.dtypes
    row = df.iloc[0]
    assert row["response_id"] == rid and row["model"] == "gen-a" and row["mode"] == "noisy" and bool(row["has_protocol"])
    for key, expected in want.items():
        got = row[key]
        if expected is None:
            assert got is None, (key, got)
        elif isinstance(expected, str):
            assert got == expected, (key, got)
        elif math.isnan(expected):
            assert pd.isna(got), (key, got)
        else:
            assert got == pytest.approx(expected), (key, got)
    # the summary counts not-applicable and error metric verdicts instead of averaging them as zero
    summary = model_subset_summary(df).iloc[0]
    assert summary["n_faithfulness_na"] == int(row["faithfulness_status"] == "not_applicable")
    assert summary["n_refusal_error"] == int(row["refusal_status"] == "error")
    assert summary["n_strict_undetermined"] == int(pd.isna(row["strict_ias"]))


def test_response_scores_of_no_runs_has_the_columns(world: World) -> None:
    df = response_scores(world.engine, [], "heuristic")
    assert df.empty and list(df.columns) == list(RESPONSE_COLUMNS)


def _verdict_level(world: World, judge: str) -> pd.DataFrame:
    """The per-response scores recomputed from the verdict rows with ias() (the reference for the summary table)."""
    from sqlmodel import Session, select

    from core.store.models import Constraint, Response, Verdict

    cv = constraint_verdicts(world.engine, [world.run_id], judge)
    with Session(world.engine) as s:
        metric_rows = s.exec(select(Verdict).where(Verdict.run_id == world.run_id, Verdict.judge == judge,
                                                   Verdict.metric != "constraint")).all()
    rows = []
    with Session(world.engine) as s:
        constraint_count = {r.id: len(s.exec(select(Constraint.id).where(Constraint.instance_id == r.instance_id)).all())
                            for r in s.exec(select(Response).where(Response.run_id == world.run_id)).all()}
    for rid in sorted(world.responses):
        mine = cv[cv["response_id"] == rid]
        pairs = list(zip(mine["status"], mine["passed"], strict=True))
        pairs += [("not_applicable", None)] * (constraint_count[rid] - len(pairs))  # no verdict at all: unjudged
        got = ias(pairs)
        row = {"response_id": rid, "loose_ias": got.loose, "strict_ias": got.strict, "n_constraints": len(pairs),
               "n_constraint_errors": got.n_errors, "n_constraint_unjudged": got.n_unjudged}
        for v in (v for v in metric_rows if v.response_id == rid):
            row[v.metric] = v.value if v.status == "ok" else None
            row[f"{v.metric}_status"] = v.status
        rows.append(row)
    return pd.DataFrame(rows).set_index("response_id")


def _add_verdicts_after_first_read(world: World) -> None:
    from sqlmodel import Session, select

    from core.store.models import Constraint, Verdict

    with Session(world.engine) as s:
        persona = s.exec(select(Constraint.id).where(Constraint.instance_id == world.instances["noisy"],
                                                     Constraint.cid == "c2")).one()
        s.add(Verdict(response_id=world.responses[0], run_id=world.run_id, judge="heuristic", metric="constraint",
                      constraint_id=persona, status="error"))
        s.add(Verdict(response_id=world.responses[1], run_id=world.run_id, judge="heuristic", metric="conflict_recognition",
                      status="ok", value=1.0, passed=True))
        s.commit()


# name, judge read, what happens between scoring and the read, runs stale just before the read
SUMMARY_CASES = [
    pytest.param("heuristic", None, [], id="built-by-the-pipeline"),
    pytest.param("heuristic", _add_verdicts_after_first_read, "run", id="verdicts-added-after-build-computed-inline"),
    pytest.param("llm:judge-x", None, "run", id="unscored-judge-computed-inline-rule-verdicts-only"),
]


@pytest.mark.parametrize(("judge", "between", "stale"), SUMMARY_CASES)
def test_summary_matches_verdict_level_computation(world: World, judge, between, stale) -> None:
    world.respond("gen-a", "noisy")
    world.respond("gen-b", "noisy", REFUSAL)
    world.respond("gen-a", "gap")
    world.respond("gen-b", "conflict")
    scored(world)
    if between:
        between(world)
    assert stale_summary_runs(world.engine, [world.run_id], judge) == ([world.run_id] if stale == "run" else [])
    got = response_scores(world.engine, [world.run_id], judge).set_index("response_id")
    # reading never writes: a stale summary stays stale (the same SELECT ran inline instead)
    assert stale_summary_runs(world.engine, [world.run_id], judge) == ([world.run_id] if stale == "run" else [])
    want = _verdict_level(world, judge)
    assert list(got.index) == list(want.index)
    for col in want.columns:
        for rid in want.index:
            w, g = want.loc[rid, col], got.loc[rid, col]
            if w is None or (isinstance(w, float) and math.isnan(w)):
                assert g is None or pd.isna(g), (rid, col, g)
            else:
                assert g == pytest.approx(w) if isinstance(w, float) else g == w, (rid, col, g, w)
    # the Figure 4 counts from the failure_count summary equal the counts over the constraint verdicts (the summary
    # also counts the constraints with no verdict, unjudged, which a verdict-level frame cannot hold)
    keys = ["model", "domain", "mode", "category", "sub_dimension"]
    counts = failure_count_rows(world.engine, [world.run_id], judge)
    reference = verdict_counts(constraint_verdicts(world.engine, [world.run_id], judge)).sort_values(keys).reset_index(drop=True)
    counts = counts[counts["verdicts"] > 0].sort_values(keys).reset_index(drop=True)[list(reference.columns)]
    assert len(counts) > 0
    pd.testing.assert_frame_equal(counts, reference, check_dtype=False)
