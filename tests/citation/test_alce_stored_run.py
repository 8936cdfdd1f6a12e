"""ALCE's published outputs as a stored run (issue 44): `gauntlet citation alce-import` stores the shipped subset
(data/suites/alce/, 16 outputs of ALCE's ASQA gpt-3.5-turbo ndoc5 result) as a set and a run under
'deployed:ALCE asqa/...', on the active backend; `gauntlet score RUN` scores it with the protocol's one computation and
gives the states the in-memory check gives; the report, the citation page and the decision read it like any run; a
second import of the same file is refused and imports nothing."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from sqlmodel import Session, func, select
from typer.testing import CliRunner

from core.cli import app
from core.protocols.citation import PRECISION, RECALL
from core.protocols.citation.analysis import citation_table
from core.protocols.citation.analysis_alce import compare_sync
from core.protocols.citation.builder_alce_eval import read_alce_human_eval
from core.scoring.judges.heuristic import HeuristicJudge
from core.store.db import make_engine
from core.store.models import Response, Run
from tests.citation.test_alce_published import FIXTURE, RESULT_FILE
from tests.protocol_steps import assert_page_renders

MODEL = f"deployed:ALCE asqa/{RESULT_FILE.removesuffix('.json')}"


@dataclass(frozen=True)
class World:
    url: str
    run_id: int


def _cli(url: str, monkeypatch, *args: str):
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", url)
    return CliRunner().invoke(app, list(args))


@pytest.fixture(scope="module")
def world(session_url_factory) -> World:
    url = session_url_factory()
    with pytest.MonkeyPatch.context() as mp:
        imported = _cli(url, mp, "citation", "alce-import", str(FIXTURE))
        assert imported.exit_code == 0, imported.output
        assert imported.output.startswith("run ") and MODEL in imported.output, imported.output
        run_id = int(imported.output.split()[1].rstrip(":"))
        scored = _cli(url, mp, "score", str(run_id), "--judge", "heuristic")
        assert scored.exit_code == 0, scored.output
    return World(url, run_id)


def test_every_output_is_a_done_response_numbered_as_alce_prompted(world) -> None:
    responses = read_alce_human_eval(FIXTURE)
    with Session(make_engine(world.url)) as session:
        run = session.get(Run, world.run_id)
        stored = session.exec(select(Response).where(Response.run_id == world.run_id)).all()
    assert run is not None and run.status == "done"
    assert sorted(r.text for r in stored) == sorted(r.output for r in responses)
    assert {r.status for r in stored} == {"done"} and len(stored) == 16
    assert sorted(len(r.prompt_meta["citation_docs"]) for r in stored) == sorted(r.ndoc() for r in responses)


def test_stored_scores_are_the_in_memory_checks(world) -> None:
    """The stored run scored by the heuristic judge has the state counts `gauntlet citation alce-check` prints."""
    expected = compare_sync(HeuristicJudge(), read_alce_human_eval(FIXTURE)).states
    table = citation_table(make_engine(world.url), [world.run_id], "heuristic").set_index(["model", "metric"])
    for metric in (RECALL, PRECISION):
        row = table.loc[(MODEL, metric)]
        assert (row["n"], row["n_not_applicable"]) == (expected[metric]["scored"],
                                                      expected[metric]["not_applicable"]), metric
    assert (table.loc[(MODEL, RECALL), "n"], table.loc[(MODEL, RECALL), "n_not_applicable"]) == (1, 15)


def test_the_report_and_the_decision_read_it(world, tmp_path, monkeypatch) -> None:
    report = _cli(world.url, monkeypatch, "report", str(world.run_id), "--format", "json")
    assert report.exit_code == 0, report.output
    rows = {r["metric"]: r for r in json.loads(report.stdout)["protocols"]["citation"]["metrics"]
            if r["model"] == MODEL}
    assert [(rows[m]["n"], rows[m]["n_not_applicable"]) for m in (RECALL, PRECISION)] == [(1, 15), (1, 15)]
    out = tmp_path / "decision.html"
    decided = _cli(world.url, monkeypatch, "decide", str(world.run_id), "--out", str(out))
    assert decided.exit_code == 0, decided.output
    assert "<h3>Citations (ALCE-style)</h3>" in out.read_text(encoding="utf-8")


def test_the_citation_page_shows_it(world, monkeypatch) -> None:
    assert_page_renders(world.url, monkeypatch, "citation", "Citation recall and precision")


def test_a_second_import_is_refused_and_imports_nothing(world, monkeypatch) -> None:
    with Session(make_engine(world.url)) as session:
        before = session.exec(select(func.count()).select_from(Run)).one()
    again = _cli(world.url, monkeypatch, "citation", "alce-import", str(FIXTURE))
    assert again.exit_code == 1 and "ALCE asqa/" in again.output
    with Session(make_engine(world.url)) as session:
        assert session.exec(select(func.count()).select_from(Run)).one() == before
