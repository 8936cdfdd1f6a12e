"""`gauntlet kb-corruption build`: offline, and in LLM mode through the provider layer against a scripted fake server
(prompt and model recorded on every entry; an invalid reply is retried, then replaced by the offline entry)."""

from __future__ import annotations

import json
import re

import pytest
from sqlmodel import Session, select
from typer.testing import CliRunner

from core.cli import app
from core.protocols.kb_corruption import CONDITION_NAMES, TYPE_LABELS
from core.protocols.kb_corruption.builder import Pool, load_questions, offline_variants
from core.store.db import make_engine
from core.store.models import LLMCall, Run
from core.testing.fake_server import FakeLLMServer, ScriptRule
from tests.factories import add_model
from tests.kb_corruption.conftest import write_slice

RETRY = "Your previous reply was rejected"


def build(tmp_path, *extra: str):
    source = write_slice(tmp_path / "slice.jsonl")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["kb-corruption", "build", "--questions", str(source), "--out", str(out),
                                      "--bm25-only", "--index-dir", str(tmp_path / "index"), *extra])
    assert result.exit_code == 0, result.output
    return result.output, out


def test_build_prints_the_retrieval_profile_and_the_run(tmp_path):
    output, out = build(tmp_path, "--seed", "5")
    assert {"knowledge_base.jsonl", "instances.jsonl", "build.json"} <= {p.name for p in out.iterdir()}
    assert re.search(r"mixed\s+12\s+0\.0%", output) and re.search(r"numeric_subtle\s+6\s", output)
    assert "12 questions x 15 conditions = 162 items per model" in output
    assert f"--conditions {','.join(CONDITION_NAMES)}" in output
    assert json.loads((out / "build.json").read_text())["kb_documents"] == 156


def _prompt_of(label: str, severity: str, stem: str) -> str:
    return re.escape(f"{label} version at {severity} severity.") + r"[\s\S]*" + re.escape(f"Question: {stem.strip()}")


def writer_script(tmp_path) -> list[ScriptRule]:
    """Valid entries (the offline plan's) for the first two questions; the first question's subtle factual entry is
    wrong on the first try, its obvious contradiction wrong every time."""
    questions = load_questions(write_slice(tmp_path / "plan.jsonl"))[:2]
    pool, rules = Pool(questions), []
    for q in questions:
        for v in offline_variants(q, pool, 0):
            if not v.is_corrupted:
                continue
            match = _prompt_of(TYPE_LABELS[v.corruption_type], v.severity, q.stem)
            first = q is questions[0]
            if first and v.name == "factual-subtle":
                rules.append(ScriptRule(match=match + r"[\s\S]*" + RETRY, reply=json.dumps({"document": v.text})))
                rules.append(ScriptRule(match=match, reply=json.dumps({"document": v.text.replace("*", "")})))
            elif first and v.name == "contradiction-obvious":
                rules.append(ScriptRule(match=match, reply=json.dumps({"document": offline_variants(q, pool, 0)[0].text})))
            else:
                rules.append(ScriptRule(match=match, reply=json.dumps({"document": v.text})))
    return rules


def test_llm_mode_records_prompt_and_model_and_falls_back(tmp_path, monkeypatch, backend_url_factory):
    url = backend_url_factory()
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", url)
    with FakeLLMServer(script=writer_script(tmp_path)) as server:
        monkeypatch.setenv("WRITER_URL", server.base_url + "/v1")
        monkeypatch.setenv("WRITER_KEY", "test-key")
        add_model(make_engine(url), "writer-bot", "openai_compatible", max_output_tokens=512,
                  settings={"base_url_env": "WRITER_URL", "api_key_env": "WRITER_KEY", "timeout_s": 10})
        _, out = build(tmp_path, "--llm", "writer-bot", "--limit", "2", "--seed", "0")
    records = {r["doc_id"]: r for r in map(json.loads, (out / "knowledge_base.jsonl").read_text().splitlines())}
    corrupted = [r for r in records.values() if r["is_corrupted"]]
    assert len(records) == 26 and len(corrupted) == 24
    first = next(iter(records)).split("#")[0]
    retried, failed = records[f"{first}#factual-subtle"], records[f"{first}#contradiction-obvious"]
    assert retried["generator"]["mode"] == "llm" and retried["generator"]["attempts"] == 2
    assert RETRY in retried["generator"]["prompt"] and len(retried["generator"]["rejections"]) == 1
    assert failed["generator"]["mode"] == "offline" and failed["generator"]["llm_fallback"]["model"] == "writer-bot"
    assert len(failed["generator"]["llm_fallback"]["rejections"]) == 2 and "the answer is" in failed["text"]
    others = [r for r in corrupted if r["doc_id"] != failed["doc_id"]]
    assert all(r["generator"]["mode"] == "llm" and r["generator"]["model"] == "writer-bot"
               and "Instruction:" in r["generator"]["prompt"] for r in others)
    report = json.loads((out / "build.json").read_text())["llm"]
    assert report == {"model": "writer-bot", "calls": 26, "rejected": 3, "fallbacks": 1, "rejection_rate": 0.1154}
    with Session(make_engine(url)) as session:
        calls = session.exec(select(LLMCall)).all()
        spent = session.exec(select(Run)).one()  # the build's spend, recorded where a run's is
    assert len(calls) == 26 and {c.purpose for c in calls} == {"build:construction"}
    assert spent.name == "build: kb_corruption out" and spent.config["kind"] == "build" and spent.status == "done"
    assert spent.spent_usd == pytest.approx(sum(c.cost_usd for c in calls)) and spent.spent_usd > 0
