"""Run evaluation: pick models and instances, see the estimate, launch in the background, watch and cancel."""

import streamlit as st

from core.generation import runner
from core.config import database_url
from core.store.db import get_engine
from core.store.schema import MODES
from ui.auth import require_page

require_page(__file__)
st.title("Run evaluation")
engine = get_engine(database_url())

models = runner.model_names(engine)
if not any(name.startswith("baseline:") for name in models):
    if st.button("Register the baselines (always-refuse, extractive)", key="run_add_baselines"):
        runner.ensure_baselines(engine)
        st.rerun()

left, right = st.columns(2)
chosen_models = left.multiselect("Models", models, key="run_models", help="Registered models, baselines included.")
domains = left.multiselect("Domains", runner.domain_names(engine), key="run_domains", placeholder="all domains")
modes = left.multiselect("Modes", MODES, key="run_modes", placeholder="all modes")
limit = right.number_input("Instance limit (0 = all)", min_value=0, value=0, step=10, key="run_limit")
concurrency = right.number_input("Concurrency per provider", min_value=1, max_value=64, value=8, key="run_concurrency")
budget = right.number_input("Budget in USD (0 = none)", min_value=0.0, value=0.0, step=1.0, key="run_budget")

options = runner.RunOptions(models=chosen_models, domains=domains, modes=modes, limit=int(limit) or None,
                            concurrency=int(concurrency), budget_usd=float(budget) or None)

if chosen_models:
    estimate = runner.estimate_options(engine, options)
    cols = st.columns(4)
    cols[0].metric("Items", estimate.items)
    cols[1].metric("Paid calls", estimate.calls)
    cols[2].metric("Cached calls", estimate.cached)
    cols[3].metric("Cost at most", f"${estimate.max_cost_usd:.4f}")
    st.caption("Output tokens are counted at each model's maximum, so the cost is an upper bound.")
    if st.button("Launch run", type="primary", disabled=estimate.items == 0, key="run_launch"):
        run_id = runner.create_run(engine, options)
        pid = runner.launch_in_background(engine, run_id)
        st.session_state["run_watch"] = run_id
        st.success(f"Run {run_id} launched in the background (process {pid}).")
else:
    st.info("Choose at least one model to see the estimate.")

runs = runner.recent_runs(engine)
if runs:
    ids = [r.id for r in runs]
    watched = st.session_state.get("run_watch", ids[0])
    run_id = st.selectbox("Watch run", ids, index=ids.index(watched) if watched in ids else 0, key="run_selected",
                          format_func=lambda i: f"run {i}")

    @st.fragment(run_every=2)
    def live_progress(run_id: int) -> None:
        """Progress of the watched run, refreshed every two seconds, with a cancel button while it runs."""
        snap = runner.progress_snapshot(engine, run_id)
        st.progress(snap.finished / snap.total if snap.total else 0.0,
                    text=f"run {run_id}: {snap.status} - {snap.finished}/{snap.total}")
        cols = st.columns(5)
        cols[0].metric("Done", snap.done)
        cols[1].metric("Failed", snap.failed)
        cols[2].metric("Pending", snap.pending)
        cols[3].metric("Spent", f"${snap.spent_usd:.4f}")
        cols[4].metric("ETA", f"{snap.eta_s:.0f} s" if snap.eta_s is not None and snap.status == "running" else "-")
        if snap.status in ("running", "pending", runner.CANCEL_REQUEST):
            if st.button("Cancel run", key=f"run_cancel_{run_id}"):
                st.warning(f"Run {run_id}: {runner.cancel_run(engine, run_id)}")
        failures = runner.failed_items(engine, run_id)
        if failures:
            st.dataframe(failures, hide_index=True)
            st.caption(f"Retry them with `gauntlet run --retry-failed {run_id}`.")

    live_progress(run_id)
