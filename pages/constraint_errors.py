"""Constraint errors: failure rate by category and sub-dimension per model (Figure 4); click a bar for the failing responses."""

import streamlit as st

from core.analysis import readmodel
from core.protocols import page_protocol
from ui import charts, results_view
from ui.auth import require_page
from ui.drilldown import drilldown

require_page(__file__)
st.title("Constraint errors")
st.caption("Share of decided constraint verdicts that failed, in % (errors and not-applicable verdicts are left out and "
           "counted as undetermined); † on a bar: fewer than 30 decided verdicts behind it.")

filters = results_view.sidebar_filters(sets=True, protocol=page_protocol(__file__))
if filters:
    counts = results_view.failure_counts(filters)
    if modeless := results_view.modeless_failures(counts):
        st.caption(f"Left out: {modeless:,} constraint verdicts of instances without an EnterpriseRAG mode (e.g. IFEval "
                   f"prompts), counted under mode '{readmodel.NO_MODE}'.")
    c1, c2, c3 = st.columns(3)
    level = c1.radio("Break down by", ["category", "sub_dimension"], format_func=lambda v: v.replace("_", "-"), horizontal=True, key="ce_level")
    view = c2.radio("View", ["rate", "stacked", "normalised"], horizontal=True, key="ce_view",
                    help="rate: failure rate per group; stacked: failed counts; normalised: each model's failures as shares")
    category = None
    if level == "sub_dimension":
        category = c3.selectbox("Category", readmodel.CATEGORIES, format_func=readmodel.CATEGORY_LABELS.get, key="ce_category")
    rates = readmodel.failure_rates(results_view.failure_view(filters, counts, category), level)
    rates, order = readmodel.in_model_order(rates, results_view.models(filters.version))
    event = charts.show_chart(charts.failure_bars(rates, level, view), rates, "constraint_failures", selectable=True)
    st.caption(f"Behind the chart: {readmodel.verdict_totals_text(rates)}")

    st.subheader("Failing responses")
    points = (event.selection.points if event and event.selection else []) or []
    # read on request: a clicked bar opens its failing responses; otherwise the switch does (the page does not read
    # the failed verdicts until someone asks)
    switched = st.toggle("Show the failing responses", key="ce_failing",
                         help="Or click a bar. Read on request: the page does not read every failed verdict until "
                              "you ask.")
    chosen = bool(points) or switched
    if points:
        p = points[0]
        model, sel_category, sel_sub = p["x"], p["customdata"][0], p["customdata"][1] or None
    elif chosen:
        st.caption("Click a bar, or choose here:")
        d1, d2 = st.columns(2)
        model = d1.selectbox("Model", order, key="ce_model")
        sel_category = category or d2.selectbox("Category", readmodel.CATEGORIES, format_func=readmodel.CATEGORY_LABELS.get, key="ce_fail_cat")
        sel_sub = None
    else:
        st.caption("Click a bar, or switch on 'Show the failing responses' to choose a model and category.")
    if chosen:
        failing = results_view.failing_verdicts(filters.run_ids, filters.judge, model, sel_category, sel_sub,
                                                filters.version)
        failing = results_view.scoped(failing, filters.run_ids, filters.scope, filters.version)
        failing = readmodel.failure_view(failing, filters.modes or readmodel.MODES, filters.domains)
        cols = ["response_id", "model", "instance_uid", "domain", "mode", "category", "sub_dimension", "cid", "text",
                "method", "judge", "reason"]
        drilldown(failing[cols], filters.judge, "ce_drill",
                  f"{model} · {sel_category}{' / ' + sel_sub if sel_sub else ''}: failed constraints")
