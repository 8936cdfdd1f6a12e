"""kill -9 at seeded random points, then `run --resume` (10 trials): every item done, the calls bought again are
at most the calls in flight at the kill (the concurrency) and never more than the run reports as re-bought, and
the recorded spend plus the re-bought reservations cover the provider's bill."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time

import pytest

from core.generation import runner, runs
from core.testing.fake_server import FakeLLMServer, prompt_text
from tests.factories import add_model, seed_instances
from tests.faults.conftest import bill, env_for, figure, finish, gauntlet, run_row, start, statuses, wait_until
from tests.providers.conftest import point_sdks_at

ITEMS = 12
CONCURRENCY = 4
TRIALS = 10
SEED = 13

@pytest.mark.parametrize("trial", range(TRIALS))
def test_kill_9_at_a_random_point_rebuys_at_most_the_calls_in_flight(engine, db_url, tmp_path, monkeypatch, trial):
    rng = random.Random(SEED * 100 + trial)
    kill_after = rng.uniform(0.0, 0.4)  # seconds after the first request reaches the provider (the run takes ~0.3 s)
    seed_instances(engine, ITEMS)
    add_model(engine, "gpt-x", "openai")
    run_id = runs.create_run(engine, runs.RunOptions(models=["gpt-x"], concurrency=CONCURRENCY))
    with FakeLLMServer(latency_ms=100) as server:
        env = env_for(db_url, server, tmp_path)
        first = start(gauntlet("run", "--resume", str(run_id), "--quiet"), env)
        wait_until(lambda: server.requests or first.poll() is not None, what="the first provider call")
        time.sleep(kill_after)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        saved = statuses(engine, run_id).get("done", 0)
        if trial == 0:  # through the CLI, which prints the re-bought line
            code, output = finish(start(gauntlet("run", "--resume", str(run_id), "--quiet"), env))
        else:  # in process (faster); the run's message carries the same line
            point_sdks_at(monkeypatch, server)
            monkeypatch.setenv("GAUNTLET_SECRETS_FILE", env["GAUNTLET_SECRETS_FILE"])
            code = 0 if asyncio.run(runner.execute_run(engine, run_id)).status == "done" else 1
            output = run_row(engine, run_id).message
        prompts = [prompt_text(body) for body in server.requests]
        billed = bill(server)
    row = run_row(engine, run_id)
    rebought = len(prompts) - len(set(prompts))
    figure(f"kill -9 trial {trial}: killed {kill_after:.2f} s in, after {saved} saved answers; provider calls {len(prompts)} for {ITEMS} "
           f"items, re-bought {rebought} (reported {row.rebought_calls}, ${row.rebought_usd:.6f}); bill "
           f"${billed:.6f}, recorded spend ${row.spent_usd:.6f}")
    assert code == 0, output
    assert statuses(engine, run_id) == {"done": ITEMS} and row.status == "done"
    assert len(set(prompts)) == ITEMS
    assert rebought <= row.rebought_calls <= CONCURRENCY, "re-bought calls exceed the calls in flight"
    if row.rebought_calls:
        assert f"re-bought: {row.rebought_calls} calls" in output and "re-bought" in row.message
    assert billed <= row.spent_usd + row.rebought_usd + 1e-12, "the bill exceeds the recorded and reported spend"
    assert row.spent_usd <= billed + 1e-12, "spend recorded that the provider never billed"
