"""The heuristic judge on real instances of the bundled sample (data/sample/enterprise_rag_sample.jsonl)."""

from __future__ import annotations

import asyncio

import pytest

from core.scoring.judges.base import ConstraintView
from core.scoring.judges.heuristic import HeuristicJudge
from tests.judges.conftest import sample_input, sample_instances

J = HeuristicJudge()

CONFLICT_CASES = [
    pytest.param("energy-conflict-01",
                 "The documents conflict on the inspection interval: the Operations Manual [doc 2] requires an "
                 "inspection every 18 months, while Field Bulletin FB-2024-07 [doc 6] requires one every 12 months. "
                 "Alarm stage 1 operates at 0.52 MPa.", True, id="energy-both-sources-named"),
    pytest.param("energy-conflict-01",
                 "The sources disagree: the manual says every 18 months, the bulletin says every 12 months.",
                 True, id="energy-both-values-quoted"),
    pytest.param("energy-conflict-01",
                 "The SF6 density must be inspected every 12 months [doc 6]; alarm stage 1 operates at 0.52 MPa.",
                 False, id="energy-picks-the-bulletin"),
    pytest.param("energy-conflict-01",
                 "There is a discrepancy in the documents, but the interval is 18 months [doc 2].",
                 False, id="energy-conflict-word-one-side"),
    pytest.param("financial-conflict-01",
                 "The sources are inconsistent: the prospectus [doc 2] gives 0.85 percent, the September factsheet "
                 "[doc 6] gives 0.95 percent.", True, id="financial-both-sides"),
    pytest.param("financial-conflict-01", "The ongoing charge for Class A is 0.95% per year [doc 6].", False,
                 id="financial-picks-the-factsheet"),
    pytest.param("party-conflict-01",
                 "The documents contradict each other: the Bylaws require one third of members, the Secretariat "
                 "Circular 2024/03 requires at least half.", True, id="party-word-values"),
    pytest.param("party-conflict-01", "A meeting is quorate when one third of the members are present [doc 3].", False,
                 id="party-picks-the-bylaws"),
]


@pytest.mark.parametrize(("uid", "response", "recognised"), CONFLICT_CASES)
def test_conflict_recognition_on_sample(uid: str, response: str, recognised: bool) -> None:
    out = asyncio.run(J.conflict_recognition(sample_input(uid, response)))
    assert out.status == "ok" and out.passed is recognised, out.reason


def conflict_constraint(uid: str) -> ConstraintView:
    spec = next(c for c in sample_instances()[uid]["constraints"] if c["sub_dimension"] == "conflict_handling")
    return ConstraintView(cid=spec["id"], text=spec["text"], category=spec["category"],
                          sub_dimension=spec["sub_dimension"], criterion=spec.get("criterion"))


@pytest.mark.parametrize(("uid", "response", "recognised"), CONFLICT_CASES)
def test_conflict_handling_constraint_on_sample(uid: str, response: str, recognised: bool) -> None:
    (out,) = asyncio.run(J.judge_constraints(sample_input(uid, response), [conflict_constraint(uid)], "batched"))
    assert out.status == "ok" and out.passed is recognised, out.reason


def test_every_sample_conflict_group_pairs_two_documents() -> None:
    for uid, row in sample_instances().items():
        if row["mode"] == "conflict":
            out = asyncio.run(J.conflict_recognition(sample_input(uid, "The sources conflict.")))
            assert [g["size"] for g in out.details["groups"].values()] == [2], uid
