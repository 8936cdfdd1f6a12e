"""RAGStress test world: a 12-question slice of the shared MMLU selection (4 subjects in 3 categories) built into a
knowledge base (BM25, offline corruptions), imported, and answered under all 15 conditions by the always-refuse
baseline and three scripted models on loopback fake servers (through the real OpenAI SDK), scored by the heuristic
judge. The scripted models read their prompt with regular expressions:

- marked-reader answers the option marked '*' in the first retrieved entry of its own question;
- claim-reader answers the last answer claim ('answer: X' / 'answer is X') in that entry;
- closed-book answers from the question alone: the key on even-numbered questions, a wrong letter on odd ones;
- both readers reply "I cannot tell from the material provided." when no entry of their question was retrieved."""

from __future__ import annotations

import asyncio
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.generation import registered_models, runner, runs
from core.generation.providers.base import ModelConfig
from core.generation.ratelimit import ManualClock
from core.ingest.io import import_file
from core.pipeline import score_and_summarise
from core.protocols.kb_corruption import CONDITION_NAMES
from core.protocols.kb_corruption.builder import build_ragstress
from core.store.db import make_engine
from core.testing.fake_server import FakeLLMServer, ScriptRule

REPO = Path(__file__).resolve().parents[2]
MMLU = REPO.parent / "shared" / "datasets" / "mmlu"
SELECTION = "ragstress_eval700_stratified_seed42.jsonl"
SLICE_SUBJECTS = ("elementary_mathematics", "high_school_statistics", "philosophy", "high_school_geography")
PER_SUBJECT = 3
REFUSE, MARKED, CLAIM, CLOSED = "baseline:always-refuse", "marked-reader", "claim-reader", "closed-book"
HEURISTIC = "heuristic"
UNSURE = "I cannot tell from the material provided."
# the prompt's own question (the last 'Question:' followed by a blank line, the options and the end of the prompt)
FINAL_QUESTION = r"\A(?=[\s\S]*Question: ([\s\S]+?)\n\nOptions:\n(?:[A-D]\. [^\n]*\n?)+\Z)"
OWN_ENTRY = FINAL_QUESTION + r"(?:(?!\1)[\s\S])*\1"  # up to the first occurrence of that question in the prompt
CLAIM_CUE = r"(?:answer: |answer is )"


def mmlu_path(name: str = SELECTION) -> Path:
    """A file of the shared MMLU folder; a clear failure when it is missing."""
    path = MMLU / name
    if not path.exists():
        pytest.fail(f"shared dataset not found at {path} (the tests read ../shared/datasets beside the repository)")
    return path


def selection_rows() -> list[dict]:
    """The 700-question selection as records."""
    return [json.loads(line) for line in mmlu_path().read_text(encoding="utf-8").splitlines() if line.strip()]


def write_slice(path: Path, subjects: tuple[str, ...] = SLICE_SUBJECTS, per: int = PER_SUBJECT) -> Path:
    """The first `per` questions of each subject of the selection, as a JSONL selection file."""
    rows = selection_rows()
    chosen = [r for s in subjects for r in [x for x in rows if x["subject"] == s][:per]]
    path.write_text("".join(json.dumps(r) + "\n" for r in chosen), encoding="utf-8")
    return path


def marked_reader() -> list[ScriptRule]:
    """Answers the '*' option of the first entry of its own question; unsure when there is none."""
    rules = [ScriptRule(match=OWN_ENTRY + r"(?:(?!\[doc \d)[\s\S])*?\n\*" + letter + r"\. ", reply=f"Answer: {letter}")
             for letter in "ABCD"]
    return [*rules, ScriptRule(match="", reply=UNSURE)]


def claim_reader() -> list[ScriptRule]:
    """Answers the last answer claim inside the first entry of its own question; unsure when there is none."""
    rest = r"(?:(?!\[doc \d|" + CLAIM_CUE + r"[A-D]\b)[\s\S])*(?:\[doc \d|\Z)"
    rules = [ScriptRule(match=OWN_ENTRY + r"(?:(?!\[doc \d)[\s\S])*" + CLAIM_CUE + letter + r"\b" + rest,
                        reply=f"Answer: {letter}") for letter in "ABCD"]
    return [*rules, ScriptRule(match="", reply=UNSURE)]


def closed_book(questions: list[dict]) -> list[ScriptRule]:
    """The key on even-numbered questions, the next letter on odd ones, whatever the documents say."""
    rules = []
    for i, q in enumerate(questions):
        letter = q["answer"] if i % 2 == 0 else "ABCD"[("ABCD".index(q["answer"]) + 1) % 4]
        rules.append(ScriptRule(match=r"Question: " + re.escape(q["question"].strip()) + r"\n\nOptions:\n",
                                reply=f"The answer is {letter}."))
    return rules


@dataclass(frozen=True)
class World:
    url: str
    run_id: int
    out: Path
    questions: list[dict]


def scripted(name: str, server: FakeLLMServer) -> tuple[ModelConfig, dict[str, str]]:
    """An OpenAI-compatible model config reaching `server`, and the environment naming its URL and key."""
    url, key = f"{name.upper().replace('-', '_')}_URL", f"{name.upper().replace('-', '_')}_KEY"
    settings = {"base_url_env": url, "api_key_env": key, "timeout_s": 10}
    config = ModelConfig(name=name, provider="openai_compatible", model_name=name, max_output_tokens=32,
                         settings=settings)
    return config, {url: server.base_url + "/v1", key: "test-key"}


@pytest.fixture(scope="session")
def world(tmp_path_factory, session_url_factory) -> World:
    """The slice built, imported, answered under every condition by four models and scored (heuristic judge)."""
    root = tmp_path_factory.mktemp("ragstress")
    source = write_slice(root / "slice.jsonl")
    questions = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    assert len({q["question"].strip() for q in questions}) == len(questions), "the readers need distinct stems"
    build_ragstress(source, root / "built", seed=7, embedder=None, index_dir=None)
    url = session_url_factory()
    engine = make_engine(url)
    assert import_file(engine, root / "built" / "instances.jsonl").ok
    servers = {MARKED: marked_reader(), CLAIM: claim_reader(), CLOSED: closed_book(questions)}
    started = {name: FakeLLMServer(script=script).start() for name, script in servers.items()}
    env: dict[str, str] = {}
    try:
        for name, server in started.items():
            config, names = scripted(name, server)
            registered_models.register_model(engine, config)
            env |= names
        os.environ.update(env)
        registered_models.ensure_baselines(engine)
        options = runs.RunOptions(models=[REFUSE, MARKED, CLAIM, CLOSED], conditions=list(CONDITION_NAMES),
                                  concurrency=16)
        run_id = runs.create_run(engine, options)
        result = asyncio.run(runner.execute_run(engine, run_id, clock=ManualClock()))
        assert result.status == "done" and result.failed == 0
        asyncio.run(score_and_summarise(engine, run_id, [HEURISTIC], concurrency=16))
    finally:
        for server in started.values():
            server.stop()
        for key in env:
            os.environ.pop(key, None)
    engine.dispose()
    return World(url, run_id, root / "built", questions)
