"""Runner: fault mix ends with every item done or failed, cache across runs, budget stop and resume, retry-failed,
cancellation, reports from verdicts, key hygiene in DB/logs/exports, and the run/models/report CLI."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest
from sqlmodel import Session, select
from typer.testing import CliRunner

from core.analysis import readmodel
from core.cli import app
from core.commands.run import render_report
from core.generation import registered_models, run_estimates, run_progress, run_prompts, runner, runs
from core.generation.providers.base import ModelConfig
from core.generation.ratelimit import ManualClock
from core.store.models import Model, Response, Run
from core.testing.fake_server import FakeLLMServer, ScriptRule
from tests.factories import add_model, seed_instances
from tests.providers.conftest import PLANTED_KEY, point_sdks_at

FAST = {"timeout_s": 0.3}


@pytest.fixture
def bench(engine, monkeypatch, tmp_path):
    """Six instances, an openai and an anthropic model, and the baselines."""
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    seed_instances(engine, 6)
    add_model(engine, "gpt-x", "openai", settings=FAST)
    add_model(engine, "claude-x", "anthropic", settings=FAST)
    registered_models.ensure_baselines(engine)
    return engine


def serve(monkeypatch, **kwargs) -> FakeLLMServer:
    server = FakeLLMServer(hang_s=0.5, **kwargs).start()
    point_sdks_at(monkeypatch, server)
    return server


def execute(engine, run_id: int, **overrides):
    return asyncio.run(runner.execute_run(engine, run_id, clock=ManualClock(), overrides=overrides))


def statuses(engine, run_id: int) -> dict[str, int]:
    with Session(engine) as session:
        rows = session.exec(select(Response.status).where(Response.run_id == run_id)).all()
    return {s: rows.count(s) for s in set(rows)}


@pytest.mark.parametrize(
    ("max_retries", "expect_failures"),
    [pytest.param(0, True, id="no-retries-some-fail"), pytest.param(6, False, id="retries-absorb-faults")],
)
def test_fault_mix_every_item_done_or_failed_with_reason(bench, monkeypatch, max_retries, expect_failures):
    server = serve(monkeypatch, error_rate=0.2, seed=3)
    try:
        models = ["gpt-x", "claude-x", "baseline:extractive", "baseline:always-refuse"]
        run_id = runs.create_run(bench, runs.RunOptions(models=models, concurrency=4, max_retries=max_retries))
        result = execute(bench, run_id)
    finally:
        server.stop()
    counts = statuses(bench, run_id)
    assert result.status == "done" and counts.get("pending", 0) == 0
    assert counts.get("done", 0) + counts.get("failed", 0) == result.total == 24
    assert (counts.get("failed", 0) > 0) is expect_failures
    assert server.fault_count > 0
    failures = runs.failed_items(bench, run_id)
    assert len(failures) == counts.get("failed", 0) and all(f["error"] for f in failures)
    report = readmodel.generation_summary(bench, run_id).set_index("model").to_dict("index")
    assert sum(r["done"] + r["failed"] for r in report.values()) == 24
    assert report["baseline:always-refuse"]["done"] == 6 and report["gpt-x"]["input_tokens"] > 0


def test_identical_calls_hit_the_cache_across_runs(bench, monkeypatch):
    server = serve(monkeypatch)
    try:
        first = runs.create_run(bench, runs.RunOptions(models=["gpt-x"]))
        execute(bench, first)
        calls_after_first = server.call_count
        second = runs.create_run(bench, runs.RunOptions(models=["gpt-x"]))
        assert run_estimates.estimate_run(bench, second).calls == 0
        result = execute(bench, second)
    finally:
        server.stop()
    assert calls_after_first == 6 and server.call_count == 6
    assert result.done == 6 and result.cached == 6 and result.spent_usd == 0
    report = readmodel.generation_summary(bench, second).iloc[0]
    assert report["cached"] == 6 and report["spent_usd"] == 0 and report["cost_usd"] > 0


def test_budget_stops_cleanly_and_resume_finishes(bench, monkeypatch):
    with Session(bench) as session:
        model = session.exec(select(Model).where(Model.name == "gpt-x")).one()
        model.price_input_per_mtok = model.price_output_per_mtok = 1000.0
        session.add(model)
        session.commit()
    server = serve(monkeypatch)
    try:
        run_id = runs.create_run(bench, runs.RunOptions(models=["gpt-x"], concurrency=1))
        estimate = run_estimates.estimate_run(bench, run_id)
        budget = estimate.max_cost_usd / 3  # room for about two calls at their worst case
        stopped = execute(bench, run_id, budget_usd=budget)
        pending_at_stop = statuses(bench, run_id).get("pending", 0)
        finished = execute(bench, run_id, budget_usd=100.0)
    finally:
        server.stop()
    assert estimate.calls == 6
    assert stopped.status == "budget_stopped" and 0 < pending_at_stop < 6
    assert 0 < stopped.spent_usd <= budget  # each call's worst case is reserved before it is sent: never over
    assert finished.status == "done" and statuses(bench, run_id) == {"done": 6}
    assert server.call_count == 6


def test_retry_failed_puts_failures_back_and_finishes(bench, monkeypatch):
    server = serve(monkeypatch, script=[ScriptRule(match=r"\(case 2\)", fault="503", times=1)])
    try:
        run_id = runs.create_run(bench, runs.RunOptions(models=["gpt-x"], max_retries=0))
        first = execute(bench, run_id)
        failures = runs.failed_items(bench, run_id)
        assert runs.retry_failed(bench, run_id) == 1
        second = execute(bench, run_id)
    finally:
        server.stop()
    assert (first.done, first.failed) == (5, 1) and "http_503" in failures[0]["error"]
    assert second.status == "done" and statuses(bench, run_id) == {"done": 6}
    with Session(bench) as session:
        retried = session.get(Response, failures[0]["response_id"])
    assert retried.attempts == 2 and retried.error is None


def test_cancel_stops_dispatching(bench, monkeypatch):
    server = serve(monkeypatch, latency_ms=150)
    monkeypatch.setattr(runner, "MONITOR_INTERVAL_S", 0.05)
    run_id = runs.create_run(bench, runs.RunOptions(models=["gpt-x"], concurrency=1))

    async def run_then_cancel():
        task = asyncio.create_task(runner.execute_run(bench, run_id))
        for _ in range(400):  # cancel once the executor is answering (a loaded machine may take a while to start it)
            await asyncio.sleep(0.05)
            if (await asyncio.to_thread(run_progress.progress_snapshot, bench, run_id)).done >= 1:
                break
        await asyncio.to_thread(runs.request_cancel, bench, run_id)
        return await task

    try:
        result = asyncio.run(run_then_cancel())
    finally:
        server.stop()
    assert result.status == "cancelled" and result.pending > 0 and result.done >= 1
    with Session(bench) as session:
        assert session.get(Run, run_id).status == "cancelled"


def test_keys_never_reach_db_logs_or_exports(bench, monkeypatch, tmp_path):
    log_file = tmp_path / "gauntlet.log"
    handler = logging.FileHandler(log_file)
    logging.getLogger("gauntlet").addHandler(handler)
    logging.getLogger("gauntlet").setLevel(logging.DEBUG)
    server = serve(monkeypatch, error_rate=0.3, seed=5, leak_auth_in_errors=True)
    try:
        run_id = runs.create_run(bench, runs.RunOptions(models=["gpt-x", "claude-x"], max_retries=0))
        execute(bench, run_id)
    finally:
        server.stop()
        logging.getLogger("gauntlet").removeHandler(handler)
        handler.close()
    failures = runs.failed_items(bench, run_id)
    assert failures and any("***" in f["error"] for f in failures)
    export = tmp_path / "report.json"
    export.write_text(render_report(readmodel.run_report(bench, run_id), "json", failures))
    db_path = Path(str(bench.url.database))
    bench.dispose()
    haystacks = [p for p in db_path.parent.glob(db_path.name + "*")] + [log_file, export]
    for path in haystacks:
        assert PLANTED_KEY.encode() not in path.read_bytes(), path
    assert "failed" in log_file.read_text()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        pytest.param({"api_key": "abc"}, "looks like a secret", id="key-field"),
        pytest.param({"base_url": PLANTED_KEY}, "holds a secret value", id="secret-value"),
    ],
)
def test_model_settings_refuse_secrets(bench, monkeypatch, settings, message):
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED_KEY)
    with pytest.raises(ValueError, match=message):
        registered_models.register_model(bench, ModelConfig(name="bad", provider="openai", settings=settings))


def test_cli_models_run_and_report(bench, db_url):
    cli = CliRunner()
    added = cli.invoke(app, ["models", "add", "gpt-4o-mini", "--provider", "openai", "--setting",
                             "reasoning_effort=low"])
    assert added.exit_code == 0 and "$0.15/$0.6" in added.output
    listed = cli.invoke(app, ["models", "list"])
    assert "gpt-4o-mini" in listed.output and "baseline:extractive" in listed.output
    dry = cli.invoke(app, ["run", "--models", "baseline:extractive,gpt-4o-mini", "--dry-run", "--limit", "3"])
    assert dry.exit_code == 0, dry.output
    done = cli.invoke(app, ["run", "--models", "baseline:extractive", "--modes", "gap", "--quiet"])
    assert done.exit_code == 0 and "done: 2 done, 0 failed" in done.output, done.output
    run_id = int(done.output.split("run ")[1].split()[0])
    report = json.loads(cli.invoke(app, ["report", str(run_id), "--format", "json"]).output)
    assert report["models"][0]["generation"]["done"] == 2 and report["failed"] == [] and report["judge"] is None
    csv_out = cli.invoke(app, ["report", str(run_id), "--format", "csv"]).output
    assert csv_out.splitlines()[0].startswith("run,judge,model,items,done,failed")
    unknown = cli.invoke(app, ["run", "--models", "nope"])
    assert unknown.exit_code == 2


def test_prompt_rows_build_the_same_messages_as_orm_objects(bench):
    from collections import defaultdict

    from core.protocols.enterprise_rag.prompt import build_messages
    from core.store.models import Constraint, Document, Instance

    with Session(bench) as session:
        instances = session.exec(select(Instance)).all()
        loaded = run_prompts.load_prompts(session, [i.id for i in instances], "support_middle", 3)
        constraints, documents = defaultdict(list), defaultdict(list)
        for c in session.exec(select(Constraint)):
            constraints[c.instance_id].append(c)
        for d in session.exec(select(Document)):
            documents[d.instance_id].append(d)
        for instance in instances:
            expected = build_messages(instance, constraints[instance.id], documents[instance.id],
                                      order="support_middle", seed=3)
            assert loaded[instance.id] == expected


def test_preloaded_prompts_are_hashed_once_and_keys_match(bench, monkeypatch):
    from core.generation import llm
    from core.generation.providers.base import ChatMessage

    config = ModelConfig(name="b", provider="baseline", model_name="baseline:always-refuse")
    client = llm.LLMClient(config, bench)
    messages = [ChatMessage(role="user", content="q1")]
    expected = llm.cache_key(config, messages)
    client.preload([messages])
    hashed = []
    monkeypatch.setattr(llm, "cache_key", lambda config, m: hashed.append(m) or "other")
    assert client.key_for(messages) == expected
    assert asyncio.run(client.complete(messages)).cache_key == expected
    assert hashed == []
    assert client.key_for([ChatMessage(role="user", content="q1")]) == "other" and len(hashed) == 1
