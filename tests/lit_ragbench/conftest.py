"""LIT-RAGBench test world: both shared files imported as lit_ragbench instances, answered by the always-refuse
baseline and a scripted gold model on a loopback fake server, scored by the heuristic judge and by a scripted LLM judge
on another fake server (through the real OpenAI SDK)."""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlmodel import Session, select

from core.generation import registered_models, runner, runs
from core.generation.ratelimit import ManualClock
from core.pipeline import score_and_summarise
from core.protocols.lit_ragbench.command import import_lit
from core.scoring.judges.prompts import ABSTENTION_HEAD
from core.store.db import make_engine
from core.store.models import Document, Instance
from core.testing.fake_server import FakeLLMServer, ScriptRule
from tests.factories import add_model

REPO = Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "datasets" / "lit-ragbench"
REFUSE = "baseline:always-refuse"
GOLD = "gold-bot"
JUDGE = "llm:judge-bot"
HEURISTIC = "heuristic"
WINDOW = 60
# What the scripted judge reads as a declined answer (in the answer part of its prompt only).
DECLINE_CUES = (r"(?i:unable to answer|cannot|can't|not possible|do not contain|does not contain|回答不可|回答でき|"
                r"答えられ|答えでき|判断でき|できない|できません)")
CORRECT = '{"verdict": "correct", "reason": "scripted: matches the reference"}'
INCORRECT = '{"verdict": "incorrect", "reason": "scripted: differs from the reference"}'


def lit_file(name: str) -> Path:
    """A shared LIT-RAGBench file; a clear failure when the shared folder is missing."""
    path = DATA / name
    if not path.is_file():
        pytest.fail(f"shared dataset not found at {path} (the tests read ../shared/datasets beside the repository)")
    return path


def judge_script() -> list[ScriptRule]:
    """A judge that decides from its prompt: an abstention reference is met by a declining answer, any other
    reference by an answer equal to it; 'refusal' is 1 for a declining answer."""
    answer = r"Answer to evaluate:\n[\s\S]*" + DECLINE_CUES
    return [
        ScriptRule(match=r"\[task: correctness\][\s\S]*" + re.escape(ABSTENTION_HEAD) + r"[\s\S]*" + answer,
                   reply=CORRECT),
        ScriptRule(match=r"\[task: correctness\][\s\S]*\n\nReference answer:\n- (.+)\n[\s\S]*Answer to evaluate:\n\1\Z",
                   reply=CORRECT),
        ScriptRule(match=r"\[task: correctness\]", reply=INCORRECT),
        ScriptRule(match=r"\[task: refusal\][\s\S]*" + answer, reply='{"refused": 1, "reason": "scripted: declines"}'),
        ScriptRule(match=r"\[task: refusal\]", reply='{"refused": 0, "reason": "scripted: answers"}'),
    ]


def _window(text: str, others: list[str]) -> str | None:
    """A piece of `text` found in none of `others` (None when every piece is shared)."""
    step = WINDOW // 2
    for start in range(0, max(1, len(text) - WINDOW + 1), step):
        piece = text[start:start + WINDOW]
        if not any(piece in other for other in others):
            return piece
    return None


def gold_script(instances: list[tuple[str, str, list[str]]]) -> list[ScriptRule]:
    """One rule per (query, gold answer, document texts): questions shared by several instances (an answerable one
    and its abstention variants) are told apart by a piece of a document only that instance has; the one without
    such a piece (the negatives-only variant) is matched by its question alone, after the others."""
    specific, plain = [], []
    for query, answer, texts in instances:
        others = ["\n".join(t) for q, _, t in instances if q == query and t is not texts]
        tail = re.escape(query) + r"(?:\n</QUESTION>)?\Z"  # the product prompt ends with it, the paper's tags it
        piece = next((p for t in texts if (p := _window(t, others))), None) if others else None
        if piece is None:
            plain.append(ScriptRule(match=tail, reply=answer))
        else:
            specific.append(ScriptRule(match=re.escape(piece) + r"(?=[\s\S]*" + tail + ")", reply=answer))
    return specific + plain


@dataclass(frozen=True)
class World:
    url: str
    run_id: int


def _gold_rows(engine) -> list[tuple[str, str, list[str]]]:
    with Session(engine) as session:
        instances = session.exec(select(Instance).order_by(Instance.id)).all()
        docs = {i.id: [d.text.strip() for d in session.exec(select(Document).where(Document.instance_id == i.id))]
                for i in instances}
    return [(i.query.strip(), i.reference["answers"][0]["text"], docs[i.id]) for i in instances]


def _register(engine, name: str, server: FakeLLMServer, env: dict[str, str]) -> None:
    prefix = name.upper().replace("-", "_")
    env[f"{prefix}_URL"], env[f"{prefix}_KEY"] = server.base_url + "/v1", "test-key"
    add_model(engine, name, "openai_compatible", max_output_tokens=256,
              settings={"base_url_env": f"{prefix}_URL", "api_key_env": f"{prefix}_KEY", "timeout_s": 10})


@pytest.fixture(scope="session")
def world(session_url_factory) -> World:
    """Both languages, every question: always-refuse and gold answers, scored by the heuristic and scripted judges."""
    url = session_url_factory()
    engine = make_engine(url)
    report = import_lit(engine, [lit_file("en.jsonl"), lit_file("ja.jsonl")])
    assert report.ok, report.errors[:3]
    gold = FakeLLMServer(script=gold_script(_gold_rows(engine))).start()
    judge = FakeLLMServer(script=judge_script()).start()
    env: dict[str, str] = {}
    try:
        _register(engine, GOLD, gold, env)
        _register(engine, JUDGE.removeprefix("llm:"), judge, env)
        os.environ.update(env)
        registered_models.ensure_baselines(engine)
        run_id = runs.create_run(engine, runs.RunOptions(models=[REFUSE, GOLD], concurrency=16))
        result = asyncio.run(runner.execute_run(engine, run_id, clock=ManualClock()))
        assert result.status == "done" and result.failed == 0
        asyncio.run(score_and_summarise(engine, run_id, [HEURISTIC, JUDGE], concurrency=16))
    finally:
        gold.stop()
        judge.stop()
        for key in env:
            os.environ.pop(key, None)
    engine.dispose()
    return World(url, run_id)
