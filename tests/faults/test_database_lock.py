"""A write lock held by another process past SQLite's busy timeout: the runner retries its writes; held longer than
its patience, the run stops cleanly (status 'pending' with the reason, never stuck at 'running', no item failed
for a database reason) and a resume finishes it, re-buying at most the calls that were in flight."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time

import pytest

from core.generation import runner, runs
from core.store import db
from core.testing.fake_server import FakeLLMServer, prompt_text
from tests.factories import add_model, seed_instances
from tests.faults.conftest import figure, run_row, statuses, wait_until
from tests.providers.conftest import point_sdks_at

ITEMS = 24
CONCURRENCY = 4


def hold_write_lock(path: str, seconds: float, started: threading.Event) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    started.set()
    time.sleep(seconds)
    conn.execute("COMMIT")
    conn.close()


@pytest.mark.sqlite_only
@pytest.mark.parametrize("hold_s, patience_s, stops", [
    pytest.param(1.0, 10.0, False, id="lock-shorter-than-patience-run-finishes"),
    pytest.param(2.0, 0.3, True, id="lock-longer-than-patience-clean-stop-then-resume"),
])
def test_a_long_write_lock_never_leaves_a_run_stuck(db_url, monkeypatch, tmp_path, hold_s, patience_s, stops):
    monkeypatch.setattr(db, "SQLITE_BUSY_TIMEOUT_MS", 100)
    monkeypatch.setenv("GAUNTLET_DB_PATIENCE_S", str(patience_s))
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    engine = db.make_engine(db_url)
    seed_instances(engine, ITEMS)
    add_model(engine, "gpt-x", "openai")
    run_id = runs.create_run(engine, runs.RunOptions(models=["gpt-x"], concurrency=CONCURRENCY))
    locked = threading.Event()
    with FakeLLMServer(latency_ms=100) as server:
        point_sdks_at(monkeypatch, server)

        def lock_when_calls_start() -> None:
            wait_until(lambda: len(server.requests) >= CONCURRENCY, what="calls in flight")
            hold_write_lock(db_url.removeprefix("sqlite:///"), hold_s, locked)

        holder = threading.Thread(target=lock_when_calls_start)
        holder.start()
        first = asyncio.run(runner.execute_run(engine, run_id))
        holder.join()
        after_first = run_row(engine, run_id)
        second = asyncio.run(runner.execute_run(engine, run_id)) if stops else first
        prompts = [prompt_text(body) for body in server.requests]
    row = run_row(engine, run_id)
    engine.dispose()
    figure(f"database lock {hold_s} s (busy timeout 0.1 s, patience {patience_s} s): first pass {first.status} "
           f"({first.done} done, {first.failed} failed), message {after_first.message!r}; after resume "
           f"{row.status}, {len(prompts)} calls for {ITEMS} items, re-bought reported {row.rebought_calls}")
    assert locked.is_set()
    assert first.failed == 0 and after_first.status != "running"
    if stops:
        assert first.status == after_first.status == "pending" and "database stayed locked" in after_first.message
    else:
        assert first.status == "done"
    assert second.status == row.status == "done" and statuses(engine, run_id) == {"done": ITEMS}
    assert len(set(prompts)) == ITEMS and len(prompts) - ITEMS <= row.rebought_calls <= CONCURRENCY
