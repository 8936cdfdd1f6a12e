"""RAG-Stress fixtures: the shared slices as reference instances, and one calibration database where scripted models
on loopback fake servers answered real RAG-Stress instances under every condition (scored by the heuristic judge)."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.config import REPO_ROOT
from core.generation import runner, runs
from core.generation.ratelimit import ManualClock
from core.ingest.importers import get_importer
from core.ingest.io import import_specs
from core.pipeline import score_and_summarise
from core.protocols.misleading_evidence import CLEAN, CLOSED_BOOK, MISLEADING_CONDITIONS
from core.protocols.misleading_evidence.builder_plans import build_stress
from core.store.db import make_engine
from core.store.schema import InstanceSpec
from core.testing.fake_server import ScriptRule
from tests.factories import scripted_models

DATA = REPO_ROOT.parent / "shared" / "datasets"
SLICES = {
    "hotpotqa": ("hotpotqa", "hotpotqa-dev-distractor/hotpotqa_dev_distractor_500.jsonl"),
    "medqa-us": ("medqa", "medqa-usmle-4opt/medqa_us_4opt_test_first500.jsonl"),
    "medqa-zh": ("medqa", "medqa-mcmle-pulse150/medqa_mcmle_test_sample150_5opt.jsonl"),
}
CONDITIONS = [CLOSED_BOOK, CLEAN, *MISLEADING_CONDITIONS]
OTHER_WRONG = "Zebra crossing 9931"
# Per instance (10 of them): closed-book correct, clean-evidence correct, misled by misleading evidence.
CHECKPOINTS = {
    "ckpt-a": {"closed_book": [1, 1, 1, 1, 1, 0, 0, 0, 0, 1], "clean": [1, 1, 0, 1, 1, 1, 0, 0, 1, 1],
               "misled": [0, 1, 0, 0, 1, 0, 0, 1, 0, 0]},
    "ckpt-b": {"closed_book": [1, 1, 1, 0, 1, 0, 1, 0, 0, 1], "clean": [1, 1, 1, 1, 1, 1, 1, 1, 0, 1],
               "misled": [1, 1, 1, 0, 1, 0, 1, 1, 0, 1]},
}


def source_specs(name: str) -> list[InstanceSpec]:
    """Every record of a shared slice as the importer maps it (fails clearly when ../shared is missing)."""
    fmt, relative = SLICES[name]
    path = DATA / relative
    if not path.is_file():
        pytest.fail(f"shared dataset not found at {path} (CI lays ../shared beside the repo)")
    parsed = get_importer(fmt).parse(path)
    assert parsed.ok, parsed.errors[:3]
    return [spec for _, spec in parsed.instances]


@dataclass(frozen=True)
class Replies:
    """What a scripted model says to one instance: the gold answer, the designated wrong one, another wrong one."""

    gold: str
    designated: str
    other: str


def replies(spec: InstanceSpec) -> Replies:
    ref = spec.reference
    if ref.answer_type == "mcq":
        wrong_key = spec.metadata["rag_stress"]["wrong_key"]
        other = next(k for k in sorted(ref.choices) if k not in (ref.answer_key, wrong_key))
        return Replies(f"Answer: {ref.answer_key}", f"Answer: {wrong_key}", f"Answer: {other}")
    return Replies(ref.answers[0].text, ref.wrong_answers[0], OTHER_WRONG)


def edited_sentence(spec: InstanceSpec, evidence: str) -> str:
    """The answer-bearing sentence (edited or clean) of one evidence document of `spec`."""
    doc = next(d for d in spec.documents if d.variant["evidence"] == evidence)
    edit = doc.variant["edit"]
    return doc.text[edit["sentence_start"]:edit["sentence_end"]]


def prompt_rules(spec: InstanceSpec, misleading: str, clean: str, closed_book: str) -> list[ScriptRule]:
    """Rules answering one instance by what its prompt holds: the edited sentence, the clean one, or neither."""
    question = re.escape(spec.query.strip()[:80])
    return [ScriptRule(match=f"(?s){re.escape(edited_sentence(spec, 'misleading'))}.*{question}", reply=misleading),
            ScriptRule(match=f"(?s){re.escape(edited_sentence(spec, CLEAN))}.*{question}", reply=clean),
            ScriptRule(match=question, reply=closed_book)]


def scripts(instances: list[InstanceSpec]) -> dict[str, list[ScriptRule]]:
    """The scripted models: one that always follows the documents (and knows every answer closed book), one that
    never reads them (knows the even-numbered questions, says another wrong answer to the rest), two checkpoints."""
    out: dict[str, list[ScriptRule]] = {"follower": [], "ignorer": [], "ckpt-a": [], "ckpt-b": []}
    for i, spec in enumerate(instances):
        r = replies(spec)
        out["follower"] += prompt_rules(spec, r.designated, r.gold, r.gold)
        known = r.gold if i % 2 == 0 else r.other
        out["ignorer"] += prompt_rules(spec, known, known, known)
        for name, table in CHECKPOINTS.items():
            pick = lambda flag, r=r, table=table, i=i: r.gold if table[flag][i] else r.other
            out[name] += prompt_rules(spec, r.designated if table["misled"][i] else r.gold, pick("clean"),
                                      pick("closed_book"))
    return out


def calibration_instances() -> list[InstanceSpec]:
    """4 HotpotQA, 3 USMLE and 3 MCMLE (Chinese) RAG-Stress instances built from the shared slices."""
    chosen = []
    for name, count in (("hotpotqa", 4), ("medqa-us", 3), ("medqa-zh", 3)):
        chosen += build_stress(source_specs(name)[:40], seed=0).instances[:count]
    return chosen


@dataclass(frozen=True)
class Calibration:
    url: str
    run_id: int
    instances: list[InstanceSpec]


@pytest.fixture(scope="session")
def calibration(session_url_factory) -> Calibration:
    """A database with the scripted models' answers to every calibration instance under every condition."""
    url = session_url_factory()
    engine = make_engine(url)
    instances = calibration_instances()
    report = import_specs(engine, list(enumerate(instances, start=1)))
    assert report.ok, report.errors[:3]
    models = scripts(instances)
    with scripted_models(engine, models):
        run_id = runs.create_run(engine, runs.RunOptions(models=list(models), conditions=CONDITIONS,
                                                         concurrency=16))
        result = asyncio.run(runner.execute_run(engine, run_id, clock=ManualClock()))
        assert result.status == "done" and result.failed == 0
        asyncio.run(score_and_summarise(engine, run_id, ["heuristic"]))
    engine.dispose()
    return Calibration(url, run_id, instances)


@pytest.fixture
def calibration_engine(calibration):
    engine = make_engine(calibration.url)
    yield engine
    engine.dispose()


def repo_path(*parts: str) -> Path:
    """A path inside the repository."""
    return Path(REPO_ROOT, *parts)
