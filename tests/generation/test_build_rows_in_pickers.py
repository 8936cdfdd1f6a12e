"""A benchmark build's LLM-spend row (`record_build`, config kind 'build') is listed with the runs and their spend,
and never offered where an evaluation run is chosen: every such choice filters by core.store.run_kinds.
evaluation_run, and the commands that take run ids refuse a build's. The build row here is given a done response and
a verdict copied from the seeded run (no real build has either), so a choice that filtered only by responses or
verdicts would still offer it. Both backends."""

from __future__ import annotations

import pytest
from sqlmodel import Session, select
from typer.testing import CliRunner

from core.analysis import alignment
from core.analysis.readmodel import runs as readmodel_runs
from core.cli import app
from core.construction.cost import record_build
from core.generation import models_admin, runs
from core.protocols.domainrag.analysis import domainrag_runs
from core.protocols.lit_ragbench.analysis import lit_runs
from core.protocols.views import protocol_runs
from core.review import gold
from core.scoring.summaries import rebuild_summaries
from core.store.models import Response, Verdict
from tests.workspace_factories import add_verdicts, seeded_db

EVALUATION_CHOICES = {
    "results-pages": lambda engine: list(readmodel_runs.scored_run_list(engine)["id"]),
    "results-counts": lambda engine: list(readmodel_runs.scored_runs(engine)["id"]),
    "protocol-pages": lambda engine: list(protocol_runs(engine, "enterprise_rag")["run_id"]),
    "domainrag-page": lambda engine: list(domainrag_runs(engine)["run_id"]),
    "lit-ragbench-page": lambda engine: list(lit_runs(engine)["run_id"]),
    "gold-sample-picker": lambda engine: [r.id for r in gold.sample_runs(engine)],
    "judge-alignment-picker": lambda engine: list(alignment.run_choices(engine)),
}
RUN_LISTS = {  # the runs list and its spend: builds shown beside the runs
    "run-evaluation-watch-list": lambda engine: [r for r, _ in models_admin.run_choices(engine)],
    "recent-runs": lambda engine: [r.id for r in runs.recent_runs(engine)],
}


@pytest.fixture
def world(tmp_path):
    """(seeded database, evaluation run id, build row id): the build closed with its calls counted."""
    seeded = seeded_db(tmp_path)
    add_verdicts(seeded.engine, seeded, "heuristic", {(rid, "rejection"): 1 for rid in seeded.responses.values()})
    rebuild_summaries(seeded.engine, seeded.run_id, "heuristic")
    spend = record_build(seeded.engine, "enterprise_rag built.jsonl", 1.0, {"protocol": "enterprise_rag"})
    spend.finish("done")
    assert spend.run_id is not None
    with Session(seeded.engine) as session:  # a response and a verdict under the build's id (see the docstring)
        response = session.exec(select(Response).where(Response.run_id == seeded.run_id)).first()
        verdict = session.exec(select(Verdict).where(Verdict.response_id == response.id)).first()
        copy = Response(**{**response.model_dump(exclude={"id"}), "run_id": spend.run_id})
        session.add(copy)
        session.flush()
        session.add(Verdict(**{**verdict.model_dump(exclude={"id"}), "run_id": spend.run_id, "response_id": copy.id}))
        session.commit()
    return seeded, seeded.run_id, spend.run_id


@pytest.mark.parametrize("choice", list(EVALUATION_CHOICES), ids=list(EVALUATION_CHOICES))
def test_an_evaluation_run_choice_never_offers_a_build(world, choice):
    seeded, run_id, build_id = world
    offered = EVALUATION_CHOICES[choice](seeded.engine)
    assert build_id not in offered
    if choice not in ("domainrag-page", "lit-ragbench-page"):  # the seeded run holds EnterpriseRAG responses only
        assert run_id in offered


@pytest.mark.parametrize("listing", list(RUN_LISTS), ids=list(RUN_LISTS))
def test_the_runs_list_shows_builds_beside_runs(world, listing):
    seeded, run_id, build_id = world
    assert {run_id, build_id} <= set(RUN_LISTS[listing](seeded.engine))


@pytest.mark.parametrize("args", [
    pytest.param(["report", "{build}"], id="report"),
    pytest.param(["reproduce", "enterprise_rag", "--run", "{run}", "--run", "{build}"], id="reproduce"),
    pytest.param(["decide", "{run}", "{build}", "--judge", "heuristic"], id="decide"),
    pytest.param(["score", "{build}", "--judge", "heuristic"], id="score"),
])
def test_commands_refuse_a_build_row(world, monkeypatch, tmp_path, args):
    seeded, run_id, build_id = world
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", seeded.url)
    argv = [a.format(run=run_id, build=build_id) for a in args]
    result = CliRunner().invoke(app, [*argv, *(["--out", str(tmp_path / "d.html")] if args[0] == "decide" else [])])
    assert result.exit_code == 2, result.output
    assert f"run {build_id} (build: enterprise_rag built.jsonl): the LLM spend of a benchmark build" in result.output
