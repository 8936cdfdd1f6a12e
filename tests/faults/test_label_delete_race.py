"""Deleting a hidden run while an expert labels one of its responses: a third connection holds the write lock so that
both writes wait for it and then go in turn. Whoever wins, no label is left pointing at a deleted response, and the
loser is told why in one sentence. Both backends."""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from core.generation import run_archive
from core.review.gold import draw_gold_sample, record_gold_label
from core.services import runs as run_services
from tests.workspace_factories import principal, seeded_db

YES = {"constraints": {"c1": True, "c2": True}}
LOSER_MESSAGES = (
    r"response \d+ no longer exists \(its run was deleted meanwhile\); the label was not stored",
    r"run \d+ holds 1 human label\(s\) \(labelled since you confirmed\), which are never deleted",
)
ORPHANS = text("SELECT count(*) FROM annotation a WHERE a.target_type = 'response' "
               "AND NOT EXISTS (SELECT 1 FROM response r WHERE r.id = a.target_id)")


@contextmanager
def write_lock_held(url: str) -> Iterator[Callable[[], int]]:
    """A third connection holding the write lock (SQLite: the database's; PostgreSQL: the run and label tables);
    yields a function counting the writers now waiting for it (-1 where the backend cannot tell)."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        conn = sqlite3.connect(parsed.database or "", isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield lambda: -1
        finally:
            conn.execute("ROLLBACK")
            conn.close()
        return
    args = {"host": parsed.host, "port": parsed.port, "user": parsed.username, "password": parsed.password,
            "dbname": parsed.database}
    with psycopg.connect(**args) as holder, psycopg.connect(**args, autocommit=True) as watcher:
        holder.execute("LOCK TABLE run, annotation IN EXCLUSIVE MODE")
        try:
            yield lambda: watcher.execute("SELECT count(*) FROM pg_locks WHERE NOT granted").fetchone()[0]
        finally:
            holder.rollback()


def _outcome(action: Callable[[], Any], into: dict[str, Any], name: str) -> None:
    try:
        into[name] = action()
    except Exception as exc:  # noqa: BLE001 - the loser's refusal is what the test reads
        into[name] = exc


def _wait_for_writers(waiting: Callable[[], int], writers: int) -> None:
    deadline = time.monotonic() + 20
    if waiting() < 0:  # SQLite cannot list its waiters: both threads reach their write well within this
        time.sleep(1.5)
        return
    while waiting() < writers:
        assert time.monotonic() < deadline, "the two writes never queued behind the lock"
        time.sleep(0.05)


@pytest.mark.parametrize("round_", range(3), ids=lambda n: f"round-{n}")
def test_deleting_a_run_and_labelling_it_at_once_never_leaves_an_orphan(tmp_path, round_):
    seeded = seeded_db(tmp_path)
    engine, admin, run_id = seeded.engine, principal("admin"), seeded.run_id
    draw_gold_sample(engine, admin, run_id, n=8, experts=["alice", "bob"], seed=round_)
    with engine.connect() as conn:
        rid = conn.execute(text("SELECT target_id FROM assignment WHERE kind = 'gold_label' AND assignee = 'alice' "
                                "ORDER BY target_id")).scalars().first()
    assert rid is not None
    run_services.hide_run(engine, admin, run_id, True, None)
    plan = run_archive.deletion_plan(engine, run_id)
    assert plan.annotations == 0
    outcomes: dict[str, Any] = {}
    with write_lock_held(seeded.url) as waiting:
        threads = [
            threading.Thread(target=_outcome, args=(lambda: run_services.delete_run(engine, admin, run_id, plan),
                                                    outcomes, "delete")),
            threading.Thread(target=_outcome, args=(lambda: record_gold_label(engine, principal("alice"), rid, YES,
                                                                              f"race-{round_}"), outcomes, "label")),
        ]
        for thread in threads:
            thread.start()
        _wait_for_writers(waiting, 2)
    for thread in threads:
        thread.join(60)
    with engine.connect() as conn:
        assert conn.execute(ORPHANS).scalar_one() == 0, outcomes
    failed = {name: exc for name, exc in outcomes.items() if isinstance(exc, Exception)}
    assert len(failed) == 1, outcomes
    (loser, error), = failed.items()
    assert isinstance(error, ValueError), error
    assert any(re.search(pattern, str(error)) for pattern in LOSER_MESSAGES), (loser, str(error))


def test_the_foreign_key_refuses_to_delete_a_labelled_response_or_to_label_a_deleted_one(tmp_path):
    from sqlalchemy.exc import IntegrityError

    seeded = seeded_db(tmp_path)
    engine, labelled, other = seeded.engine, *sorted(seeded.responses.values())[:2]
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO annotation (kind, target_type, target_id, response_id, author, payload, "
                          "guidelines_version, created_at) VALUES ('gold_label', 'response', :r, :r, 'alice', '{}', "
                          "'', CURRENT_TIMESTAMP)"), {"r": labelled})
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(text("DELETE FROM response WHERE id = :r"), {"r": labelled})
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM response WHERE id = :r"), {"r": other})
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(text("INSERT INTO annotation (kind, target_type, target_id, response_id, author, payload, "
                          "guidelines_version, created_at) VALUES ('gold_label', 'response', :r, :r, 'alice', '{}', "
                          "'', CURRENT_TIMESTAMP)"), {"r": other})
