"""The form is the run: protocol and set choices with their counts, 'all domains' frozen when the form is shown, a
launch refused when the scope no longer holds what the form showed, and a budget below the estimate confirmed by its
stop point. Both backends."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from sqlmodel import Session, func, select

from core.generation import jobs, models_admin, run_estimates, run_scope, runs
from core.review.auth import Principal
from core.services import runs as run_services
from core.store.models import BenchmarkSet, BenchmarkSetMember, Instance, Response, Run
from tests.factories import make_instance

ADMIN = Principal("admin", "admin", (), datetime.now(UTC), datetime.now(UTC))


@pytest.fixture
def launches(mixed, monkeypatch):
    """The mixed benchmark, with the background job not started (these tests are about what the run covers)."""
    from core.review.auth import create_user

    create_user(mixed, "admin", "admin", password="admin-pass-1")
    monkeypatch.setattr(jobs, "launch_in_background", lambda engine, run_id: 0)
    monkeypatch.setattr(models_admin, "reap_when_done", lambda pid: None)
    return mixed


def add_set(engine, name: str, uids: list[str]) -> int:
    with Session(engine) as session:
        chosen = session.exec(select(Instance).where(Instance.uid.in_(uids))).all()  # type: ignore[attr-defined]
        bench = BenchmarkSet(name=name, origin="import")
        session.add(bench)
        session.flush()
        session.add_all(BenchmarkSetMember(set_id=bench.id, instance_id=i.id) for i in chosen)
        session.commit()
        return bench.id


def add_later(engine, uid: str, domain: str) -> None:
    """An instance imported after the form was shown."""
    with Session(engine) as session:
        make_instance(session, uid=uid, domain=domain, query="Who inspects the substations?", support="The grid team.")
        session.commit()


@pytest.mark.parametrize(("protocols", "in_set", "by_protocol", "by_domain"), [
    pytest.param([], False, {"enterprise_rag": 2, "reference_qa": 5}, {"Admissions": 5, "Energy": 1, "Medical": 1},
                 id="everything"),
    pytest.param(["reference_qa"], False, {"enterprise_rag": 2, "reference_qa": 5}, {"Admissions": 5},
                 id="one-protocol"),
    pytest.param([], True, {"enterprise_rag": 1, "reference_qa": 2}, {"Admissions": 2, "Energy": 1}, id="a-set"),
])
def test_scope_choices_count_what_the_protocol_and_set_hold(launches, protocols, in_set, by_protocol, by_domain):
    set_id = add_set(launches, "slice", ["qa-0", "qa-1", "inst-000"]) if in_set else None
    choices = run_scope.scope_choices(launches, protocols, set_id)
    assert (choices.protocols, choices.domains) == (by_protocol, by_domain)
    assert choices.all_domains_label() == f"all {len(by_domain)} domains ({sum(by_domain.values())} instances)"


@pytest.mark.parametrize(("protocols", "in_set", "later_domain", "items"), [
    pytest.param([], False, "Water", 14, id="all-domains-frozen-before-a-new-domain"),
    pytest.param(["enterprise_rag"], False, "Water", 4, id="one-protocol-frozen"),
    pytest.param([], True, "Energy", 6, id="a-set-ignores-later-imports"),
])
def test_a_run_launched_from_the_form_has_exactly_the_scope_it_showed(launches, protocols, in_set, later_domain, items):
    set_id = add_set(launches, "slice", ["qa-0", "qa-1", "inst-000"]) if in_set else None
    choices = run_scope.scope_choices(launches, protocols, set_id)
    options = run_scope.frozen_options(runs.RunOptions(models=["baseline:extractive", "baseline:always-refuse"],
                                                       protocols=protocols, set_id=set_id), choices)
    shown = run_estimates.estimate_options(launches, options).items
    add_later(launches, "late-1", later_domain)
    run_id, _ = run_services.launch_from_form(launches, ADMIN, options, shown)
    with Session(launches) as session:
        count = session.exec(select(func.count()).select_from(Response).where(Response.run_id == run_id)).one()
        config = session.get(Run, run_id).config
    assert (shown, count) == (items, items)
    assert config["domains"] == list(choices.domains) and config["protocols"] == protocols
    assert config["set_id"] == set_id


@pytest.mark.parametrize(("change", "message"), [
    pytest.param("new-instance-in-a-shown-domain", "the form showed 4 items but this scope now holds 6",
                 id="scope-grew"),
    pytest.param("domains-not-named", "must name its domains", id="all-not-frozen"),
])
def test_a_launch_whose_scope_differs_from_the_form_is_refused(launches, change, message):
    options = runs.RunOptions(models=["baseline:extractive", "baseline:always-refuse"], protocols=["enterprise_rag"])
    choices = run_scope.scope_choices(launches, options.protocols, None)
    if change == "domains-not-named":
        shown = run_estimates.estimate_options(launches, options).items
    else:
        options = run_scope.frozen_options(options, choices)
        shown = run_estimates.estimate_options(launches, options).items
        add_later(launches, "late-1", "Energy")
    with pytest.raises(run_services.ScopeChanged, match=message):
        run_services.launch_from_form(launches, ADMIN, options, shown)
    with Session(launches) as session:
        assert session.exec(select(func.count()).select_from(Run)).one() == 0


@pytest.mark.parametrize(("budget", "confirmed", "launched"), [
    pytest.param(None, False, True, id="no-budget"),
    pytest.param(10.0, False, True, id="budget-covers-the-estimate"),
    pytest.param(0.001, False, False, id="below-unconfirmed-refused"),
    pytest.param(0.001, True, True, id="below-confirmed"),
])
def test_a_budget_below_the_estimate_needs_a_confirmation_naming_the_stop_point(launches, budget, confirmed, launched):
    options = runs.RunOptions(models=["gpt-x"], protocols=["reference_qa"], budget_usd=budget)
    options = run_scope.frozen_options(options, run_scope.scope_choices(launches, options.protocols, None))
    estimate = run_estimates.estimate_options(launches, options)
    if launched:
        run_id, _ = run_services.launch_from_form(launches, ADMIN, options, estimate.items, budget_confirmed=confirmed)
        assert run_id > 0
    else:
        stop = f"stops after about {run_scope.affordable_items(estimate, budget)} of {estimate.items} items"
        with pytest.raises(run_services.ScopeChanged, match=stop):
            run_services.launch_from_form(launches, ADMIN, options, estimate.items, budget_confirmed=confirmed)


@pytest.mark.parametrize(("items", "calls", "cost", "budget", "affordable"), [
    pytest.param(10, 10, 1.0, None, None, id="no-budget"),
    pytest.param(10, 10, 1.0, 1.0, None, id="budget-equals-estimate"),
    pytest.param(10, 10, 1.0, 0.35, 3, id="a-third-of-the-calls"),
    pytest.param(10, 4, 1.0, 0.5, 8, id="cached-items-are-free"),
    pytest.param(10, 0, 0.0, 0.5, None, id="nothing-paid"),
])
def test_affordable_items(items, calls, cost, budget, affordable):
    estimate = run_estimates.Estimate(items=items, calls=calls, max_cost_usd=cost)
    assert run_scope.affordable_items(estimate, budget) == affordable


@pytest.mark.parametrize(("protocols", "expected"), [
    pytest.param(["enterprise_rag"], [""], id="default-only"),
    pytest.param(["reference_qa"], ["", "closed_book"], id="declared-conditions"),
])
def test_the_conditions_offered_are_those_the_chosen_protocols_declare(protocols, expected):
    assert run_scope.protocol_conditions(protocols)[:len(expected)] == expected
    assert all(c in ["", *run_scope.protocol_conditions(protocols)] for c in expected)


def test_frozen_options_keep_an_explicit_domain_choice():
    choices = run_scope.ScopeChoices({"x": 3}, {"A": 1, "B": 2})
    options = runs.RunOptions(models=["m"], domains=["B"])
    assert run_scope.frozen_options(options, choices) == replace(options, domains=["B"])
    assert run_scope.frozen_options(replace(options, domains=[]), choices).domains == ["A", "B"]
