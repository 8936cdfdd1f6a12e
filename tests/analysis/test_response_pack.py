"""response_pack (migration 0031): the summarise stage stores each run's per-response scores statement as packed
float64 columns, and response_scores reads the packs where every run's summaries are current and packed. Every frame
read through the packs equals, byte for byte (assert_frame_equal, exact, dtypes included), the one the statement
gives over the stored summaries and the one the stale path gives inline: on the bundled sample and the paper-scale
set, on two runs whose response ids interleave, and with a run without a pack (read inline, as a run summarised
before the migration is). On the active backend (SQLite, and PostgreSQL in its pass). Reads never write."""

from __future__ import annotations

import pandas as pd
import pytest
from sqlalchemy import text

from bench.make_synthetic_results import make_results
from core.analysis import readmodel
from core.analysis.readmodel import decision_scores as keys
from core.analysis.readmodel import responses
from core.scoring.summaries import PACK_COLUMNS, read_response_pack, rebuild_summaries, stale_summary_runs
from core.store.db import make_engine
from core.store.models import Run

pytestmark = [pytest.mark.db, pytest.mark.xdist_group("paper-scale")]

JUDGE = "heuristic"


def _inline(monkeypatch, engine, run_ids, judge) -> pd.DataFrame:
    """response_scores with the packs left unread (the statement over the stored summaries)."""
    with monkeypatch.context() as patched:
        patched.setattr(responses, "read_response_pack", lambda *_: None)
        return readmodel.response_scores(engine, run_ids, judge)


def _packs(engine) -> list[tuple]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text("SELECT run_id, judge, rows, cells FROM response_pack "
                                                    "ORDER BY run_id, judge"))]


def test_packed_scores_equal_the_statement_and_the_stale_path(dataset, monkeypatch) -> None:
    engine, run_ids, judge = dataset.at(stale=False)
    assert read_response_pack(engine, run_ids, judge) is not None  # the stored copy reads its packs
    before = _packs(engine)
    packed = readmodel.response_scores(engine, run_ids, judge)
    assert _packs(engine) == before  # reading never writes
    pd.testing.assert_frame_equal(packed, _inline(monkeypatch, engine, run_ids, judge), check_exact=True)
    stale_engine, _, _ = dataset.at(stale=True)
    assert stale_summary_runs(stale_engine, run_ids, judge)
    pd.testing.assert_frame_equal(packed, readmodel.response_scores(stale_engine, run_ids, judge), check_exact=True)
    # the picker's scores on it (decision_scores, then key_summary) are the same too
    inline = _inline(monkeypatch, engine, run_ids, judge)
    scores = keys.decision_scores(engine, tuple(run_ids), judge, packed)
    pd.testing.assert_frame_equal(scores, keys.decision_scores(engine, tuple(run_ids), judge, inline), check_exact=True)


@pytest.fixture(scope="module")
def two_runs(session_url_factory):
    """A small synthetic set whose odd responses (with their verdicts) moved to a second run, both summarised."""
    url = session_url_factory()
    make_results(url, n_models=3, n_instances=30, seed=5, with_baselines=True)
    engine = make_engine(url)
    with engine.begin() as conn:
        columns = [c.name for c in Run.__table__.columns if c.name not in ("id", "name")]
        conn.execute(text(f"INSERT INTO run (id, name, {', '.join(columns)}) "
                          f"SELECT 2, name || ' 2', {', '.join(columns)} FROM run WHERE id = 1"))
        conn.execute(text("UPDATE response SET run_id = 2 WHERE id % 2 = 1"))
        conn.execute(text("UPDATE verdict SET run_id = 2 WHERE response_id % 2 = 1"))
    for run_id in (1, 2):
        rebuild_summaries(engine, run_id, JUDGE)
    assert not stale_summary_runs(engine, [1, 2], JUDGE)
    yield engine
    engine.dispose()


def test_two_runs_packs_read_in_response_order(two_runs, monkeypatch) -> None:
    fetched = read_response_pack(two_runs, [2, 1], JUDGE)
    assert fetched is not None and set(fetched) == set(PACK_COLUMNS)
    ids = fetched["response_id"]
    assert len(ids) and (ids[1:] > ids[:-1]).all() and set(fetched["run_id"]) == {1.0, 2.0}
    for runs in ([1, 2], [2], [1]):
        pd.testing.assert_frame_equal(readmodel.response_scores(two_runs, runs, JUDGE),
                                      _inline(monkeypatch, two_runs, runs, JUDGE), check_exact=True)


def test_a_run_without_a_pack_is_read_inline(two_runs, monkeypatch) -> None:
    packed = readmodel.response_scores(two_runs, [1, 2], JUDGE)
    with two_runs.begin() as conn:  # as a run summarised before migration 0031
        saved = conn.execute(text("SELECT run_id, judge, protocols, names, rows, cells FROM response_pack "
                                  "WHERE run_id = 2")).mappings().all()
        conn.execute(text("DELETE FROM response_pack WHERE run_id = 2"))
    try:
        assert read_response_pack(two_runs, [1, 2], JUDGE) is None
        assert read_response_pack(two_runs, [1], JUDGE) is not None
        pd.testing.assert_frame_equal(readmodel.response_scores(two_runs, [1, 2], JUDGE), packed, check_exact=True)
    finally:
        with two_runs.begin() as conn:
            conn.execute(text("INSERT INTO response_pack (run_id, judge, protocols, names, rows, cells) VALUES "
                              "(:run_id, :judge, :protocols, :names, :rows, :cells)"), [dict(r) for r in saved])
    with two_runs.begin() as conn:  # packed for other constraint protocols than are registered now: not read
        conn.execute(text("UPDATE response_pack SET protocols = 'other' WHERE run_id = 1"))
    try:
        assert read_response_pack(two_runs, [1, 2], JUDGE) is None
        pd.testing.assert_frame_equal(readmodel.response_scores(two_runs, [1, 2], JUDGE), packed, check_exact=True)
    finally:
        rebuild_summaries(two_runs, 1, JUDGE)
    assert read_response_pack(two_runs, [1, 2], JUDGE) is not None


def test_a_rebuild_replaces_the_pack(two_runs) -> None:
    before = [(r, j, n) for r, j, n, _ in _packs(two_runs)]
    rebuild_summaries(two_runs, 1, JUDGE)
    assert [(r, j, n) for r, j, n, _ in _packs(two_runs)] == before
