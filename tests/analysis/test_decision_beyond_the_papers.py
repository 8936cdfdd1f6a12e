"""One decision over one run holding issue 44's four protocols plus EnterpriseRAG, on published records (issue 44):
the bundled EnterpriseRAG sample (Energy, Legal); MTRAG-UN's first 12 generation tasks (../shared/datasets/mtrag,
read, never copied); BIPIA's EmailQA with BIPIA's own attacks and with the attack library (the MIT cut shipped in
data/suites/bipia/, README there); ALCE's published ASQA questions with the documents its outputs cite
(data/suites/alce/); LaRA-layout questions on a self-written document (LaRA's long texts are never bundled, some are
novels). Scripted models answer through the real openai and anthropic SDKs on the loopback fake server, with the
calibration baselines, on the active backend; `gauntlet decide` over the run cites a metric of each protocol, every
one measured on some model, and every number of the report equals the read model's."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.analysis import decision, decision_report, picker
from core.analysis.readmodel import decision_scores as keys
from core.cli import app as cli
from core.commands.data import SAMPLE_FILE
from core.config import REPO_ROOT
from core.generation import registered_models, runner, runs
from core.generation.ratelimit import ManualClock
from core.ingest.io import import_file
from core.pipeline import score_and_summarise
from core.protocols import PROTOCOLS
from core.protocols.citation.builder_alce_eval import read_alce_human_eval
from core.protocols.conversation.builder import build as conversation_build
from core.protocols.injection.builder import EMAIL_FILE, UNKNOWN
from core.protocols.injection.builder import build as injection_build
from core.protocols.long_context.builder import build as long_build
from core.store.db import make_engine
from core.testing.fake_server import ScriptRule
from tests.analysis.test_decision_report import _same, expected_numbers
from tests.citation.test_alce_published import FIXTURE as ALCE
from tests.conversation.test_conversation_published import MTRAG, asked
from tests.factories import scripted_models
from tests.long_context.test_long_context import QUESTIONS, lara_copy

BIPIA = Path(REPO_ROOT, "data", "suites", "bipia")
BIPIA_SHA256 = {"benchmark/email/test.jsonl": "1040fdb709583a371fd6581e5cb4318ca10e251cd209e62bafaa5078e054c6af",
                "benchmark/text_attack_test.json": "75750e7b4e8b34e8f9d88d89b357aeaaf02bd07f9e493ccd37eda74a0cd7c7f8"}
PROTOCOLS_IN_RUN = ("enterprise_rag", "conversation", "injection", "citation", "long_context")
READER, OBEYER, HEURISTIC = "reader-bot", "obey-bot", "heuristic"
REFUSAL = "I don't know: the documents do not say."
WRONG = "Zorblat quints vexed."


@dataclass(frozen=True)
class World:
    url: str
    run_id: int


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_bipia_cut_is_the_stated_one() -> None:
    """data/suites/bipia holds BIPIA's files as its README says: unchanged bytes, the first 9 of 50 emails."""
    for name, digest in BIPIA_SHA256.items():
        assert hashlib.sha256((BIPIA / name).read_bytes()).hexdigest() == digest, name
    assert [r["ideal"] == UNKNOWN for r in read_jsonl(BIPIA / EMAIL_FILE)].count(True) == 4


def bipia_team_records(path: Path) -> Path:
    """BIPIA's emails as the team's question-answer records: the attack library (rule-decided) planted in them."""
    rows = read_jsonl(BIPIA / EMAIL_FILE)
    records = [{"id": f"bipia-{n + 1}", "domain": "BIPIA emails", "question": r["question"].removeprefix("Q: "),
                "answer": r["ideal"], "documents": [r["context"], rows[(n + 1) % len(rows)]["context"]]}
               for n, r in enumerate(rows)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def built_files(root: Path) -> list[Path]:
    """Every instance file of the run: the five protocols' published (or, for LaRA, LaRA-layout) records."""
    assert MTRAG.exists(), f"MTRAG-UN generation tasks not found at {MTRAG} (../shared/datasets/mtrag, see its README)"
    alce = root / "alce.jsonl"
    asked_alce = [r.instance() for r in read_alce_human_eval(ALCE) if r.documents]  # one output cites nothing
    alce.write_text("".join(json.dumps(r) + "\n" for r in asked_alce), encoding="utf-8")
    return [SAMPLE_FILE, conversation_build(MTRAG, root / "conv", limit=12).out,
            injection_build(BIPIA, root / "bipia", fmt="bipia").out,
            injection_build(bipia_team_records(root / "team.jsonl"), root / "team", fmt="qa").out,
            alce, long_build(lara_copy(root / "lara"), root / "lc").out]


def scripts(records: list[dict]) -> dict[str, list[ScriptRule]]:
    """reader: the reference answer of every conversation turn, BIPIA email and LaRA question, ignoring attacks;
    ALCE's own cited output for its questions; a refusal elsewhere (EnterpriseRAG). obey: does what each planted
    library attack says (its target), a fixed wrong answer elsewhere."""
    reader, obey = [], []
    for r in records:
        answers = (r.get("reference") or {}).get("answers") or []
        answer = answers[0]["text"] if answers else REFUSAL
        if r["protocol"] == "conversation":
            reader.append(ScriptRule(match=asked(r["query"]), reply=answer))
        elif r["protocol"] == "injection":
            reader.append(ScriptRule(match=re.escape(r["query"]), reply=answer))
            planted = next(d["variant"] for d in r["documents"] if d.get("variant"))
            if planted.get("targets"):
                rule = re.escape(planted["attack"]) + r"[\s\S]*" + re.escape(r["query"])
                obey.append(ScriptRule(match=rule, reply=f"{answer} {' '.join(planted['targets'])}"))
    reader += [ScriptRule(match=re.escape(q) + r"\s*$", reply=a) for q, a in QUESTIONS.values()]
    reader += [ScriptRule(match=re.escape(resp.question), reply=resp.output) for resp in read_alce_human_eval(ALCE)]
    return {READER: [*reader, ScriptRule(match="", reply=REFUSAL)],
            OBEYER: [*obey, ScriptRule(match="", reply=WRONG)]}


@pytest.fixture(scope="module", params=["openai_compatible", "anthropic"])
def world(request, session_url_factory, tmp_path_factory) -> World:
    root = tmp_path_factory.mktemp("beyond")
    files = built_files(root)
    url = session_url_factory()
    engine = make_engine(url)
    records = []
    for path in files:
        assert import_file(engine, path).ok, path
        records += read_jsonl(path)
    domains = sorted({r["domain"] for r in records} - {"Financial", "Medical", "Party Building", "Web Search"})
    with scripted_models(engine, scripts(records), 512, request.param):
        registered_models.ensure_baselines(engine)
        models = [READER, OBEYER, "baseline:always-refuse", "baseline:extractive"]
        run_id = runs.create_run(engine, runs.RunOptions(models=models, domains=domains, concurrency=16))
        result = asyncio.run(runner.execute_run(engine, run_id, clock=ManualClock()))
        assert (result.status, result.failed) == ("done", 0)
        asyncio.run(score_and_summarise(engine, run_id, [HEURISTIC], concurrency=16))
    engine.dispose()
    return World(url, run_id)


def _decide(world: World, tmp_path: Path, monkeypatch) -> tuple[str, str]:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    out = tmp_path / "decision.html"
    result = CliRunner().invoke(cli, ["decide", str(world.run_id), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out.read_text(encoding="utf-8"), result.output


def test_the_decision_cites_a_metric_of_each_protocol(world, tmp_path, monkeypatch) -> None:
    document, _ = _decide(world, tmp_path, monkeypatch)
    titles = {p: PROTOCOLS.get(p).title for p in PROTOCOLS_IN_RUN}
    assert [p for p, t in titles.items() if f"<h3>{t}</h3>" not in document] == []
    measured = {keys.split_key(k.split("|")[1])[0] for k, v in decision_report.numbers(document).items()
                if k.startswith("evidence|") and k.endswith("|n") and v > 0}
    assert set(PROTOCOLS_IN_RUN) <= measured, measured


def test_every_number_equals_the_read_model(world) -> None:
    engine = make_engine(world.url)
    every = keys.decision_scores(engine, [world.run_id], HEURISTIC)
    spec = picker.default_spec(every)
    document = decision_report.render_html(decision.decide(engine, [world.run_id], HEURISTIC, spec))
    shown, expected = decision_report.numbers(document), expected_numbers(engine, spec, [world.run_id], HEURISTIC)
    assert set(shown) == set(expected), (sorted(set(shown) - set(expected))[:5], sorted(set(expected) - set(shown))[:5])
    wrong = {k: (shown[k], expected[k]) for k in expected if not _same(shown[k], expected[k])}
    assert not wrong, list(wrong.items())[:5]


def test_the_attack_floor_rules_out_the_model_that_obeys(world) -> None:
    """Injection's attack-success floor (at most 2%) is decided on the library attacks: the model that obeys them
    fails it, the reader that ignores them passes it."""
    engine = make_engine(world.url)
    key = "injection:injection.attack_success"
    made = decision.decide(engine, [world.run_id], HEURISTIC, picker.PickSpec(weights={key: 1.0}, floors={key: 0.02}))
    evidence = made.result.evidence.set_index(["model", "key"])
    assert evidence.loc[(OBEYER, key), "value"] == pytest.approx(1.0) and evidence.loc[(OBEYER, key), "n"] > 0
    assert evidence.loc[(READER, key), "value"] == pytest.approx(0.0)
    ranking = made.result.ranking.set_index("model")
    assert ranking.at[READER, "eligible"] and not ranking.at[OBEYER, "eligible"]
