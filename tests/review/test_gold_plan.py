"""The gold budget planner on a stored run (both backends): the plan reads the judge-versus-gold disagreement of two
models, and one call puts its items into the experts' queue with their inclusion probabilities, re-checking the
role and the gold-label version it was read at."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from sqlmodel import Session, select

from core.analysis import readmodel
from core.review.auth import PermissionDenied
from core.review.gold import draw_gold_sample, gold_queue, record_gold_label
from core.review.gold_plan import enqueue_plan, plan_gold_budget, plan_summary, plan_table, planner_pair, ranked_models
from core.store.labels import GOLD_DESIGN, gold_probabilities
from core.store.models import Assignment, Domain, Model, Response
from tests.workspace_factories import Seeded, _instance, add_verdicts, principal, seeded_db

EXTRA = 30


def _labels(c1: int, c2: int) -> dict:
    return {"constraints": {"c1": bool(c1), "c2": bool(c2)}}


@pytest.fixture
def planned(tmp_path):
    return planned_run(tmp_path)


def planned_run(tmp_path, modes: tuple[str, ...] = ("noisy",) * EXTRA) -> tuple[Seeded, dict[tuple[str, str], int]]:
    """The seeded run plus one Energy instance per mode (E-extraNN); under 'llm:j1' model-a passes c2 everywhere,
    model-b nowhere."""
    s = seeded_db(tmp_path)
    responses = dict(s.responses)
    with Session(s.engine) as session:
        energy = session.exec(select(Domain).where(Domain.name == "Energy")).one()
        models = {m.name: m.id for m in session.exec(select(Model))}
        for k, mode in enumerate(modes):
            iid = _instance(session, f"E-extra{k:02d}", energy.id, mode, 10 + k)
            for name, mid in models.items():
                r = Response(run_id=s.run_id, model_id=mid, instance_id=iid, status="done", text="1. Peak 400 MW")
                session.add(r)
                session.flush()
                responses[(name, f"E-extra{k:02d}")] = r.id
        session.commit()
    add_verdicts(s.engine, s, "llm:j1", {(rid, c): int(c == "c1" or name == "model-a")
                                         for (name, _), rid in responses.items() for c in ("c1", "c2")})
    return s, responses


def _plan(s):
    return plan_gold_budget(s.engine, [s.run_id], "llm:j1", "strict_ias", "model-a", "model-b", seed=3)


def _assignments(engine, kind: str = "gold_label") -> list[Assignment]:
    with Session(engine) as session:
        return list(session.exec(select(Assignment).where(Assignment.kind == kind).order_by(Assignment.id)).all())


def test_the_first_two_are_the_judges_leaders(planned) -> None:
    s, _ = planned
    assert ranked_models(readmodel.load_scores(s.engine, [s.run_id], "llm:j1"), "strict_ias")[:2] == ["model-a", "model-b"]


def pick_a_over_judge_b(s, responses, safety: bool = True) -> None:
    """On top of planned_run: model-b recognises the conflict and model-a does not (the judge's ranking on conflict
    recognition puts model-b first), both reject on the gap instance (the default rejection floor) when `safety`."""
    verdicts = {(responses[(m, "E-conflict")], "conflict_recognition"): int(m == "model-b") for m in ("model-a", "model-b")}
    if safety:
        verdicts |= {(responses[(m, "E-gap")], "rejection"): 1 for m in ("model-a", "model-b")}
    add_verdicts(s.engine, s, "llm:j1", verdicts)


@pytest.mark.parametrize(("metric", "safety", "order", "why"), [
    pytest.param("conflict_recognition", True, ["model-a", "model-b"], "model-a is the picker's recommended pick",
                 id="picker-pair-over-the-judges-order"),
    pytest.param("strict_ias", True, ["model-a", "model-b"], "model-b its runner-up", id="picker-pair-where-they-agree"),
    pytest.param("conflict_recognition", False, ["model-a", "model-b"], "No candidate clears the default floors",
                 id="no-pick-under-the-floors-first-two-by-score"),
])
def test_the_planner_defaults_to_the_pickers_pick_and_runner_up(planned, metric, safety, order, why) -> None:
    s, responses = planned
    pick_a_over_judge_b(s, responses, safety)
    scores = readmodel.load_scores(s.engine, [s.run_id], "llm:j1")
    pair = planner_pair(scores, readmodel.model_catalog(s.engine), metric)
    assert pair.models[:2] == order and why in pair.why
    if metric == "conflict_recognition":  # the judge's own ranking would have put them the other way round
        assert ranked_models(scores, metric)[:2] == order[::-1]


def test_the_plan_states_a_number_and_draws_unlabelled_items(planned) -> None:
    s, _ = planned
    plan = _plan(s)
    assert (plan.shared, plan.labeled) == (EXTRA + 4, 0)  # Strict IAS applies to every mode: the 4 seeded instances too
    assert plan.plan is not None and plan.plan.more is not None and plan.plan.more > 0
    assert plan.items and all(0 < i.probability <= 1 for i in plan.items)
    assert "first uniform batch" in plan_summary(plan) and len(plan_table(plan)) == len(plan.items)


def test_enqueue_assigns_both_responses_to_two_experts_with_their_probability(planned) -> None:
    s, _ = planned
    plan = _plan(s)
    report = enqueue_plan(s.engine, principal("admin"), plan)
    rows = _assignments(s.engine)
    covered = [i for i in plan.items if i.domain == "Energy"]
    expected = {rid: i.probability for i in covered for rid in (i.response_a, i.response_b)}
    assert report.sampled == len(expected) and report.assignments == 2 * len(expected) == len(rows)
    assert {a.target_id for a in rows} == set(expected)
    assert all(a.probability == pytest.approx(expected[a.target_id]) for a in rows)
    assert sorted({a.assignee for a in rows}) == ["alice", "bob"] and all(a.batch.startswith("plan-") for a in rows)
    assert gold_probabilities(s.engine, [s.run_id]) == pytest.approx(expected)
    assert set(gold_queue(s.engine, principal("alice")).instance_ids) == set(expected)
    assert _assignments(s.engine, GOLD_DESIGN) == []  # nothing was sampled before


def test_responses_sampled_before_count_at_probability_one_after_the_plan(planned) -> None:
    s, responses = planned
    first = draw_gold_sample(s.engine, principal("admin"), s.run_id, n=6, experts=["alice", "bob"], seed=2)
    before = {a.target_id: a.probability for a in _assignments(s.engine)}
    assert first.sampled == len(before) and any(p < 1 for r, p in before.items() if r in dict(_plan(s).population))
    rid = next(r for r in before if r in {v for (_, uid), v in responses.items() if uid[2:] not in ("gap", "conflict")})
    record_gold_label(s.engine, principal("alice"), rid, _labels(1, 1), "t0")
    plan = _plan(s)
    enqueue_plan(s.engine, principal("admin"), plan)
    recorded = gold_probabilities(s.engine, [s.run_id])
    in_plan = {r for r, domain in plan.population if domain == "Energy"}
    assert {r for r in before if r in in_plan} == {a.target_id for a in _assignments(s.engine, GOLD_DESIGN)}
    assert all(recorded[r] == 1.0 for r in before if r in in_plan)
    drawn = {r: i.probability for i in plan.items if i.domain == "Energy" for r in (i.response_a, i.response_b)}
    assert all(recorded[r] == pytest.approx(p) for r, p in drawn.items() if r not in before)
    assert set(gold_queue(s.engine, principal("alice")).instance_ids) >= {r for r in drawn if r not in before}


@pytest.mark.parametrize("who", [pytest.param("alice", id="expert"), pytest.param("ana", id="analyst"),
                                 pytest.param("vic", id="viewer")])
def test_enqueue_rechecks_the_role_server_side(planned, who) -> None:
    s, _ = planned
    with pytest.raises(PermissionDenied):
        enqueue_plan(s.engine, principal(who), _plan(s))
    assert _assignments(s.engine) == []


def test_a_plan_read_before_new_labels_is_refused(planned) -> None:
    s, _ = planned
    plan = _plan(s)
    enqueue_plan(s.engine, principal("admin"), plan)
    rid = next(i.response_a for i in plan.items if i.instance_uid.startswith("E-extra"))
    record_gold_label(s.engine, principal("alice"), rid, _labels(1, 1), "t1")
    before = len(_assignments(s.engine))
    with pytest.raises(ValueError, match="changed since this plan"):
        enqueue_plan(s.engine, principal("admin"), plan)
    assert len(_assignments(s.engine)) == before


def test_responses_already_queued_are_not_queued_twice_and_uncovered_domains_are_reported(planned) -> None:
    s, responses = planned
    plan = _plan(s)
    first = enqueue_plan(s.engine, principal("admin"), plan)
    medical = replace(plan.items[0], instance_uid="M-noisy", domain="Medical",
                      response_a=responses[("model-a", "M-noisy")], response_b=responses[("model-b", "M-noisy")])
    again = replace(plan, items=[plan.items[0], medical], version=readmodel.gold_version(s.engine))
    report = enqueue_plan(s.engine, principal("admin"), again)
    assert (report.sampled, report.assignments, report.uncovered) == (0, 0, {"Medical": 2})
    assert len(_assignments(s.engine)) == first.assignments
    queued = {a.target_id for a in _assignments(s.engine)}
    assert {a.target_id for a in _assignments(s.engine, GOLD_DESIGN)} == queued  # sampled by the first plan


def _newer_medical_run(s) -> int:
    """A run newer than the seeded one holding only a Medical response (one expert covers Medical: not labelable)."""
    from core.store.models import Run

    with Session(s.engine) as session:
        run = Run(name="medical only", status="done")
        session.add(run)
        session.flush()
        model = session.exec(select(Model)).first()
        session.add(Response(run_id=run.id, model_id=model.id, instance_id=s.instances["M-noisy"], status="done", text="x"))
        session.commit()
        return int(run.id)


def test_draw_a_sample_and_the_planner_open_on_a_run_two_experts_can_label(tmp_path) -> None:
    from core.review.gold import labelable_run, sample_runs

    s = seeded_db(tmp_path)
    newer = _newer_medical_run(s)
    runs = sample_runs(s.engine)
    assert runs[0].id == newer and runs[labelable_run(s.engine, runs)].id == s.run_id


def test_judge_alignment_opens_on_the_newest_run_a_judge_scored(tmp_path) -> None:
    from core.analysis.alignment import default_run

    s, _ = planned_run(tmp_path)
    newer = _newer_medical_run(s)
    assert default_run(s.engine, [newer, s.run_id]) == [s.run_id] and default_run(s.engine, []) == []


@pytest.mark.parametrize(("values", "expected"), [
    pytest.param({"strict_ias": [None, None], "rejection": [1.0, None]}, "rejection", id="strict-undecided"),
    pytest.param({"strict_ias": [0.0, None], "rejection": [1.0, None]}, "strict_ias", id="strict-decided"),
    pytest.param({"strict_ias": [None, None], "rejection": [None, None]}, "strict_ias", id="nothing-decided"),
])
def test_the_planner_metric_defaults_to_one_the_judge_decided(values, expected) -> None:
    import pandas as pd

    from core.review.gold_plan import decided_metric

    frame = pd.DataFrame({k: pd.array(v, dtype="Float64") for k, v in values.items()})
    assert decided_metric(frame, ["strict_ias", "loose_ias", "rejection"]) == expected


@pytest.mark.parametrize(
    ("experts", "expected", "queries"),
    [
        pytest.param({}, "newer", 0, id="no-expert-newest-done-no-query"),
        pytest.param({"solo": set()}, "newer", 0, id="one-expert-cannot-pair-no-query"),
        pytest.param({"a": set(), "b": set()}, "newer", 0, id="two-cover-every-domain-no-query"),
        pytest.param({"a": {"Medical"}, "b": set()}, "newer", 1, id="medical-pair-newer-run"),
        pytest.param({"a": {"Energy"}, "b": {"Energy"}}, "seeded", 1, id="energy-pair-seeded-run"),
        pytest.param({"a": {"Energy"}, "b": {"Medical"}}, "newer", 1, id="no-pair-anywhere-newest-done"),
    ],
)
def test_labelable_run_by_expert_pool(tmp_path, monkeypatch, experts, expected, queries) -> None:
    from core.review import gold

    s = seeded_db(tmp_path)
    newer = _newer_medical_run(s)
    runs = gold.sample_runs(s.engine)
    opened = []
    real_session = gold.Session
    monkeypatch.setattr(gold, "Session", lambda engine: opened.append(1) or real_session(engine))
    chosen = runs[gold.labelable_run(s.engine, runs, experts)].id
    assert chosen == {"newer": newer, "seeded": s.run_id}[expected] and len(opened) == queries


def _extra_run(s, name: str, statuses: tuple[str, ...], hidden: bool = False) -> int:
    """A run with one response per status (on the seeded instances), hidden or not."""
    from core.store.models import Run

    with Session(s.engine) as session:
        run = Run(name=name, status="done", hidden_at=datetime.now(UTC) if hidden else None)
        session.add(run)
        session.flush()
        model = session.exec(select(Model)).first()
        for status, iid in zip(statuses, s.instances.values(), strict=False):
            session.add(Response(run_id=run.id, model_id=model.id, instance_id=iid, status=status, text="x"))
        session.commit()
        return int(run.id)


@pytest.mark.parametrize(
    ("statuses", "hidden", "done"),
    [
        pytest.param(("done", "failed", "pending"), False, 1, id="only-done-counted"),
        pytest.param(("failed",), False, 0, id="nothing-done"),
        pytest.param((), False, 0, id="no-responses"),
        pytest.param(("done", "done"), True, None, id="hidden-run-left-out"),
    ],
)
def test_sample_runs_count_done_responses(tmp_path, statuses, hidden, done) -> None:
    from core.review.gold import sample_runs

    s = seeded_db(tmp_path)
    extra = _extra_run(s, "extra", statuses, hidden)
    runs = {r.id: r for r in sample_runs(s.engine)}
    assert runs[s.run_id].done == 8 and list(runs)[0] == (s.run_id if hidden else extra)
    assert (runs[extra].done if extra in runs else None) == done
