"""The data and gold-label versions (readmodel.data_version, gold_version, and versions: both in one statement, read by
every results page on every run) are the max ids and counts of their tables, and change when a row arrives."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select
from sqlmodel import Session

from core.analysis import readmodel
from core.store.models import Annotation, Assignment, Response, Verdict
from tests.workspace_factories import add_verdicts, seeded_db


def counted(engine) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """The versions from one query per aggregate, as they were read before."""
    with Session(engine) as s:
        one = lambda q: int(s.execute(q).one()[0] or 0)  # noqa: E731
        return ((one(select(func.max(Verdict.id))), one(select(func.count()).select_from(Verdict)),
                 one(select(func.max(Response.id)))),
                (one(select(func.max(Annotation.id))), one(select(func.count()).select_from(Annotation)),
                 one(select(func.max(Assignment.id)))))


def _verdicts(s) -> None:
    rid = s.responses[("model-a", "E-gap")]
    add_verdicts(s.engine, s, "llm:j1", {(rid, "c1"): 1, (rid, "rejection"): 0})


def _annotation(s) -> None:
    with Session(s.engine) as session:
        session.add(Annotation(kind="gold_label", target_type="response", target_id=s.responses[("model-a", "E-gap")],
                               author="alice", payload={"note": "x"}))
        session.commit()


@pytest.mark.parametrize(
    ("change", "data_moves", "gold_moves"),
    [
        pytest.param(None, False, False, id="unchanged"),
        pytest.param(_verdicts, True, False, id="new-verdicts"),
        pytest.param(_annotation, False, True, id="new-label"),
    ],
)
def test_versions(tmp_path, change, data_moves, gold_moves) -> None:
    s = seeded_db(tmp_path)
    before = readmodel.versions(s.engine)
    assert before == counted(s.engine) == (readmodel.data_version(s.engine), readmodel.gold_version(s.engine))
    if change is not None:
        change(s)
    after = readmodel.versions(s.engine)
    assert after == counted(s.engine)
    assert (after[0] != before[0], after[1] != before[1]) == (data_moves, gold_moves)
