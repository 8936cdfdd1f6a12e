"""Hiding and deleting runs: a hidden run leaves every list and picker but stays in the database; a stale hide or
show is refused; deleting needs a hidden run, no human labels and a confirmation naming exactly what goes. Both
backends."""

from __future__ import annotations

import pytest
from sqlmodel import Session, func, select

from core.analysis import alignment
from core.analysis.readmodel import runs as readmodel_runs
from core.generation import models_admin, run_archive, runs
from core.protocols.views import protocol_runs
from core.review import gold
from core.scoring.summaries import rebuild_summaries
from core.services import runs as run_services
from core.store.labels import GOLD_DESIGN
from core.store.models import Annotation, Assignment, Response, ResponseMetric, Run, Verdict
from tests.workspace_factories import add_verdicts, principal, seeded_db

LISTS = {
    "run-evaluation-picker": lambda engine: [r for r, _ in models_admin.run_choices(engine)],
    "recent-runs": lambda engine: [r.id for r in runs.recent_runs(engine)],
    "results-pages": lambda engine: list(readmodel_runs.scored_runs(engine)["id"]),
    "protocol-pages": lambda engine: list(protocol_runs(engine, "enterprise_rag")["run_id"]),
    "gold-sample-picker": lambda engine: [r.id for r in gold.sample_runs(engine)],
    "judge-alignment-picker": lambda engine: list(alignment.run_choices(engine)),
}


@pytest.fixture
def seeded(tmp_path):
    s = seeded_db(tmp_path)
    add_verdicts(s.engine, s, "heuristic", {(rid, "rejection"): 1 for rid in s.responses.values()})
    rebuild_summaries(s.engine, s.run_id, "heuristic")
    return s


def count(engine, model, **where) -> int:
    with Session(engine) as session:
        query = select(func.count()).select_from(model)
        for name, value in where.items():
            query = query.where(getattr(model, name) == value)
        return int(session.exec(query).one())


@pytest.mark.parametrize("listing", list(LISTS), ids=list(LISTS))
def test_a_hidden_run_leaves_every_list_and_stays_in_the_database(seeded, listing):
    assert seeded.run_id in LISTS[listing](seeded.engine)
    run_services.hide_run(seeded.engine, principal("admin"), seeded.run_id, True, None)
    assert seeded.run_id not in LISTS[listing](seeded.engine)
    assert count(seeded.engine, Response, run_id=seeded.run_id) == 8
    assert [r.id for r in run_archive.hidden_runs(seeded.engine)] == [seeded.run_id]
    shown = run_archive.run_hidden_at(seeded.engine, seeded.run_id)
    run_services.hide_run(seeded.engine, principal("admin"), seeded.run_id, False, shown)
    assert seeded.run_id in LISTS[listing](seeded.engine)


@pytest.mark.parametrize(("first", "then", "message"), [
    pytest.param(True, True, "was hidden by admin since you read it", id="hidden-twice"),
    pytest.param(True, False, None, id="shown-from-what-was-read"),
])
def test_a_hide_or_show_from_a_stale_read_is_refused(seeded, first, then, message):
    engine, admin = seeded.engine, principal("admin")
    run_services.hide_run(engine, admin, seeded.run_id, first, None)
    if message:
        with pytest.raises(run_archive.RunChanged, match=message):
            run_services.hide_run(engine, admin, seeded.run_id, then, None)  # the page read it as shown
    else:
        with pytest.raises(run_archive.RunChanged, match="since you read it"):
            run_services.hide_run(engine, admin, seeded.run_id, then, None)
        read = run_archive.run_hidden_at(engine, seeded.run_id)
        assert run_services.hide_run(engine, admin, seeded.run_id, then, read).hidden_at is None


def test_a_running_run_cannot_be_hidden(seeded):
    with Session(seeded.engine) as session:
        run = session.get(Run, seeded.run_id)
        run.status = "running"
        session.add(run)
        session.commit()
    with pytest.raises(ValueError, match="is running; cancel it"):
        run_services.hide_run(seeded.engine, principal("admin"), seeded.run_id, True, None)


@pytest.mark.parametrize(("hide", "stale", "labelled", "refusal"), [
    pytest.param(True, False, False, None, id="hidden-and-confirmed"),
    pytest.param(False, False, False, "is shown; hide it first", id="shown-run"),
    pytest.param(True, True, False, "changed since you confirmed it: now run", id="more-verdicts-since-confirmed"),
    pytest.param(True, False, True, "human label", id="human-labels-are-never-deleted"),
])
def test_deleting_needs_a_hidden_run_and_a_confirmation_naming_what_goes(seeded, hide, stale, labelled, refusal):
    engine, admin, run_id = seeded.engine, principal("admin"), seeded.run_id
    if hide:
        run_services.hide_run(engine, admin, run_id, True, None)
    if labelled:
        with Session(engine) as session:
            session.add(Annotation(kind="gold_label", target_type="response", target_id=seeded.responses[
                ("model-a", "E-gap")], author="alice", payload={}))
            session.commit()
    plan = run_archive.deletion_plan(engine, run_id)
    assert plan.summary() == "run 1 (seed run): 8 responses, 8 verdicts, 0 label assignments".replace(
        "run 1", f"run {run_id}")
    if stale:
        add_verdicts(engine, seeded, "other", {(seeded.responses[("model-a", "E-gap")], "rejection"): 0})
    if refusal:
        with pytest.raises(ValueError, match=refusal):
            run_services.delete_run(engine, admin, run_id, plan)
        assert count(engine, Response, run_id=run_id) == 8
        return
    assert run_services.delete_run(engine, admin, run_id, plan) == plan
    for model in (Response, Verdict, ResponseMetric, Run):
        assert count(engine, model, **({"id": run_id} if model is Run else {"run_id": run_id})) == 0
    assert count(engine, Assignment) == 0


@pytest.mark.parametrize("role_account", ["alice", "ana", "vic"])
def test_only_an_admin_may_hide_or_delete(seeded, role_account):
    from core.review.auth import PermissionDenied

    with pytest.raises(PermissionDenied, match="may not hide or show an evaluation run"):
        run_services.hide_run(seeded.engine, principal(role_account), seeded.run_id, True, None)
    with pytest.raises(PermissionDenied, match="may not delete an evaluation run"):
        run_services.delete_run(seeded.engine, principal(role_account), seeded.run_id,
                                run_archive.deletion_plan(seeded.engine, seeded.run_id))


@pytest.mark.parametrize("draws", [pytest.param(1, id="one-draw-no-design-rows"),
                                   pytest.param(2, id="second-draw-records-design-rows")])
def test_deleting_a_run_removes_its_draws_design_rows_too(seeded, draws):
    engine, admin, run_id = seeded.engine, principal("admin"), seeded.run_id
    for seed in range(draws):
        gold.draw_gold_sample(engine, admin, run_id, n=2, experts=["alice", "bob"], seed=seed)
    assert (count(engine, Assignment, kind=GOLD_DESIGN) > 0) is (draws > 1)
    run_services.hide_run(engine, admin, run_id, True, None)
    run_services.delete_run(engine, admin, run_id, run_archive.deletion_plan(engine, run_id))
    assert count(engine, Assignment) == 0
