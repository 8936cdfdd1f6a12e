"""Authorised run and model writes: register models and baselines, preflight, launch, cancel, retry, hide and delete
runs."""

from __future__ import annotations

import asyncio
from datetime import datetime

from sqlalchemy.engine import Engine
from sqlmodel import Session

from core.generation import jobs, models_admin, registered_models, run_archive, run_estimates, run_scope, runs
from core.generation.llm import config_from_model
from core.generation.providers.base import ModelConfig
from core.review.auth import Principal, authorize
from core.store.models import Model, Run


def register_baselines(engine: Engine, principal: Principal | None) -> list[str]:
    """An admin registers the offline baselines (re-checked: register_models); their names."""
    authorize(engine, principal, "register_models")
    return [model.name for model in registered_models.ensure_baselines(engine)]


def save_model(engine: Engine, principal: Principal | None, config: ModelConfig) -> Model:
    """An admin registers a model or edits one (re-checked: register_models); settings never hold secrets."""
    authorize(engine, principal, "register_models")
    models_admin.check_model(config)
    return registered_models.register_model(engine, config.model_copy(update={"is_baseline": config.provider == "baseline"}))


def preflight(engine: Engine, principal: Principal | None, names: list[str]) -> list[models_admin.Preflight]:
    """An admin checks that each named model answers before a launch (re-checked: launch_run; costs one tiny call
    per non-baseline model, not recorded in the run or the cache)."""
    authorize(engine, principal, "launch_run")
    with Session(engine) as session:
        configs = [config_from_model(m) for m in registered_models.resolve_models(session, list(dict.fromkeys(names)))]
    return asyncio.run(models_admin.preflight_configs(configs))


def launch_run(engine: Engine, principal: Principal | None, options: runs.RunOptions) -> tuple[int, int]:
    """An admin creates a run from `options` and starts it (generation, then scoring) in the background.

    Re-checked server-side (launch_run); returns (run id, process id).
    """
    authorize(engine, principal, "launch_run")
    run_id = runs.create_run(engine, options)
    return run_id, jobs.launch_in_background(engine, run_id)


def launch(engine: Engine, principal: Principal | None, options: runs.RunOptions) -> tuple[int, int]:
    """launch_run(), with the process reaped when it ends (the app's launch). Returns (run id, process id)."""
    run_id, pid = launch_run(engine, principal, options)
    models_admin.reap_when_done(pid)
    return run_id, pid


class ScopeChanged(ValueError):
    """The form's scope no longer holds what it showed, or a budget below the estimate was not confirmed."""


def launch_from_form(engine: Engine, principal: Principal | None, options: runs.RunOptions, shown_items: int,
                     budget_confirmed: bool = False) -> tuple[int, int]:
    """launch(), refused (ScopeChanged) unless the options name their domains, still select exactly the `shown_items`
    the form showed, and a budget below the estimate was confirmed by its stop point (re-checked: launch_run)."""
    authorize(engine, principal, "launch_run")
    if not options.domains:
        raise ScopeChanged("the run must name its domains (the form freezes 'all domains' into their names)")
    estimate = run_estimates.estimate_options(engine, options)
    if estimate.items != shown_items:
        raise ScopeChanged(f"the form showed {shown_items} items but this scope now holds {estimate.items} (the "
                           "benchmark changed); check the form again before launching")
    stop = run_scope.stop_point(estimate, options.budget_usd)
    if stop and not budget_confirmed:
        raise ScopeChanged(stop + " Confirm the budget to launch anyway.")
    return launch(engine, principal, options)


def stop_run(engine: Engine, principal: Principal | None, run_id: int) -> str:
    """An admin cancels a run (re-checked: cancel_run); the run's status afterwards."""
    authorize(engine, principal, "cancel_run")
    return jobs.cancel_run(engine, run_id)


def retry_failed_items(engine: Engine, principal: Principal | None, run_id: int) -> tuple[int, int | None]:
    """An admin puts a run's failed items back to pending and resumes it in the background, scoring included
    (re-checked: launch_run). Returns (items retried, process id or None when nothing failed)."""
    authorize(engine, principal, "launch_run")
    if models_admin.job_alive(engine, run_id):
        raise ValueError(f"run {run_id} is still running; wait for it to finish or cancel it first")
    count = runs.retry_failed(engine, run_id)
    if not count:
        return 0, None
    pid = jobs.launch_in_background(engine, run_id)
    models_admin.reap_when_done(pid)
    return count, pid


def hide_run(engine: Engine, principal: Principal | None, run_id: int, hidden: bool,
             read_hidden_at: datetime | None) -> Run:
    """An admin hides (archives) a run or shows it again (re-checked: hide_run), refused if another admin changed it
    since the page read `read_hidden_at`; nothing is deleted."""
    admin = authorize(engine, principal, "hide_run")
    return run_archive.set_hidden(engine, run_id, hidden, read_hidden_at, admin.username)


def delete_run(engine: Engine, principal: Principal | None, run_id: int,
               confirmed: run_archive.DeletionPlan) -> run_archive.DeletionPlan:
    """An admin deletes a hidden run after confirming exactly what goes (re-checked: delete_run)."""
    authorize(engine, principal, "delete_run")
    return run_archive.delete_run(engine, run_id, confirmed)
