"""Three runs of the same four models, one per protocol: the bundled EnterpriseRAG sample, a RAGStress slice of the
shared MMLU selection and a DomainRAG slice of the shared release, answered by two scripted models on loopback fake
servers (through the real OpenAI SDK) and the calibration baselines, scored by the heuristic judge. 'reader-bot'
answers DomainRAG with the gold answer, RAGStress with the option marked in its own entry, EnterpriseRAG with a
refusal; 'guess-bot' answers 'Answer: A' to everything."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from core.commands.data import SAMPLE_FILE
from core.generation import registered_models, runner, runs
from core.generation.ratelimit import ManualClock
from core.ingest.io import import_file
from core.pipeline import score_and_summarise
from core.protocols.domainrag.builder import BuildOptions, build_instances, write_jsonl
from core.protocols.kb_corruption import CONDITION_NAMES
from core.protocols.kb_corruption.builder import build_ragstress
from core.store.db import make_engine
from core.store.schema import InstanceSpec
from core.testing.fake_server import FakeLLMServer, ScriptRule
from tests.domainrag.conftest import scripts as domainrag_scripts
from tests.domainrag.conftest import shared_data
from tests.factories import add_fake_server_model
from tests.kb_corruption.conftest import UNSURE, marked_reader, write_slice

READER, GUESSER, HEURISTIC = "reader-bot", "guess-bot", "heuristic"
MODELS = [READER, GUESSER, "baseline:always-refuse", "baseline:extractive"]


def _run(engine, protocol: str, conditions: list[str]) -> int:
    run_id = runs.create_run(engine, runs.RunOptions(models=MODELS, protocols=[protocol], conditions=conditions,
                                                     concurrency=16))
    result = asyncio.run(runner.execute_run(engine, run_id, clock=ManualClock()))
    assert result.status == "done" and result.failed == 0
    asyncio.run(score_and_summarise(engine, run_id, [HEURISTIC], concurrency=16))
    return run_id


def three_protocol_runs(url: str, root: Path) -> tuple[int, int, int]:
    """(EnterpriseRAG run, RAGStress run, DomainRAG run) in the database at `url`, built under `root`."""
    engine = make_engine(url)
    assert import_file(engine, SAMPLE_FILE).ok
    build_ragstress(write_slice(root / "slice.jsonl", per=1), root / "kb", seed=7, embedder=None, index_dir=None)
    assert import_file(engine, root / "kb" / "instances.jsonl").ok
    payloads, _ = build_instances(BuildOptions(data=shared_data(), embedder=None, index_dir=None, limit=1))
    write_jsonl(payloads, root / "domainrag.jsonl")
    assert import_file(engine, root / "domainrag.jsonl").ok
    gold_rules, _ = domainrag_scripts([InstanceSpec.model_validate(p) for p in payloads])
    reader_rules = [*gold_rules, *marked_reader()[:-1], ScriptRule(match="", reply=UNSURE)]
    servers = {READER: FakeLLMServer(script=reader_rules).start(),
               GUESSER: FakeLLMServer(script=[ScriptRule(match="", reply="Answer: A")]).start()}
    env: dict[str, str] = {}
    try:
        for name, server in servers.items():
            add_fake_server_model(engine, name, server.base_url, env)
        os.environ.update(env)
        registered_models.ensure_baselines(engine)
        run_ids = (_run(engine, "enterprise_rag", [""]), _run(engine, "kb_corruption", list(CONDITION_NAMES)),
                   _run(engine, "domainrag", [""]))
    finally:
        for server in servers.values():
            server.stop()
        for key in env:
            os.environ.pop(key, None)
    engine.dispose()
    return run_ids
