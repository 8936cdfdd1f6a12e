"""ALCE's published evaluated outputs (data/suites/alce/: an unmodified subset of princeton-nlp/ALCE
human_eval/human_eval_citations_completed.json, README there) imported as citation responses and scored by the
protocol's one computation: our sentence split and our tally, replaying ALCE's own NLI verdicts, reproduce ALCE's
per-response recall and precision; ALCE's NLI and the offline judge measured against the annotators."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli import app
from core.protocols.citation.analysis_alce import compare_sync, published_scores, replayed_scores
from core.protocols.citation.builder_alce_eval import AlceRecordError, read_alce_human_eval, read_record
from core.scoring.judges.heuristic import HeuristicJudge
from core.store.db import make_engine
from tests.citation.test_citation import JUDGE
from tests.factories import scripted_models

FIXTURE = Path(__file__).resolve().parents[2] / "data" / "suites" / "alce" / "human_eval_citations_subset.json"
FIXTURE_SHA256 = "5dc6e0c667ebd3c53c421a27c1ed195e2bc875ae9fb8595cf098674e905a26f4"
RESULT_FILE = "asqa-gpt-35-turbo-gtr-shot2-ndoc5-42-azure.json"
FIRST_IDS = ["-7013890438520559398", "7089015503030534342", "8793099883447006698", "-881464876144297194",
             "1650309494326541834", "2378678654868379935", "-3322598412088356524", "-4633355453516911545",
             "-7464414779466400769", "1562758409663917015", "7813254335895169912", "732619765350082410",
             "6962706727076805207", "3127369420834732535", "-8056895208806271453", "4131723857510142703"]


def test_the_fixture_is_the_stated_cut() -> None:
    """The committed subset is unchanged since it was cut: the first 16 records, in file order, of ALCE's ASQA
    gpt-3.5-turbo ndoc5 result (the ids the utility file at ALCE 246c476 lists first for that result)."""
    assert hashlib.sha256(FIXTURE.read_bytes()).hexdigest() == FIXTURE_SHA256
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert list(data) == ["asqa"] and list(data["asqa"]) == [RESULT_FILE]
    assert list(data["asqa"][RESULT_FILE]) == FIRST_IDS


def test_imports_every_record_with_its_cited_documents() -> None:
    responses = read_alce_human_eval(FIXTURE)
    assert [r.qid for r in responses] == FIRST_IDS
    first = responses[0]
    assert sorted(first.documents) == [1, 2, 4, 5] and first.ndoc() == 5
    assert [d["doc_id"] for d in first.instance()["documents"]][0] == f"{first.uid}-d1"
    assert first.citation_docs()[4] == f"{first.uid}-d5"
    assert [s.cited for s in responses[2].sentences] == [(1, 2, 3)]  # "[1][2][3][4][5]": ALCE evaluates three


BROKEN = [  # a record edited so it no longer fits -> the field the error names
    pytest.param(lambda r: r["sentences"][0]["citations"].pop(), "sentences[0].citations", id="a-citation-missing"),
    pytest.param(lambda r: r.pop("automatic_recall_scores"), "automatic_recall_scores", id="no-automatic-scores"),
    pytest.param(lambda r: r["automatic_citation_precision_scores"][0].append(2), "sentences[0]",
                 id="verdicts-do-not-pair"),
]


@pytest.mark.parametrize(("edit", "named"), BROKEN)
def test_a_record_that_does_not_fit_is_refused_naming_the_field(edit, named: str) -> None:
    record = json.loads(FIXTURE.read_text(encoding="utf-8"))["asqa"][RESULT_FILE][FIRST_IDS[0]]
    edit(record)
    with pytest.raises(AlceRecordError, match=named.replace("[", r"\[").replace("]", r"\]")):
        read_record("asqa", RESULT_FILE, FIRST_IDS[0], record)


def test_our_computation_with_alces_verdicts_gives_alces_numbers() -> None:
    for response in read_alce_human_eval(FIXTURE):
        recall, precision, undecided = asyncio.run(replayed_scores(response))
        assert undecided == 0
        assert (recall, precision) == pytest.approx(published_scores(response, "auto")), response.qid


def test_agreement_on_alces_published_records() -> None:
    """The figures docs/citation.md quotes (16 responses, 24 sentences, 28 citations)."""
    result = compare_sync(HeuristicJudge(), read_alce_human_eval(FIXTURE))
    assert (result.n_responses, result.n_sentences, result.n_citations) == (16, 24, 28)
    assert (result.split_same, result.replay_same, result.replay_undecided) == (16, 16, 0)
    assert (result.nli_vs_human.n, round(result.nli_vs_human.agreement, 3), round(result.nli_vs_human.kappa, 2)) == (
        24, 0.958, 0.86)
    citations = result.nli_vs_human_citations
    assert (citations.n, round(citations.agreement, 3), round(citations.kappa, 2)) == (28, 0.857, 0.29)
    # offline: only the uncited sentences are decided (unsupported, as the annotators said); the rest undecided
    assert (result.judge_vs_human.n, result.judge_vs_human.agreement, result.judge_vs_human.undecided) == (4, 1.0, 20)
    assert result.states["citation.recall"] == {"not_applicable": 15, "scored": 1}


# ----------------------------------------------------------------------- `gauntlet judge check --suite alce-citations`


def test_judge_check_on_alces_annotators_offline(db_url, monkeypatch) -> None:
    """The heuristic judge decides only the 4 uncited sentences: they agree with the annotators; kappa is undefined
    (one class) and the 20 cited sentences are counted unscored, never filled."""
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", db_url)
    result = CliRunner().invoke(app, ["judge", "check", "heuristic", "--suite", "alce-citations"])
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if line.startswith("support"))
    assert row.split()[1:] == ["-", "-", "100.00", "-", "24", "4", "20"] and "stored as judge check" in result.stdout
    assert "one annotator per sentence" in result.stdout


def test_judge_check_on_alces_annotators_with_an_llm_judge(db_url) -> None:
    """An LLM judge through the openai SDK on the loopback server (scripted: supported when the claim is quoted in
    the passage) decides every sentence; agreement and kappa come with n."""
    from core.protocols.citation.analysis_alce import check_alce_citations
    from core.scoring.judges import resolve_judge

    engine = make_engine(db_url)
    with scripted_models(engine, {"judge-cite": JUDGE}):
        result = asyncio.run(check_alce_citations(resolve_judge("llm:judge-cite", engine)))
    support = result.dimensions[0]
    assert (support.n_pairs, support.n_missing, support.n_agreement) == (24, 0, 24)
    assert result.calls >= 20
    # the scripted judge finds no claim quoted verbatim: all unsupported, so it agrees on the 4 uncited sentences only
    assert (support.agreement, support.kappa) == (pytest.approx(4 / 24), None)


def test_the_stored_check_shows_on_judge_alignment(db_url, monkeypatch) -> None:
    """Judge alignment's table of stored checks lists the suite with n, agreement, the unscored count and fitness."""
    from core.analysis.judge_check import latest_checks
    from ui.alignment_view import suite_check_table

    monkeypatch.setenv("GAUNTLET_DATABASE_URL", db_url)
    assert CliRunner().invoke(app, ["judge", "check", "heuristic", "--suite", "alce-citations"]).exit_code == 0
    table = suite_check_table(latest_checks(make_engine(db_url), "suite"))
    row = table[table["Suite"] == "alce-citations"].iloc[0]
    assert (row["Dimension"], row["Agreement %"], row["n agreement pairs"], row["n unscored pairs"]) == (
        "support", 100.0, 4, 20)
    assert row["Fitness"] == "undetermined" and row["Pearson 95% CI"] == "—"
