"""Robustness: knowledge gaps (Figure 2), factual conflicts (Figure 3, Table 3) and the knowledge-protocol effect (Figure 6)."""

import pandas as pd
import streamlit as st

from core.analysis import readmodel
from core.protocols import page_protocol
from ui import charts, results_view
from ui.auth import require_page
from ui.drilldown import metric_drilldown_on_request
from ui.tables import STATE_COUNT_COLUMNS, Col, show_table, state_caption

require_page(__file__)
st.title("Robustness")
st.caption("Behaviour when the documents cannot answer (gap subset) or contradict each other (conflict subset). "
           "Rates in %, differences in percentage points (pts).")

CONFLICT_COLUMNS = {"rank": Col("Rank", "int"), "model": Col("Model"), "paradigm": Col("Paradigm"),
                    "conflict_recognition": Col("Conflict recognition", "pct"), "coverage": Col("Answer coverage", "pct"),
                    "n": Col("n", "int"), "judge": Col("Judge")}
EFFECT_COLUMNS = {
    "model": Col("Model"), "acc_with": Col("Accuracy with protocol", "pct"), "n_with": Col("n with", "int"),
    "acc_without": Col("Accuracy without protocol", "pct"), "n_without": Col("n without", "int"),
    "diff": Col("Difference with − without", "pp"), "ci_low": Col("95% CI low", "pp"), "ci_high": Col("95% CI high", "pp"),
    "p_value": Col("p", "p"), "test": Col("Test"), "note": Col("Note"), "judge": Col("Judge"),
    "k_with": Col("correct with", "int", "Responses judged correct among those with protocol constraints"),
    "k_without": Col("correct without", "int", "Responses judged correct among those without"),
}
ROBUSTNESS_METRICS = ("rejection", "loose_knowledge_protocol", "conflict_recognition", "coverage")
CORRELATION_COLUMNS = {"paradigm": Col("Paradigm"), "rho": Col("Spearman rho", "num"), "p_value": Col("p", "p"),
                       "models": Col("Models", "int")}


def captions(states: pd.DataFrame, view: str, metrics: tuple[str, ...]) -> None:
    """Under a view: the state counts of the responses behind each of its metrics."""
    for key in metrics:
        state_caption(states[states["metric"] == key], key, f"{view}, {readmodel.METRICS[key].label}")


VIEWS = {"gap": "Knowledge gaps", "conflict": "Factual conflicts", "protocol": "Protocol effect"}


def gap_view(args: tuple, states: pd.DataFrame, catalog: pd.DataFrame) -> None:
    """Figure 2: protocol adherence vs rejection accuracy per model on the gap subset."""
    gap = results_view.robustness_gap(*args)
    st.caption("Per model on the gap subset: adherence to knowledge-protocol constraints vs rejection accuracy (95% bootstrap CIs); † n < 30.")
    wide = gap.pivot_table(index="model", columns="metric", values=["value", "ci_low", "ci_high", "n"]).reindex(readmodel.model_order(gap["model"].unique(), catalog))
    wide.columns = [f"{a}_{b}" for a, b in wide.columns]
    wide = wide.reset_index()
    labels = (("loose_knowledge_protocol", "Protocol adherence"), ("rejection", "Rejection accuracy"))
    series = [(label, f"value_{key}", f"ci_low_{key}", f"ci_high_{key}") for key, label in labels if f"value_{key}" in wide]
    if wide.empty:
        st.info("No gap instances in these runs: gap instances come from the benchmark (mode 'gap'); widen the "
                "domains or benchmark set.")
        return
    n_cols = {label: f"n_{key}" for key, label in labels if f"n_{key}" in wide}
    charts.show_chart(charts.paired_bars(wide, "model", series, "accuracy (%)", n=n_cols),
                      readmodel.with_metric_states(gap, states), "knowledge_gap")
    captions(states, "Knowledge gaps", ("loose_knowledge_protocol", "rejection"))


def conflict_view(args: tuple, states: pd.DataFrame, colors: dict[str, str]) -> None:
    """Figure 3 and Table 3: conflict recognition vs answer coverage, Spearman rho per paradigm, the ranking."""
    per_model, corr = results_view.robustness_conflict(*args)
    per_model = per_model.dropna(subset=["conflict_recognition"])
    if per_model.empty:
        st.info("No conflict instances in these runs: widen the domains or benchmark set.")
        return
    st.caption("Conflict recognition vs answer coverage per model on the conflict subset (each model in its own "
               "colour, marker = paradigm); Spearman rho per paradigm (real models, needs 3+).")
    charts.show_chart(charts.scatter_models(per_model, "coverage", "conflict_recognition", "Answer coverage (%)",
                                            "Conflict recognition (%)", colors),
                      readmodel.states_beside(per_model, states, ["model"], {m: m for m in ("conflict_recognition", "coverage")}, "metric"),
                      "conflict_scatter")
    show_table(corr, CORRELATION_COLUMNS, pin="paradigm", key="rb_corr")
    st.markdown("**Conflict recognition ranking**")
    show_table(per_model, CONFLICT_COLUMNS, n_column="n", key="rb_conflict")
    captions(states, "Factual conflicts", ("conflict_recognition", "coverage"))


def protocol_view(args: tuple, metric: str, states: pd.DataFrame) -> None:
    """Figure 6: accuracy with minus without knowledge-protocol constraints per model, with its test."""
    st.caption("Accuracy with minus without knowledge-protocol constraints (independent groups): difference with a 95% Wald CI; "
               "p from a Yates-corrected chi-square test, or Fisher's exact test when an expected count is below 5.")
    effect = readmodel.with_metric_states(results_view.robustness_effect(*args, metric=metric), states)
    testable = effect.dropna(subset=["diff"])
    if testable.empty:
        st.info("No model has instances both with and without protocol constraints in this subset.")
    else:
        charts.show_chart(charts.forest(testable.assign(n=testable[["n_with", "n_without"]].min(axis=1)), "model",
                                        "with − without protocol (percentage points)", n="n"),
                          effect, "protocol_effect")
    show_table(effect.assign(n=effect[["n_with", "n_without"]].min(axis=1)), EFFECT_COLUMNS | STATE_COUNT_COLUMNS, n_column="n",
               key="rb_effect")
    captions(states, "Protocol effect", (metric,))


filters = results_view.sidebar_filters(subset=False, sets=True, protocol=page_protocol(__file__))
if filters:
    args = results_view.cache_args(filters)
    # one view at a time (st.tabs would build every tab's charts on every run): each is computed when chosen
    view = st.segmented_control("View", list(VIEWS), format_func=VIEWS.get, default="gap", required=True,
                                key="rb_view", label_visibility="collapsed") or "gap"
    if view == "gap":
        gap_metrics = ("loose_knowledge_protocol", "rejection")
        gap_view(args, results_view.robustness_states(*args, metrics=gap_metrics), results_view.models(filters.version))
    elif view == "conflict":
        conflict_view(args, results_view.robustness_states(*args, metrics=("conflict_recognition", "coverage")),
                      results_view.model_colors(filters.version))
    else:
        metric = st.radio("Accuracy", list(readmodel.PROTOCOL_EFFECT_METRICS), format_func=lambda k: readmodel.METRICS[k].label, horizontal=True, key="rb_protocol_metric")
        protocol_view(args, metric, results_view.robustness_states(*args, metrics=(metric,)))

    metric_drilldown_on_request(lambda: results_view.filtered_scores(filters), filters.judge, "rb_drill",
                                list(ROBUSTNESS_METRICS))
