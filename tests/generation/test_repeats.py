"""`--repeats k`: each item answered k times, each repeat with its own seed and content-addressed cache key (paid
once, never twice on a rerun or resume), recorded on the response; repeat 0 keeps today's cache key."""

from __future__ import annotations

from collections import Counter

import pytest
from sqlmodel import Session, select

from core.generation import run_estimates, runs
from core.generation.llm import cache_key, config_from_model, repeat_config
from core.store.models import Model, Response
from tests.test_runner import execute, serve

ITEMS = 4 + 1 + 2  # the `mixed` fixture: four open reference-QA questions, one MCQ, two EnterpriseRAG instances


def responses(engine, run_id: int) -> list[Response]:
    with Session(engine) as session:
        return list(session.exec(select(Response).where(Response.run_id == run_id).order_by(Response.id)).all())


@pytest.mark.parametrize("repeats", [pytest.param(1, id="one"), pytest.param(3, id="three")])
def test_each_repeat_is_an_item_with_its_own_seed_and_cache_key(mixed, monkeypatch, repeats):
    server = serve(monkeypatch)
    try:
        run_id = runs.create_run(mixed, runs.RunOptions(models=["gpt-x"], repeats=repeats))
        estimate = run_estimates.estimate_run(mixed, run_id)
        result = execute(mixed, run_id)
    finally:
        server.stop()
    rows = responses(mixed, run_id)
    assert Counter(r.repeat for r in rows) == {k: ITEMS for k in range(repeats)}
    assert result.status == "done" and result.done == ITEMS * repeats
    keys = {(r.instance_id, r.repeat): r.cache_key for r in rows}
    assert len(set(keys.values())) == ITEMS * repeats == server.call_count == estimate.calls
    assert Counter(body.get("seed") for body in server.requests) == {None: ITEMS} | {k: ITEMS for k in range(1, repeats)}


def test_repeat_zero_keeps_the_cache_key_of_a_plain_run(mixed):
    with Session(mixed) as session:
        config = config_from_model(session.exec(select(Model).where(Model.name == "gpt-x")).one())
    assert repeat_config(config, 0) is config
    messages_key = cache_key(config, [])
    assert cache_key(repeat_config(config, 0), []) == messages_key
    assert len({cache_key(repeat_config(config, k), []) for k in range(4)}) == 4


def test_a_second_run_with_repeats_pays_nothing_and_more_repeats_pay_only_the_new_ones(mixed, monkeypatch):
    server = serve(monkeypatch)
    try:
        execute(mixed, runs.create_run(mixed, runs.RunOptions(models=["gpt-x"], repeats=2)))
        paid = server.call_count
        again = execute(mixed, runs.create_run(mixed, runs.RunOptions(models=["gpt-x"], repeats=2)))
        more_id = runs.create_run(mixed, runs.RunOptions(models=["gpt-x"], repeats=3))
        estimate = run_estimates.estimate_run(mixed, more_id)
        more = execute(mixed, more_id)
    finally:
        server.stop()
    assert paid == 2 * ITEMS and again.cached == again.done == 2 * ITEMS and again.spent_usd == 0
    assert estimate.calls == ITEMS and more.cached == 2 * ITEMS and server.call_count == paid + ITEMS


def test_resume_after_a_budget_stop_never_pays_a_repeat_twice(mixed, monkeypatch):
    server = serve(monkeypatch)
    try:
        run_id = runs.create_run(mixed, runs.RunOptions(models=["gpt-x"], repeats=2, concurrency=1))
        first = execute(mixed, run_id, budget_usd=1e-9)
        execute(mixed, run_id, budget_usd=100.0)
    finally:
        server.stop()
    rows = responses(mixed, run_id)
    assert first.status == "budget_stopped" and all(r.status == "done" for r in rows)
    assert server.call_count == len({r.cache_key for r in rows}) == 2 * ITEMS


@pytest.mark.parametrize("repeats", [pytest.param(0, id="zero"), pytest.param(runs.MAX_REPEATS + 1, id="too-many")])
def test_repeats_out_of_range_are_refused(mixed, repeats):
    with pytest.raises(ValueError, match="--repeats must be between 1"):
        runs.create_run(mixed, runs.RunOptions(models=["gpt-x"], repeats=repeats))


def test_ray_shards_plan_each_repeat_as_its_own_call(mixed):
    from core.generation import ray_executor

    run_id = runs.create_run(mixed, runs.RunOptions(models=["gpt-x"], repeats=2))
    groups = ray_executor.plan_shards(mixed, run_id, runs.run_options(mixed, run_id), 4 * ITEMS)
    assert len(groups) == 2 * ITEMS and all(len(group) == 1 for group in groups)


def test_repeats_belong_to_a_new_run(mixed, monkeypatch):
    from typer.testing import CliRunner

    from core.cli import app

    monkeypatch.setenv("GAUNTLET_DATABASE_URL", mixed.url.render_as_string(hide_password=False))
    run_id = runs.create_run(mixed, runs.RunOptions(models=["gpt-x"]))
    result = CliRunner().invoke(app, ["run", "--resume", str(run_id), "--repeats", "3"])
    assert result.exit_code == 2 and "--repeats applies to a new run" in result.output
    assert len(responses(mixed, run_id)) == ITEMS
