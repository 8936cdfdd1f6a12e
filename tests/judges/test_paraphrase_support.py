"""The heuristic judge credits paraphrased and conflict-reporting claims (hand set rows with known faithfulness)."""

from __future__ import annotations

import asyncio

import pytest

from core.scoring.judges.hand_set import judge_input, load_hand_set
from core.scoring.judges.heuristic import HeuristicJudge
from core.scoring.judges.text import meaning_words, negated

J = HeuristicJudge()
ROWS = {row["id"]: row for row in load_hand_set()}

FAITHFUL_CASES = [
    pytest.param("pump-warranty-2", 1.0, id="guarantee-cover-for-warranty"),
    pytest.param("hotel-expenses-2", 1.0, id="staff-file-claims-for-employees-submit"),
    pytest.param("call-retention-2", 1.0, id="held-and-recovered-for-kept-and-restored"),
    pytest.param("bearing-grease-2", 1.0, id="running-hours-sooner"),
    pytest.param("hosting-sla-2", 1.0, id="promises-availability-figure-anchored"),
    pytest.param("eye-splash-2", 1.0, id="flush-and-take-out"),
    pytest.param("extinguisher-interval-1", 1.0, id="sentence-stating-the-documents-conflict"),
    pytest.param("extinguisher-interval-2", 1.0, id="both-sides-in-one-sentence"),
    pytest.param("audit-deadline-2", 1.0, id="inconsistent-memo-versus-plan"),
    pytest.param("meeting-quorum-2", 1.0, id="bylaws-versus-circular-in-words"),
    pytest.param("audit-deadline-4", 0.5, id="one-side-right-one-invented"),
]


@pytest.mark.parametrize(("row_id", "value"), FAITHFUL_CASES)
def test_paraphrase_faithfulness(row_id: str, value: float) -> None:
    out = asyncio.run(J.faithfulness(judge_input(ROWS[row_id])))
    assert out.status == "ok" and out.value == pytest.approx(value), out.details["claims"]


@pytest.mark.parametrize(("text", "words"), [
    pytest.param("a guarantee", {"warranty"}, id="guarantee-reads-warranty"),
    pytest.param("staff", {"employee"}, id="staff-reads-employee"),
    pytest.param("records are held", {"record", "keep"}, id="irregular-held-reads-keep"),
    pytest.param("flushing", {"rinse"}, id="flush-reads-rinse"),
    pytest.param("monthly", {"month"}, id="monthly-reads-month"),
])
def test_meaning_words(text: str, words: set[str]) -> None:
    assert meaning_words(text) == words


@pytest.mark.parametrize(("text", "is_negated"), [
    pytest.param("Patients should not exceed 2 g per day.", False, id="not-exceed-is-a-bound"),
    pytest.param("Doses must not go over 4 g.", False, id="not-go-over-is-a-bound"),
])
def test_bounds_are_not_negations(text: str, is_negated: bool) -> None:
    assert negated(text) is is_negated
