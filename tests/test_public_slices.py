"""Every real public slice end to end: import, answer through the real SDKs against scripted fake servers, score,
read. Always-refuse must score rejection 1.0 on unanswerable items and correctness 0 elsewhere; a model returning the
gold answer scores exact match and correctness 1.0; one returning a wrong answer scores 0."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from sqlmodel import Session, select

from core.analysis import readmodel
from core.config import REPO_ROOT
from core.generation import registered_models, runner, runs
from core.generation.ratelimit import ManualClock
from core.ingest.importers import import_source
from core.pipeline import score_and_summarise
from core.store.db import make_engine, upgrade
from core.store.models import Instance
from core.testing.fake_server import FakeLLMServer, ScriptRule
from tests.factories import add_model

DATA = REPO_ROOT.parent / "shared" / "datasets"
PER_SLICE = 12
SLICES = [
    pytest.param("lit-ragbench", "lit-ragbench/en.jsonl", id="lit-ragbench-en"),
    pytest.param("lit-ragbench", "lit-ragbench/ja.jsonl", id="lit-ragbench-ja"),
    pytest.param("hotpotqa", "hotpotqa-dev-distractor/hotpotqa_dev_distractor_500.jsonl", id="hotpotqa"),
    pytest.param("mmlu", "mmlu/ragstress_eval700_stratified_seed42.jsonl", id="mmlu"),
    pytest.param("medqa", "medqa-usmle-4opt/medqa_us_4opt_test_first500.jsonl", id="medqa-us"),
    pytest.param("medqa", "medqa-mcmle-pulse150/medqa_mcmle_test_sample150_5opt.jsonl", id="medqa-mainland-zh"),
    pytest.param("domainrag", "domainrag/extractive_qa.jsonl", id="domainrag-extractive-zh"),
]
REFUSALS = {"ja": "提供された文書には記載されていないため、回答できません。", "zh": "根据提供的文档，无法回答这个问题。",
            "en": "The provided documents do not contain the answer to this question."}


def _slice(path: Path, out: Path, n: int) -> Path:
    """n records spread evenly over the file (so LIT-RAGBench's abstention items are among them)."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    out.write_text("\n".join(lines[:: max(1, len(lines) // n)][:n]) + "\n", encoding="utf-8")
    return out


def _gold(instance: Instance) -> str:
    ref = instance.reference
    if ref["answer_type"] == "mcq":
        return f"Answer: {ref['answer_key']}"
    if ref["answer_type"] == "unanswerable":
        return REFUSALS.get(instance.language or "en", REFUSALS["en"])
    answer = ref["answers"][0]
    return " ".join(answer["parts"]) if answer.get("parts") else answer["text"]


def _wrong(instance: Instance, others: list[str]) -> str:
    ref = instance.reference
    if ref["answer_type"] == "mcq":
        return f"Answer: {next(k for k in ref['choices'] if k != ref['answer_key'])}"
    accepted = [a["text"] for a in ref.get("answers", [])] + [p for a in ref.get("answers", []) for p in a.get("parts", [])]
    return next(o for o in others if o and not any(a and (a in o or o in a) for a in accepted))


def _serve(replies: dict[str, str]) -> FakeLLMServer:
    script = [ScriptRule(match=r"\s+".join(map(re.escape, query.split()[:40])), reply=reply)
              for query, reply in replies.items()]
    return FakeLLMServer(script=script).start()


@pytest.mark.parametrize(("fmt", "relative"), SLICES)
def test_slice_calibration(fmt, relative, tmp_path, monkeypatch, backend_url_factory) -> None:
    source = DATA / relative
    if not source.is_file():
        pytest.fail(f"shared dataset not found at {source} (CI lays ../shared beside the repo)")
    url = backend_url_factory()
    engine = make_engine(url)
    report = import_source(engine, _slice(source, tmp_path / source.name, PER_SLICE), fmt=fmt)
    assert report.ok, report.errors[:3]
    with Session(engine) as session:
        instances = session.exec(select(Instance)).all()
    answers = [a["text"] for i in instances for a in (i.reference or {}).get("answers", [])] + ["Zebra crossing 9931"]
    gold = _serve({i.query: _gold(i) for i in instances})
    wrong = _serve({i.query: _wrong(i, answers) for i in instances})
    try:
        for name, server in (("gold-bot", gold), ("wrong-bot", wrong)):
            monkeypatch.setenv(f"{name.upper().replace('-', '_')}_URL", server.base_url + "/v1")
            monkeypatch.setenv(f"{name.upper().replace('-', '_')}_KEY", "test-key")
            add_model(engine, name, "openai_compatible", max_output_tokens=256,
                      settings={"base_url_env": f"{name.upper().replace('-', '_')}_URL",
                                "api_key_env": f"{name.upper().replace('-', '_')}_KEY", "timeout_s": 5})
        registered_models.ensure_baselines(engine)
        run_id = runs.create_run(engine, runs.RunOptions(models=["baseline:always-refuse", "gold-bot", "wrong-bot"]))
        result = asyncio.run(runner.execute_run(engine, run_id, clock=ManualClock()))
        assert result.status == "done" and result.failed == 0
        asyncio.run(score_and_summarise(engine, run_id, ["heuristic"]))
    finally:
        gold.stop()
        wrong.stop()
    scores = readmodel.reference_scores(engine, [run_id], "heuristic")
    assert len(scores) == 3 * len(instances)
    unanswerable = scores["answer_type"] == "unanswerable"
    mcq = scores["answer_type"] == "mcq"
    answerable = ~unanswerable
    by = {m: scores["model"] == m for m in ("baseline:always-refuse", "gold-bot", "wrong-bot")}

    refuse = by["baseline:always-refuse"]
    assert (scores.loc[refuse & unanswerable, "rejection"] == 1.0).all()
    assert (scores.loc[refuse & answerable, "correctness"] == 0.0).all()
    for model, want in (("gold-bot", 1.0), ("wrong-bot", 0.0)):
        mine = scores[by[model] & answerable]
        assert (mine["correctness"] == want).all(), mine[["instance_uid", "correctness", "correctness_status"]]
        open_qa = mine[~mcq[mine.index]]
        assert (open_qa["exact_match"] == want).all(), open_qa[["instance_uid", "exact_match"]]
        assert (mine.loc[mcq[mine.index], "mcq_accuracy"] == want).all()
    assert (scores.loc[by["gold-bot"] & unanswerable, "rejection"] == 1.0).all()
    assert (scores.loc[by["wrong-bot"] & unanswerable, "rejection"] == 0.0).all()
    if fmt == "lit-ragbench":
        assert unanswerable.any() and answerable.any()


def test_report_shows_reference_metrics(tmp_path, monkeypatch, backend_url_factory) -> None:
    import json

    from typer.testing import CliRunner

    from core.cli import app

    url = backend_url_factory()
    upgrade(url)
    engine = make_engine(url)
    source = DATA / "medqa-usmle-4opt" / "medqa_us_4opt_test_first500.jsonl"
    assert import_source(engine, _slice(source, tmp_path / "m.jsonl", 6), fmt="medqa").ok
    registered_models.ensure_baselines(engine)
    run_id = runs.create_run(engine, runs.RunOptions(models=["baseline:always-refuse", "baseline:extractive"]))
    asyncio.run(runner.execute_run(engine, run_id, clock=ManualClock()))
    asyncio.run(score_and_summarise(engine, run_id, ["heuristic"]))
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", url)
    doc = json.loads(CliRunner().invoke(app, ["report", str(run_id), "--format", "json"]).output)
    cells = {(r["model"], r["metric"]): r for r in doc["reference_metrics"]}
    assert cells[("baseline:always-refuse", "mcq_accuracy")]["value"] == 0.0
    assert cells[("baseline:always-refuse", "mcq_accuracy")]["n"] == 6 and doc["judge"] == "heuristic"
    table = CliRunner().invoke(app, ["report", str(run_id), "--format", "table"]).output
    assert "(reference_qa): mean [95% CI], n and the count of each state" in table and "mcq_accuracy" in table
