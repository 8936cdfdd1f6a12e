"""A retriever that cannot read the corpus's language is named, never silent: the MiniLM embedder's tokenizer maps
most Han characters of the DomainRAG slice to [UNK]; the share is measured on the corpus sample when the retriever is
built, and the build output, the build report, the built instances (for the page) and Table 2 say so."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from core.cli import app
from core.construction.corpus import CorpusDoc
from core.construction.embedders import MiniLmOnnxEmbedder
from core.construction.retrieval import UNKNOWN_WARN, RetrievalConfig, Retriever
from core.generation import runner, runs
from core.generation.ratelimit import ManualClock
from core.ingest.io import import_file
from core.pipeline import score_and_summarise
from core.protocols import get_protocol
from core.protocols.domainrag import builder
from core.protocols.domainrag.analysis import unreadable_dense_share
from core.protocols.paper import build_table
from core.store.db import make_engine
from core.testing.fake_server import ScriptRule
from tests.domainrag.conftest import shared_data
from tests.factories import scripted_models
from tests.pages.signin import sign_in

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "domain_abilities.py")

ENGLISH = ["The admissions office publishes the minimum score of each province in July.",
           "Students of the Sino-French institute are taught in Chinese, French and English."]


def _passages(count: int) -> list[dict]:
    with (shared_data() / "corpus_passages_slice.part1.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line) for _, line in zip(range(count), handle, strict=False)]


@pytest.fixture(scope="module")
def minilm() -> MiniLmOnnxEmbedder:
    return MiniLmOnnxEmbedder()


@pytest.mark.parametrize(("texts", "low", "high"), [
    pytest.param(lambda: [p["contents"] for p in _passages(50)], UNKNOWN_WARN, 1.0, id="chinese-slice-mostly-unk"),
    pytest.param(lambda: ENGLISH, 0.0, 0.01, id="english-read"),
    pytest.param(lambda: [], 0.0, 0.0, id="no-text"),
])
def test_unknown_share_of_the_minilm_tokenizer(minilm, texts, low, high):
    assert low <= minilm.unknown_share(texts()) <= high


@pytest.mark.parametrize(("texts", "warned"), [
    pytest.param(lambda: [p["contents"] for p in _passages(20)], True, id="chinese-slice"),
    pytest.param(lambda: ENGLISH, False, id="english"),
])
def test_the_retriever_warns_at_index_time(minilm, texts, warned):
    docs = [CorpusDoc(doc_id=f"d{i}", domain="t", title="", text=t) for i, t in enumerate(texts())]
    retriever = Retriever(docs, RetrievalConfig(window=1024, overlap=0, embedder=None, index_dir=None), minilm)
    warning = retriever.language_warning()
    assert (warning is not None) is warned
    if warned:
        assert "[UNK]" in warning and f"{retriever.unknown_share:.0%}" in warning


def test_bm25_only_has_no_share():
    retriever = Retriever([CorpusDoc(doc_id="d", domain="t", title="", text="招生")],
                          RetrievalConfig(embedder=None, index_dir=None))
    assert retriever.unknown_share is None and retriever.language_warning() is None


def test_build_output_report_and_instances_carry_the_warning(minilm, tmp_path, monkeypatch):
    def small_retriever(corpus, options):  # the dense index over 40 passages of the slice: the build stays fast
        docs = builder.corpus_docs(dict(list(corpus.items())[:40]))
        return Retriever(docs, RetrievalConfig(window=1024, overlap=0, embedder=None, index_dir=None), minilm)

    monkeypatch.setattr(builder, "make_retriever", small_retriever)
    out = tmp_path / "built.jsonl"
    result = CliRunner().invoke(app, ["domainrag", "build", "--data", str(shared_data()), "--limit", "1",
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "WARNING: the dense retriever's embedder" in result.output and "[UNK]" in result.output
    payloads = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    dense = [p for p in payloads if any(d["variant"]["setting"] == "dense" for d in p["documents"])]
    assert dense and all(p["metadata"]["dense_unknown_share"] >= UNKNOWN_WARN for p in dense)
    assert all("dense_unknown_share" not in p["metadata"] for p in payloads if p not in dense)


@pytest.mark.parametrize(("rows", "expected"), [
    pytest.param([("dense", 0.9), ("bm25", None)], 0.9, id="dense-unreadable"),
    pytest.param([("dense", 0.1)], None, id="dense-readable"),
    pytest.param([("bm25", None), (None, None)], None, id="no-dense-responses"),
    pytest.param([("released_dense", None)], None, id="released-dense-is-the-authors"),
])
def test_page_warning_share(rows, expected):
    scores = pd.DataFrame(rows, columns=["retriever", "dense_unknown_share"])
    assert unreadable_dense_share(scores) == expected


def test_the_page_warns_beside_dense_results(minilm, tmp_path, monkeypatch, backend_url_factory):
    """Instances built with the MiniLM dense retriever, answered under dense_top1 and scored: the Domain abilities page
    says the embedder could not read the corpus, with the measured share."""
    def small_retriever(corpus, options):
        docs = builder.corpus_docs(dict(list(corpus.items())[:40]))
        return Retriever(docs, RetrievalConfig(window=1024, overlap=0, embedder=None, index_dir=None), minilm)

    monkeypatch.setattr(builder, "make_retriever", small_retriever)
    payloads, report = builder.build_instances(builder.BuildOptions(data=shared_data(), limit=1))
    chosen = [p for p in payloads if p["attributes"]["question_type"] == "extractive"]
    builder.write_jsonl(chosen, tmp_path / "dense.jsonl")
    url = backend_url_factory()
    engine = make_engine(url)
    assert import_file(engine, tmp_path / "dense.jsonl").ok
    with scripted_models(engine, {"any-bot": [ScriptRule(match="", reply="不知道")]}):
        run_id = runs.create_run(engine, runs.RunOptions(models=["any-bot"], conditions=["dense_top1"]))
        assert asyncio.run(runner.execute_run(engine, run_id, clock=ManualClock())).failed == 0
    asyncio.run(score_and_summarise(engine, run_id, ["heuristic"]))
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    at = sign_in(AppTest.from_file(PAGE, default_timeout=60), "analyst").run()
    assert not at.exception, at.exception
    share = chosen[0]["metadata"]["dense_unknown_share"]
    warnings = [w.value for w in at.warning if "[UNK]" in w.value]
    assert warnings == [f"The dense retriever's embedder mapped {share:.0%} of the corpus's characters to unknown "
                        "tokens ([UNK]) when these instances were built: it cannot read this language, so the "
                        "dense_top1 / dense_top3 results measure near-random passages. Use the released dense runs "
                        "or an embedder for this language."]
    assert report.warnings and f"{share:.0%}" in report.warnings[0]
    spec = get_protocol("domainrag").paper_tables[0]
    ours = build_table(spec, engine, [run_id], "heuristic", {"retrieval": "ours"}).notes
    released = build_table(spec, engine, [run_id], "heuristic", {"retrieval": "released"}).notes
    assert warnings[0] in ours and warnings[0] not in released
