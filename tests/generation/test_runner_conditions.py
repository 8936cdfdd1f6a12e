"""Runs over (model, instance, condition): one item per condition the instance's protocol declares, the condition
stored, a content-addressed cache key per prompt, and resume, retry-failed, budget and cancel per condition against
the fake server (nothing paid twice)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
from sqlmodel import Session, select
from typer.testing import CliRunner

from core.cli import app
from core.config import REPO_ROOT
from core.generation import run_estimates, run_progress, runner, runs
from core.store.models import Instance, LLMCall, Response, Run
from core.testing.fake_server import FakeLLMServer, ScriptRule, prompt_text
from tests.factories import add_model
from tests.test_runner import execute, serve
from tests.test_runner_resume import cli_env

CONDITIONS = ["", "closed_book", "html_as_text"]
QA_OPEN, QA_MCQ, ENTERPRISE = 4, 1, 2
QA_ITEMS = (QA_OPEN + QA_MCQ) * 3  # every reference-QA instance under the three conditions
ITEMS = QA_ITEMS + ENTERPRISE  # EnterpriseRAG declares only its default


def rows(engine, run_id: int) -> list[tuple[Response, str]]:
    with Session(engine) as session:
        return list(session.exec(select(Response, Instance.protocol)
                                 .join(Instance, Instance.id == Response.instance_id)
                                 .where(Response.run_id == run_id)).all())


def unique_prompts(engine, run_id: int) -> int:
    return len({r.cache_key for r, _ in rows(engine, run_id) if r.status == "done"})


def test_one_item_per_declared_condition_each_with_its_own_prompt_and_key(mixed, monkeypatch):
    server = serve(monkeypatch)
    try:
        run_id = runs.create_run(mixed, runs.RunOptions(models=["gpt-x"], conditions=CONDITIONS))
        result = execute(mixed, run_id)
    finally:
        server.stop()
    items = rows(mixed, run_id)
    by_protocol = Counter((protocol, r.condition) for r, protocol in items)
    assert by_protocol == {("reference_qa", c): QA_OPEN + QA_MCQ for c in CONDITIONS} | {("enterprise_rag", ""): 2}
    assert result.status == "done" and result.done == ITEMS
    keys = {(r.instance_id, r.condition): r.cache_key for r, _ in items}
    for r, protocol in items:
        if protocol == "reference_qa" and r.condition == "":
            per_condition = {keys[(r.instance_id, c)] for c in CONDITIONS}
            assert len(per_condition) == (3 if r.prompt_meta["doc_order"] else 1)  # no documents: one prompt
    assert all(r.prompt_meta.get("condition", "") == r.condition for r, _ in items)
    assert all(r.prompt_meta["doc_order"] == [] for r, _ in items if r.condition == "closed_book")
    assert server.call_count == len(set(keys.values())) == unique_prompts(mixed, run_id)


def test_the_same_conditions_again_are_all_cache_hits(mixed, monkeypatch):
    server = serve(monkeypatch)
    try:
        first = runs.create_run(mixed, runs.RunOptions(models=["gpt-x"], conditions=CONDITIONS))
        execute(mixed, first)
        paid = server.call_count
        second = runs.create_run(mixed, runs.RunOptions(models=["gpt-x"], conditions=["closed_book", ""]))
        estimate = run_estimates.estimate_run(mixed, second)
        result = execute(mixed, second)
    finally:
        server.stop()
    assert estimate.calls == 0 and estimate.items == (QA_OPEN + QA_MCQ) * 2 + ENTERPRISE
    assert server.call_count == paid and result.cached == result.done == estimate.items and result.spent_usd == 0


@pytest.mark.parametrize(
    ("conditions", "message"),
    [
        pytest.param(["closed_bok"], r"unknown condition\(s\) 'closed_bok'; known: enterprise_rag: \(default\); "
                                     r"reference_qa: \(default\), closed_book, html_as_text", id="typo"),
        pytest.param(["", "open_book", "x"], r"unknown condition\(s\) 'open_book', 'x'", id="two-unknown"),
    ],
)
def test_an_unknown_condition_is_an_error_listing_the_known_ones(mixed, conditions, message):
    with pytest.raises(ValueError, match=message):
        runs.create_run(mixed, runs.RunOptions(models=["gpt-x"], conditions=conditions))
    with pytest.raises(ValueError, match=message):
        run_estimates.estimate_options(mixed, runs.RunOptions(models=["gpt-x"], conditions=conditions))
    with Session(mixed) as session:
        assert session.exec(select(Run)).all() == []


def test_a_condition_only_one_protocol_declares_skips_the_others(mixed):
    run_id = runs.create_run(mixed, runs.RunOptions(models=["baseline:extractive"], conditions=["closed_book"]))
    assert Counter(protocol for _, protocol in rows(mixed, run_id)) == {"reference_qa": QA_OPEN + QA_MCQ}


def test_retry_failed_finishes_the_failed_condition_only(mixed, monkeypatch):
    server = serve(monkeypatch, script=[ScriptRule(match="say that you do not know", fault="503", times=QA_OPEN)])
    try:
        run_id = runs.create_run(mixed, runs.RunOptions(models=["gpt-x"], conditions=CONDITIONS, max_retries=0,
                                                        concurrency=2))
        first = execute(mixed, run_id)
        failures = runs.failed_items(mixed, run_id)
        paid = server.call_count
        assert runs.retry_failed(mixed, run_id) == len(failures)
        second = execute(mixed, run_id)
    finally:
        server.stop()
    assert first.failed == QA_OPEN and {f["condition"] for f in failures} == {"closed_book"}
    assert all("http_503" in f["error"] for f in failures)
    assert second.status == "done" and second.done == ITEMS
    assert server.call_count == paid + QA_OPEN == unique_prompts(mixed, run_id)


def test_budget_stop_then_resume_pays_each_condition_prompt_once(mixed, monkeypatch):
    add_model(mixed, "gpt-dear", "openai", price_in=1000.0, price_out=1000.0, settings={"timeout_s": 0.3})
    server = serve(monkeypatch)
    try:
        run_id = runs.create_run(mixed, runs.RunOptions(models=["gpt-dear"], conditions=CONDITIONS, concurrency=1))
        budget = run_estimates.estimate_run(mixed, run_id).max_cost_usd / 4  # room for a few calls at their worst case
        stopped = execute(mixed, run_id, budget_usd=budget)
        finished = execute(mixed, run_id, budget_usd=100.0)
    finally:
        server.stop()
    assert stopped.status == "budget_stopped" and 0 < stopped.pending < ITEMS and stopped.spent_usd <= budget
    assert finished.status == "done" and finished.done == ITEMS
    assert server.call_count == unique_prompts(mixed, run_id)
    assert Counter(r.condition for r, _ in rows(mixed, run_id) if r.status == "done") == {
        "": QA_OPEN + QA_MCQ + ENTERPRISE, "closed_book": QA_OPEN + QA_MCQ, "html_as_text": QA_OPEN + QA_MCQ}


def test_cancel_then_resume_finishes_every_condition(mixed, monkeypatch):
    server = serve(monkeypatch, latency_ms=120)
    monkeypatch.setattr(runner, "MONITOR_INTERVAL_S", 0.05)
    run_id = runs.create_run(mixed, runs.RunOptions(models=["gpt-x"], conditions=CONDITIONS, concurrency=1))

    async def run_then_cancel():
        task = asyncio.create_task(runner.execute_run(mixed, run_id))
        for _ in range(400):  # cancel once the executor is answering (a loaded machine may take a while to start it)
            await asyncio.sleep(0.05)
            if (await asyncio.to_thread(run_progress.progress_snapshot, mixed, run_id)).done >= 1:
                break
        await asyncio.to_thread(runs.request_cancel, mixed, run_id)
        return await task

    try:
        cancelled = asyncio.run(run_then_cancel())
        resumed = execute(mixed, run_id)
    finally:
        server.stop()
    assert cancelled.status == "cancelled" and cancelled.pending > 0
    assert resumed.status == "done" and resumed.done == ITEMS
    assert server.call_count == unique_prompts(mixed, run_id)


def test_kill_9_then_resume_with_conditions_pays_nothing_twice(mixed, db_url, tmp_path):
    with FakeLLMServer(latency_ms=200) as server:
        env = cli_env(db_url, server, tmp_path)
        command = [sys.executable, "-m", "core.cli", "run", "--models", "gpt-x", "--conditions",
                   "default,closed_book,html_as_text", "--concurrency", "2", "--quiet"]
        first = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while sum(r.status == "done" for r, _ in rows(mixed, 1)) < 4:
            assert time.monotonic() < deadline and first.poll() is None, "the run made no progress"
            time.sleep(0.05)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        with Session(mixed) as session:
            cached = {prompt_text({"messages": c.request["messages"]}) for c in session.exec(select(LLMCall))}
        before = len(server.requests)
        resumed = subprocess.run([sys.executable, "-m", "core.cli", "run", "--resume", "1", "--quiet"],
                                 cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60, check=False)
        after = [prompt_text(body) for body in server.requests[before:]]
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert not cached & set(after), "a call already cached was paid again"
    done = rows(mixed, 1)
    assert len(done) == ITEMS and all(r.status == "done" for r, _ in done)
    assert len({prompt_text(body) for body in server.requests}) == unique_prompts(mixed, 1)


def flat(result) -> str:
    """CLI output with rich's line wrapping undone."""
    return " ".join(result.output.split())


def test_cli_conditions_and_context_policy_options(mixed):
    cli = CliRunner()
    unknown = cli.invoke(app, ["run", "--models", "baseline:extractive", "--conditions", "default,closed_bok"])
    assert unknown.exit_code == 2 and "known: enterprise_rag: (default); reference_qa: (default)" in flat(unknown)
    policy = cli.invoke(app, ["run", "--models", "baseline:extractive", "--context-policy", "shrink"])
    assert policy.exit_code == 2 and "unknown context policy 'shrink'; known: refuse, truncate" in flat(policy)
    done = cli.invoke(app, ["run", "--models", "baseline:extractive", "--conditions", "closed_book,default",
                            "--quiet"])
    assert done.exit_code == 0 and f"done: {(QA_OPEN + QA_MCQ) * 2 + ENTERPRISE} done, 0 failed" in done.output
    assert "spent $0.0000 (generation $0.0000, judging $0.0000)" in flat(done)  # both parts of the spend, and the total
    with Session(mixed) as session:
        run = session.exec(select(Run)).one()
    assert run.config["conditions"] == ["closed_book", ""] and run.config["context_policy"] == "refuse"
