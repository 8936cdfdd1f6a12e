"""Run evaluation: register and edit models, pick models, instances and judges, see the estimate, check every model
with a preflight call, launch generation + scoring in the background, watch the run just launched, retry its failed
items and cancel."""

import streamlit as st

from core.generation import models_admin, run_estimates, run_scope, runs
from core.ingest.sets import benchmark_sets
from core.scoring.judges.names import HEURISTIC, judge_label
from core.scoring.judges.registry import judge_ids
from core.services import runs as run_services
from core.store.schema import MODES
from ui.auth import guarded_write, require_page
from ui.confirm import confirm, show_confirmations
from ui.result_links import redraw_page
from ui.run_admin import (
    hidden_runs_panel,
    hide_button,
    model_form,
    models_table,
    preflight_table,
    scope_text,
    watch_panel,
)
from ui.session import engine

principal = require_page(__file__)
st.title("Run evaluation")
show_confirmations()

configs = models_admin.model_configs(engine())  # read once: every write below reruns the page
models = sorted(c.name for c in configs)
open_models = st.session_state.setdefault(  # open until the first real model exists, then as the user left it
    "run_models_open", not any(not n.startswith("baseline:") for n in models))
models_panel = st.expander("Models", expanded=open_models, key="run_models_panel", on_change="rerun")
if models_panel.open:  # drawn only when open (a closed expander's body would run on every rerun)
    with models_panel:
        models_table(configs)
        if (not any(name.startswith("baseline:") for name in models)
                and st.button("Register the baselines (always-refuse, extractive)", key="run_add_baselines")
                and guarded_write(lambda: run_services.register_baselines(engine(), principal))):
            st.rerun()
        model_form(principal, configs)

st.subheader("New run")
sets = {info.id: info.label for info in benchmark_sets(engine())}
scope_cols = st.columns(2)
set_id = scope_cols[1].selectbox("Benchmark set", [None, *sets], key="run_set",
                                 format_func=lambda i: "latest versions of every instance" if i is None else sets[i])
every = run_scope.scope_choices(engine(), [], set_id)
protocols = scope_cols[0].multiselect(
    "Protocols", list(every.protocols), key="run_protocols",
    format_func=lambda p: f"{p} ({every.protocols[p]} instances)",
    placeholder=f"all {len(every.protocols)} protocols ({sum(every.protocols.values())} instances)")
choices = run_scope.scope_choices(engine(), protocols, set_id) if protocols else every  # every: the same call
left, right = st.columns(2)
run_name = left.text_input("Run name", key="run_name", placeholder="e.g. gpt-4.1 vs qwen3, noisy only")
chosen_models = left.multiselect("Models", models, key="run_models", help="Registered models, baselines included.")
domains = left.multiselect("Domains", list(choices.domains), key="run_domains",
                           placeholder=choices.all_domains_label(),
                           help="Empty: the domains listed here now, named in the run (never ones imported later).")
modes = left.multiselect("Modes", MODES, key="run_modes", placeholder="all modes")
conditions = left.multiselect("Conditions", run_scope.protocol_conditions(protocols or list(every.protocols)),
                              key="run_conditions", format_func=lambda c: c or "default",
                              placeholder="each protocol's default",
                              help="One item per instance and condition its protocol declares and that applies.")
judges = left.multiselect("Judges (score after generation, in this order)",
                          judge_ids(c.name for c in configs if not c.is_baseline),
                          default=[HEURISTIC], format_func=judge_label, key="run_judges",
                          help="The heuristic judge is offline and free; llm:<model> judges call that model.")
limit = right.number_input("Instance limit (0 = all)", min_value=0, value=0, step=10, key="run_limit")
concurrency = right.number_input("Concurrency per provider", min_value=1, max_value=64, value=8, key="run_concurrency")
budget = right.number_input("Budget in USD (0 = none)", min_value=0.0, value=0.0, step=1.0, key="run_budget")

options = run_scope.frozen_options(
    runs.RunOptions(models=chosen_models, domains=domains, modes=modes, limit=int(limit) or None,
                    concurrency=int(concurrency), budget_usd=float(budget) or None, judge=",".join(judges) or None,
                    name=run_name.strip(), conditions=conditions or [""], protocols=protocols, set_id=set_id),
    choices)
to_check = list(dict.fromkeys([*chosen_models, *models_admin.judge_models(judges)]))

if chosen_models:
    estimate = guarded_write(lambda: run_estimates.estimate_options(engine(), options)) or run_estimates.Estimate()
    st.caption(f"Scope: {scope_text(options, choices, estimate, sets.get(set_id, 'latest versions'))}",
               help=estimate.shape())
    cols = st.columns(4)
    cols[0].metric("Items", estimate.items)
    cols[1].metric("Paid calls", estimate.calls)
    cols[2].metric("Cached calls", estimate.cached)
    cols[3].metric("Cost at most", f"${estimate.max_cost_usd:.4f}")
    st.caption("Generation only: output tokens are counted at each model's maximum, so the cost is an upper bound."
               + (" LLM judge calls are paid on top and not in this estimate." if any(j != HEURISTIC for j in judges)
                  else ""))
    if estimate.over_window:
        st.warning(estimate.context_summary(), icon=":material/warning:")
    if not judges:
        st.warning("No judge chosen: the run will be generated but not scored.", icon=":material/warning:")
    unset = {c.name: models_admin.missing_variables(c) for c in configs
             if c.name in to_check and c.provider != "baseline"}
    for name, missing in unset.items():
        if missing:
            st.error(f"{name} cannot be called: {', '.join(missing)} not set (environment or .streamlit/secrets.toml).",
                     icon=":material/key_off:")
    blocked = any(unset.values())
    stop = run_scope.stop_point(estimate, options.budget_usd)
    budget_confirmed = bool(stop) and st.checkbox(f"{stop} Launch anyway.", key="run_budget_confirmed")
    if stop and not budget_confirmed:
        st.warning(stop + " Confirm it above to launch.", icon=":material/savings:")
    check, launch = st.columns([1, 3])
    if check.button("Check models", key="run_preflight", disabled=blocked,
                    help="One tiny call per model (and LLM judge) to see that it answers."):
        st.session_state["run_preflight_results"] = guarded_write(
            lambda: run_services.preflight(engine(), principal, to_check))
    if launch.button("Launch run", type="primary", key="run_launch",
                     disabled=estimate.items == 0 or blocked or (bool(stop) and not budget_confirmed)):
        checked = guarded_write(lambda: run_services.preflight(engine(), principal, to_check))
        st.session_state["run_preflight_results"] = checked
        if checked and all(result.ok for result in checked):
            launched = guarded_write(lambda: run_services.launch_from_form(engine(), principal, options, estimate.items,
                                                                           budget_confirmed))
            if launched:
                run_id, pid = launched
                st.session_state["run_selected"] = run_id
                confirm(f"Run {run_id} launched in the background (process {pid}).")
                redraw_page(run_id)
        elif checked:
            st.error("Not launched: a model did not answer the preflight call (below).", icon=":material/block:")
    preflight_table(st.session_state.get("run_preflight_results") or [])
else:
    st.info("Choose at least one model to see the estimate.")

read: models_admin.Progress = {}  # the runs' progress as their outcomes were decided, for the panel's first pass
choices = dict(models_admin.run_choices(engine(), read=read))
if choices:
    st.subheader("Watch a run")
    if st.session_state.get("run_selected") not in choices:
        st.session_state["run_selected"] = next(iter(choices))
    run_id = st.selectbox("Run", list(choices), format_func=choices.get, key="run_selected")

    @st.fragment(run_every=2)
    def live_progress(run_id: int) -> None:
        """The watched run, refreshed every two seconds (its first pass draws what this run read above)."""
        first, _ = dict(read), read.clear()  # later passes read afresh
        watch_panel(principal, run_id, first)

    live_progress(run_id)
    hide_button(principal, run_id)
hidden_runs_panel(principal)
