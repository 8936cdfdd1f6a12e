"""Run evaluation: pick models, instances and judges, see the estimate, launch generation + scoring in the background,
watch both stages and cancel."""

import streamlit as st

from core.generation import jobs, runs
from core.scoring.judges.names import HEURISTIC, judge_label
from core.store.schema import MODES
from ui.auth import guarded_write, require_page
from ui.session import engine

principal = require_page(__file__)
st.title("Run evaluation")

models = runs.model_names(engine())
if (not any(name.startswith("baseline:") for name in models)
        and st.button("Register the baselines (always-refuse, extractive)", key="run_add_baselines")
        and guarded_write(lambda: runs.register_baselines(engine(), principal))):
    st.rerun()

left, right = st.columns(2)
chosen_models = left.multiselect("Models", models, key="run_models", help="Registered models, baselines included.")
domains = left.multiselect("Domains", runs.domain_names(engine()), key="run_domains", placeholder="all domains")
modes = left.multiselect("Modes", MODES, key="run_modes", placeholder="all modes")
judges = left.multiselect("Judges (score after generation, in this order)", runs.judge_choices(engine()),
                          default=[HEURISTIC], format_func=judge_label, key="run_judges",
                          help="The heuristic judge is offline and free; llm:<model> judges call that model.")
limit = right.number_input("Instance limit (0 = all)", min_value=0, value=0, step=10, key="run_limit")
concurrency = right.number_input("Concurrency per provider", min_value=1, max_value=64, value=8, key="run_concurrency")
budget = right.number_input("Budget in USD (0 = none)", min_value=0.0, value=0.0, step=1.0, key="run_budget")

options = runs.RunOptions(models=chosen_models, domains=domains, modes=modes, limit=int(limit) or None,
                            concurrency=int(concurrency), budget_usd=float(budget) or None,
                            judge=",".join(judges) or None)

if chosen_models:
    estimate = runs.estimate_options(engine(), options)
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
    if st.button("Launch run", type="primary", disabled=estimate.items == 0, key="run_launch"):
        launched = guarded_write(lambda: jobs.launch_run(engine(), principal, options))
        if launched:
            run_id, pid = launched
            st.session_state["run_watch"] = run_id
            st.success(f"Run {run_id} launched in the background (process {pid}).")
else:
    st.info("Choose at least one model to see the estimate.")


def stage_text(run_id: int, status: str, line: jobs.StageLine) -> str:
    """One progress line's caption: the stage (the run and its status, or the judge's name), counts and state."""
    if line.judge is None:
        return f"Generation · run {run_id}: {status} - {line.done}/{line.total} ({line.state})"
    if line.state == "waiting" and not line.total:
        return f"Scoring with {judge_label(line.judge)}: waiting for generation"
    return f"Scoring with {judge_label(line.judge)}: {line.done}/{line.total} responses ({line.state})"


recent = runs.recent_runs(engine())
if recent:
    ids = [r.id for r in recent]
    watched = st.session_state.get("run_watch", ids[0])
    run_id = st.selectbox("Watch run", ids, index=ids.index(watched) if watched in ids else 0, key="run_selected",
                          format_func=lambda i: f"run {i}")

    @st.fragment(run_every=2)
    def live_progress(run_id: int) -> None:
        """Progress of the watched run (generation, then scoring per judge), refreshed every two seconds."""
        snap = runs.progress_snapshot(engine(), run_id)
        for line in jobs.pipeline_progress(engine(), run_id, snap):
            st.progress(line.fraction, text=stage_text(run_id, snap.status, line))
        cols = st.columns(5)
        cols[0].metric("Done", snap.done)
        cols[1].metric("Failed", snap.failed)
        cols[2].metric("Pending", snap.pending)
        cols[3].metric("Spent", f"${snap.spent_usd:.4f}")
        cols[4].metric("ETA", f"{snap.eta_s:.0f} s" if snap.eta_s is not None and snap.status == "running" else "-")
        cancellable = snap.status in ("running", "pending", runs.CANCEL_REQUEST)
        if cancellable and st.button("Cancel run", key=f"run_cancel_{run_id}"):
            status = guarded_write(lambda: jobs.stop_run(engine(), principal, run_id))
            if status:
                st.warning(f"Run {run_id}: {status}")
        failures = runs.failed_items(engine(), run_id)
        if failures:
            st.dataframe(failures, hide_index=True)
            st.caption(f"Retry them with `gauntlet run --retry-failed {run_id}`.")

    live_progress(run_id)
