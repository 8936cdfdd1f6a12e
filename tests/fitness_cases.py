"""Stored judge checks that give the heuristic judge each fitness statement, for the surfaces' tests."""

from __future__ import annotations

from sqlalchemy import delete
from sqlmodel import Session

from core.services.judge_checks import save_check
from core.store.models import JudgeCheck

# (case id, overall kappa stored for the heuristic judge or None for never checked, statement, warning level)
FITNESS_CASES = [
    ("fit-to-decide", 0.82, "FIT TO DECIDE", "ok"),
    ("fit-to-explore-only", 0.55, "FIT TO EXPLORE", "warning"),
    ("not-fit", 0.23, "NOT FIT", "error"),
    ("unmeasured", None, "UNDETERMINED", "warning"),
]
UNMEASURED = "fitness not measured: run `gauntlet judge check heuristic --suite ragchecker-meta`"


def store_heuristic_fitness(engine, kappa: float | None, n_labels: int = 500) -> None:
    """Replace every stored judge check by one suite check of the heuristic judge with this overall kappa."""
    with Session(engine) as session:
        session.exec(delete(JudgeCheck))  # type: ignore[call-overload]
        session.commit()
    if kappa is not None:
        figures = {"dimensions": {"overall": {"kappa": kappa, "n_agreement": n_labels}}}
        save_check(engine, "suite", "heuristic", "heuristic", "0123456789ab", "ragchecker-meta", 280, figures)
