"""Shared pieces of the DomainRAG tests: the shared release files (a clear failure when they are missing), one
BM25-only build of every instance per session, and a calibrated world: a slice of the built instances answered under
every condition by two scripted models on loopback fake servers (through the real OpenAI SDK) and scored by the
heuristic judge. 'gold-bot' answers every question with the first alternative of its gold answer, whatever the
documents say (so it ignores an anti-reference); 'anti-bot' answers the faithful questions with their anti-answer."""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.generation import runner, runs
from core.generation.ratelimit import ManualClock
from core.ingest.io import import_file
from core.pipeline import score_and_summarise
from core.protocols.domainrag import ANTI, DOMAINRAG, RETRIEVAL_CONDITIONS
from core.protocols.domainrag.builder import BuildOptions, BuildReport, build_instances, write_jsonl
from core.store.db import make_engine
from core.store.schema import AnswerSpec, InstanceSpec
from core.testing.fake_server import FakeLLMServer, ScriptRule
from tests.factories import add_fake_server_model
from tests.importers.conftest import second_engine  # noqa: F401  (a second migrated database, for round trips)

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "datasets" / "domainrag"
GOLD, ANTI_BOT, HEURISTIC = "gold-bot", "anti-bot", "heuristic"
PER_SUBSET = 3
# every condition but the dense ones (the test build has no embedder: the dense retriever is tested on its own)
CONDITIONS = [c for c in DOMAINRAG.condition_names() if RETRIEVAL_CONDITIONS.get(c, ("",))[0] != "dense"]


def shared_data() -> Path:
    """The DomainRAG folder next to the repository; fails the test with a clear message when it is missing."""
    if not (DATA / "README.md").is_file():
        pytest.fail(f"shared DomainRAG data not found at {DATA.resolve()} (the tests read ../shared/ next to the repo)")
    return DATA


@pytest.fixture(scope="session")
def built() -> tuple[list[dict], BuildReport]:
    """Every built instance payload (BM25 retrieval only) and the build report."""
    return build_instances(BuildOptions(data=shared_data(), embedder=None, index_dir=None))


@pytest.fixture(scope="session")
def specs(built) -> list[InstanceSpec]:
    """The built payloads validated as instance specs."""
    return [InstanceSpec.model_validate(p) for p in built[0]]


def first_alternative(answer: AnswerSpec) -> str:
    """What a model copying an answer says: its parts side by side, or its text."""
    return " ".join(answer.parts) if answer.parts else answer.text


def asked(spec: InstanceSpec) -> str:
    """A regex matching the prompts of this question (its date line too, as dated questions repeat)."""
    tail = re.escape(f"Question: {spec.query.strip()}") + r"\Z"
    return (re.escape(f"asked on {spec.attributes.date}.") + r"[\s\S]*" + tail) if spec.attributes.date else tail


def scripts(specs: list[InstanceSpec]) -> tuple[list[ScriptRule], list[ScriptRule]]:
    """The gold-bot's and the anti-bot's rules: one per question (dated ones first, as their regex is narrower)."""
    primary = sorted((s for s in specs if s.attributes.question_type != ANTI), key=lambda s: not s.attributes.date)
    gold = [ScriptRule(match=asked(s), reply=first_alternative(s.reference.answers[0])) for s in primary]
    anti = [ScriptRule(match=asked(s), reply=first_alternative(s.reference.answers[0]))
            for s in specs if s.attributes.question_type == ANTI]
    return gold, anti


@dataclass(frozen=True)
class World:
    url: str
    run_id: int
    specs: tuple[InstanceSpec, ...]


@pytest.fixture(scope="session")
def world(tmp_path_factory, session_url_factory) -> World:
    """The first questions of every sub-set, built, imported, answered by both bots under every condition, scored."""
    folder = tmp_path_factory.mktemp("domainrag")
    payloads, _ = build_instances(BuildOptions(data=shared_data(), embedder=None, index_dir=None, limit=PER_SUBSET))
    write_jsonl(payloads, folder / "built.jsonl")
    url = session_url_factory()
    engine = make_engine(url)
    assert import_file(engine, folder / "built.jsonl").ok
    chosen = [InstanceSpec.model_validate(p) for p in payloads]
    gold_rules, anti_rules = scripts(chosen)
    gold, anti = FakeLLMServer(script=gold_rules).start(), FakeLLMServer(script=anti_rules).start()
    env: dict[str, str] = {}
    try:
        add_fake_server_model(engine, GOLD, gold.base_url, env)
        add_fake_server_model(engine, ANTI_BOT, anti.base_url, env)
        os.environ.update(env)
        run_id = runs.create_run(engine, runs.RunOptions(models=[GOLD, ANTI_BOT], conditions=CONDITIONS,
                                                         concurrency=16))
        result = asyncio.run(runner.execute_run(engine, run_id, clock=ManualClock()))
        assert result.status == "done" and result.failed == 0
        asyncio.run(score_and_summarise(engine, run_id, [HEURISTIC], concurrency=16))
    finally:
        gold.stop()
        anti.stop()
        for key in env:
            os.environ.pop(key, None)
    engine.dispose()
    return World(url, run_id, tuple(chosen))
