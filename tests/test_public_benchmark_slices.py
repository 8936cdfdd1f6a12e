"""RGB (English and Chinese), RAMDocs, CRAG and FollowRAG end to end on their published excerpts (tests/fixtures/<format>/,
sources named in each README): import the first records, answer through the real OpenAI SDK against scripted fake
servers (a gold, a wrong and the always-refuse model), score, and read each format's own measures beside the generic
ones. Gold scores 1, wrong 0, and a refusal is a rejection where the benchmark says so (RGB negatives-only: 1; CRAG:
missing, score 0)."""

from __future__ import annotations

import asyncio
import bz2
import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pytest
from sqlmodel import Session, select
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from core.analysis import readmodel
from core.cli import app
from core.config import REPO_ROOT
from core.generation import registered_models, runner, runs
from core.generation.ratelimit import ManualClock
from core.ingest.importers import import_source
from core.metrics import STATES, get_metric
from core.pipeline import score_and_summarise
from core.store.db import make_engine
from core.store.models import Instance
from tests.factories import add_model
from tests.pages.signin import sign_in
from tests.test_public_slices import _serve

FIXTURES = REPO_ROOT / "tests" / "fixtures"
MODELS = ("baseline:always-refuse", "gold-bot", "wrong-bot")
REFUSE, GOLD, WRONG = MODELS
NEGATIVES = "negatives_only"


@dataclass(frozen=True)
class Slice:
    fmt: str
    path: str  # under tests/fixtures
    records: int
    conditions: tuple[str, ...] = ("",)
    # (model, condition or None for any) -> {measure: the value every such row has}
    want: dict[tuple[str, str | None], dict[str, float]] = field(default_factory=dict)


RGB_WANT = {(GOLD, ""): {"rgb_accuracy": 1.0}, (WRONG, ""): {"rgb_accuracy": 0.0}, (REFUSE, ""): {"rgb_accuracy": 0.0},
            (REFUSE, NEGATIVES): {"rgb_rejection": 1.0}, (GOLD, NEGATIVES): {"rgb_rejection": 0.0},
            (WRONG, NEGATIVES): {"rgb_rejection": 0.0}}
RGB_INT_WANT = {(GOLD, ""): {"rgb_integration": 1.0}, (WRONG, ""): {"rgb_integration": 0.0},
                (REFUSE, ""): {"rgb_integration": 0.0}, (REFUSE, NEGATIVES): {"rgb_rejection": 1.0},
                (GOLD, NEGATIVES): {"rgb_rejection": 0.0}}
CRAG_WANT = {(GOLD, None): {"crag_score": 1.0, "crag_accuracy": 1.0, "crag_hallucination": 0.0, "crag_missing": 0.0},
             (WRONG, None): {"crag_score": -1.0, "crag_accuracy": 0.0, "crag_hallucination": 1.0, "crag_missing": 0.0},
             (REFUSE, None): {"crag_score": 0.0, "crag_accuracy": 0.0, "crag_hallucination": 0.0, "crag_missing": 1.0}}
SLICES = [
    pytest.param(Slice("rgb", "rgb/en_fact.json", 2, ("", NEGATIVES), RGB_WANT), id="rgb-en-fact"),
    pytest.param(Slice("rgb", "rgb/zh_refine.json", 2, ("", NEGATIVES), RGB_WANT), id="rgb-zh-refine"),
    pytest.param(Slice("rgb", "rgb/zh_int.json", 2, ("", NEGATIVES), RGB_INT_WANT), id="rgb-zh-int"),
    pytest.param(Slice("ramdocs", "ramdocs/RAMDocs_test.jsonl", 3, want={
        (GOLD, None): {"ramdocs_accuracy": 1.0}, (WRONG, None): {"ramdocs_accuracy": 0.0},
        (REFUSE, None): {"ramdocs_accuracy": 0.0}}), id="ramdocs"),
    pytest.param(Slice("crag", "crag/dev_data.jsonl.bz2", 3, want=CRAG_WANT), id="crag-with-false-premise"),
    pytest.param(Slice("followrag", "followrag/followRAG_ifnq.json", 3, want={
        (GOLD, None): {"followrag_accuracy": 1.0}, (WRONG, None): {"followrag_accuracy": 0.0},
        (REFUSE, None): {"followrag_accuracy": 0.0}}), id="followrag-ifnq"),
]



def first_records(path: Path, n: int, out: Path) -> Path:
    """The first n records of a published file, in its own layout (a JSON array or JSON lines, bz2 or plain)."""
    if path.suffix == ".bz2":
        with bz2.open(path, "rt", encoding="utf-8") as packed:
            text = packed.read()
    else:
        text = path.read_text(encoding="utf-8")
    target = out / path.name.removesuffix(".bz2")
    if text.lstrip().startswith("["):
        target.write_text(json.dumps(json.loads(text)[:n], ensure_ascii=False, indent=4), encoding="utf-8")
    else:
        target.write_text("\n".join([line for line in text.split("\n") if line.strip()][:n]) + "\n", encoding="utf-8")
    return target


def gold_reply(instance: Instance) -> str:
    """The benchmark's gold answer as a model would say it: every part of a multi-answer record, the first of
    FollowRAG's slash alternatives; a CRAG false premise answered with its own published gold (CRAG's
    local_evaluation.py counts 'invalid' as correct only where that gold says 'invalid')."""
    ref = instance.reference
    texts = [a["text"] for a in ref["answers"]]
    if instance.uid.startswith("followrag/"):
        return texts[0].split("/")[0]
    return ("、" if instance.language == "zh" else ", ").join(texts)


def wrong_reply(instance: Instance, pool: list[str]) -> str:
    """The record's own wrong answer (RGB's fakeanswer, RAMDocs' misinformation) where it has one, else another
    record's gold answer that shares nothing with this one's."""
    ref = instance.reference
    accepted = [f.lower() for a in ref["answers"] for f in (a["text"], *a["text"].split("/"))]
    candidates = [*ref.get("wrong_answers", []), *pool]
    return next(c for c in candidates if c and not any(a in c.lower() or c.lower() in a for a in accepted))


def run_slice(engine, monkeypatch, instances: list[Instance], conditions: tuple[str, ...]) -> int:
    """A run of the three models over `instances` and `conditions`, scored by the heuristic judge."""
    pool = [a["text"] for i in instances for a in i.reference["answers"]] + ["Zebra crossing 9931"]
    servers = {GOLD: _serve({i.query: gold_reply(i) for i in instances}),
               WRONG: _serve({i.query: wrong_reply(i, pool) for i in instances})}
    try:
        for name, server in servers.items():
            env = name.upper().replace("-", "_")
            monkeypatch.setenv(f"{env}_URL", server.base_url + "/v1")
            monkeypatch.setenv(f"{env}_KEY", "test-key")
            add_model(engine, name, "openai_compatible", max_output_tokens=256,
                      settings={"base_url_env": f"{env}_URL", "api_key_env": f"{env}_KEY", "timeout_s": 5})
        registered_models.ensure_baselines(engine)
        run_id = runs.create_run(engine, runs.RunOptions(models=list(MODELS), conditions=list(conditions)))
        result = asyncio.run(runner.execute_run(engine, run_id, clock=ManualClock()))
        assert result.status == "done" and result.failed == 0
        asyncio.run(score_and_summarise(engine, run_id, ["heuristic"]))
    finally:
        for server in servers.values():
            server.stop()
    return run_id


def report_lists_measures(url: str, run_id: int, case: Slice, scores: pd.DataFrame, monkeypatch) -> None:
    """`gauntlet report` lists each of the format's measures per model and condition: its mean, n and the count of
    every state, the same as the read model's rows; the table output names them."""
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", url)
    result = CliRunner().invoke(app, ["report", str(run_id), "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = {(r["model"], r["condition"], r["metric"]): r for r in json.loads(result.output)["protocols"]["reference_qa"]["metrics"]}
    for (model, condition), measures in case.want.items():
        mine = rows_of(scores, model, condition)
        for measure, value in measures.items():
            row = rows[(model, condition or "", measure)]
            states = mine[f"{measure}_state"].value_counts().to_dict()
            assert row["value"] == pytest.approx(value) and row["n"] == row["n_scored"] == states.get("scored"), row
            assert {s: row[f"n_{s}"] for s in STATES if row[f"n_{s}"]} == states, (row, states)
    table = CliRunner().invoke(app, ["report", str(run_id), "--format", "table"]).output
    assert all(measure in table for measures in case.want.values() for measure in measures), table


def page_shows_measures(url: str, case: Slice, scores: pd.DataFrame, monkeypatch) -> None:
    """The Protocol views page's "Each benchmark's own measures" table shows each measure per model and condition
    with its mean, n and the count of every state, the same as the read model's rows."""
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    at = sign_in(AppTest.from_file(str(REPO_ROOT / "pages" / "protocol_views.py"), default_timeout=60), "analyst").run()
    at.selectbox(key="pv_protocol").set_value("reference_qa").run()
    assert not at.exception, at.exception
    assert "Each benchmark's own measures" in [s.value for s in at.subheader]
    table = next(f.value for f in at.dataframe if "measure" in f.value.columns)
    for (model, condition), measures in case.want.items():
        mine = rows_of(scores, model, condition)
        for measure, value in measures.items():
            shown = table[(table["model"] == model) & (table["measure"] == get_metric(measure).label)
                          & (table["condition"] == condition if condition is not None else True)]
            assert not shown.empty and (shown["value"] == value).all(), (model, condition, measure, shown)
            assert shown["n_scored"].sum() == (mine[f"{measure}_state"] == "scored").sum(), shown


def rows_of(scores: pd.DataFrame, model: str, condition: str | None) -> pd.DataFrame:
    mine = scores[scores["model"] == model]
    return mine if condition is None else mine[mine["condition"] == condition]


@pytest.mark.parametrize("case", SLICES)
def test_published_slice_scores_as_the_benchmark_says(case: Slice, tmp_path, monkeypatch, backend_url_factory) -> None:
    url = backend_url_factory()
    engine = make_engine(url)
    report = import_source(engine, first_records(FIXTURES / case.path, case.records, tmp_path), fmt=case.fmt)
    assert report.ok, report.errors[:3]
    with Session(engine) as session:
        instances = list(session.exec(select(Instance)).all())
    assert len(instances) == case.records
    run_id = run_slice(engine, monkeypatch, instances, case.conditions)
    scores = readmodel.reference_scores(engine, [run_id], "heuristic")
    assert len(scores) == len(MODELS) * len(case.conditions) * case.records
    for (model, condition), measures in case.want.items():
        mine = rows_of(scores, model, condition)
        for measure, value in measures.items():
            assert (mine[f"{measure}_state"] == "scored").all() and (mine[measure] == value).all(), \
                (model, condition, mine[["instance_uid", measure, f"{measure}_state"]])
    report_lists_measures(url, run_id, case, scores, monkeypatch)
    page_shows_measures(url, case, scores, monkeypatch)
    answerable = scores[(scores["answer_type"] != "unanswerable") & (scores["condition"] != NEGATIVES)]
    for model, want in ((GOLD, 1.0), (WRONG, 0.0), (REFUSE, 0.0)):
        mine = answerable[answerable["model"] == model]
        assert (mine["correctness"] == want).all(), (model, mine[["instance_uid", "correctness"]])
        if model != REFUSE:
            assert (mine["exact_match"] == want).all(), (model, mine[["instance_uid", "exact_match"]])
    if case.fmt == "crag":
        false_premise = scores[scores["answer_type"] == "unanswerable"]
        assert len(false_premise) == len(MODELS) and (false_premise["rejection_state"] == "not_applicable").all()
    if case.fmt == "followrag":
        followed = readmodel.instruction_scores(engine, [run_id], "heuristic")
        assert sorted(followed["model"].value_counts().to_dict().items()) == sorted((m, case.records) for m in MODELS)
        assert (followed["judged"] == followed["n_instructions"]).all() and followed["errors"].sum() == 0
