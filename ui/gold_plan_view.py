"""The gold budget planner panel: how many more gold labels, on which instances, would separate the picker's pick and
runner-up at α = 0.05, and a button that puts those instances into the experts' queue (core.review.gold_plan)."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from core.analysis import readmodel
from core.review.auth import Principal
from core.review.gold import RunChoice
from core.review.gold_plan import (
    PlannerPair,
    decided_metric,
    enqueue_plan,
    plan_gold_budget,
    plan_summary,
    plan_table,
    planner_pair,
)
from core.store.sanitize import plain_markdown
from ui import results_view
from ui.auth import guarded_write
from ui.session import engine

PLAN_KEY = "gold_budget_plan"


@st.cache_data(max_entries=16, show_spinner="Ranking the models as Pick a generator does…")
def _pair(run_id: int, judge: str, metric: str, version: tuple) -> PlannerPair:
    """The planner's default pair for the run, judge and metric (cached per data version: picker.rank resamples)."""
    return planner_pair(results_view.scores((run_id,), judge, version), results_view.models(version), metric)


def show(principal: Principal, runs: Sequence[RunChoice], default: int = 0) -> None:
    """Choose run (default: runs[default], one the experts can label), judge, metric (default: the first one the judge
    decided) and the two models (default: the picker's pick and runner-up), plan, then enqueue."""
    st.caption("Label in batches until two models separate: each plan draws the next uniform batch of instances "
               "(inclusion probabilities recorded), states what labelling on promises (the smallest true difference "
               "it separates with 80% power, from the labels so far, not from a point estimate taken as the truth), "
               "and says stop when the two separate or when the remaining budget's expected power falls below 10%. "
               "The promise is checked by simulation in docs/ppi.md (bench/bench_labels_pay.py).")
    run = st.selectbox("Run", runs, index=default if runs else None, format_func=lambda r: r.label, key="plan_run")
    judges = readmodel.run_judges(engine(), [run.id]) if run is not None else []
    if run is None or not judges:
        st.info("No scored run yet: the planner needs a judge's verdicts on the run.")
        return
    c1, c2 = st.columns(2)
    judge = c1.selectbox("Judge", judges, key="plan_judge")
    metrics = list(readmodel.GOLD_METRICS)
    decided = decided_metric(results_view.scores((run.id,), judge, results_view.data_version()), metrics)
    metric = c2.selectbox("Metric", metrics, index=metrics.index(decided), format_func=readmodel.GOLD_METRICS.get,
                          key="plan_metric")
    pair = _pair(run.id, judge, metric, results_view.data_version())
    if len(pair.models) < 2:
        st.info("Fewer than two models have judge values on this metric: nothing to separate.")
        return
    st.caption(plain_markdown(pair.why))
    m1, m2 = st.columns(2)
    model_a = m1.selectbox("Model A", pair.models, index=0, key="plan_model_a")
    model_b = m2.selectbox("Model B", [m for m in pair.models if m != model_a], index=0, key="plan_model_b")
    if st.button("Plan the next gold labels", key="plan_compute"):
        st.session_state[PLAN_KEY] = plan_gold_budget(engine(), [run.id], judge, metric, model_a, model_b)
    plan = st.session_state.get(PLAN_KEY)
    if plan is None or (plan.run_ids, plan.judge, plan.metric, plan.model_a, plan.model_b) != (
            (run.id,), judge, metric, model_a, model_b):
        return
    st.info(plain_markdown(plan_summary(plan)), icon=":material/calculate:")
    if not plan.items:
        return
    st.dataframe(plan_table(plan), hide_index=True, width="stretch",
                 column_config={"inclusion probability": st.column_config.NumberColumn(format="%.3f"),
                                "judge A − B": st.column_config.NumberColumn(format="%+.2f")})
    if st.button(f"Put these {len(plan.items)} instances into the experts' queue", type="primary",
                 key="plan_enqueue"):
        report = guarded_write(lambda: enqueue_plan(engine(), principal, plan))
        if report:
            st.session_state.pop(PLAN_KEY, None)
            st.success(f"Queued {report.sampled} responses, {report.assignments} assignments (batch {report.batch}).")
            if report.uncovered:
                st.warning("Not queued, because fewer than two active experts cover their domain: "
                           + "; ".join(f"{plain_markdown(d)} ({n} responses)" for d, n in report.uncovered.items())
                           + ".",
                           icon=":material/warning:")
