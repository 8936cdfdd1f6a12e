"""Leaderboard: per model RAG quality, instruction adherence, robustness, cost and latency with 95% CIs (Table 2)."""

import streamlit as st

from core.analysis import readmodel
from core.protocols import DEFAULT_PROTOCOL
from ui import charts, results_view
from ui.auth import require_page
from ui.drilldown import metric_drilldown_on_request
from ui.fitness_view import fitness_banner
from ui.paper_tables import paper_tables_panel
from ui.table_fit import fitting_columns
from ui.tables import SMALL_N_NOTE, caption_state_text

require_page(__file__)
st.title("Leaderboard")
st.caption("Per model, on the chosen runs, judge, subset and domains. ★ best, ☆ second best among real models; "
           "baselines are calibration rows. Cells: mean [95% CI] n; scores in %, cost in USD and latency in minutes "
           "per 1k instances; † n < 30 (small sample); \"no data\" = nothing measured (never 0). CIs: Clopper-Pearson "
           "for rates, effective-n beta for bounded scores, Student t for cost.")

filters = results_view.sidebar_filters(sets=True, protocol=DEFAULT_PROTOCOL)
if filters:
    fitness_banner(filters.judge)
    from_aggregates = results_view.aggregate_board(filters)  # None: a scope or repeated items need the responses
    if from_aggregates is None:
        board = results_view.leaderboard(*results_view.cache_args(filters))
        states = results_view.leaderboard_states(*results_view.cache_args(filters))
        bounds = readmodel.gap_bounds(results_view.filtered_scores(filters))
    else:
        board, states, bounds = from_aggregates
    board = readmodel.with_metric_states(board, states)
    if board.empty:
        st.info("No scored responses match these filters: widen the subset, domains or benchmark set, or turn off "
                "'Accepted instances only'.")
    else:
        for part, table in readmodel.leaderboard_parts(readmodel.leaderboard_table(board)).items():
            st.markdown(f"**{part}**")
            st.dataframe(table, hide_index=True, width="stretch", column_config=fitting_columns(table, "Model"))
        if board["small_n"].any():
            st.caption(SMALL_N_NOTE)
        if from_aggregates is None and (repeats := results_view.repeats_note(filters.run_ids, filters.judge,
                                                                             filters.version)):
            st.caption(f"Repeated runs: {repeats}")
        texts = readmodel.metric_state_texts(board, list(readmodel.METRICS))  # every caption below, in one pass
        for key in readmodel.METRICS:
            caption_state_text(texts[key], readmodel.METRICS[key].label)
        with st.expander("The paper's Tables 2 and 8, reproduced (these runs and judge; their own subset choice)"):
            paper_tables_panel(DEFAULT_PROTOCOL, list(filters.run_ids), filters.judge, key="lb_paper",
                               on_request=True)

        st.subheader("RAG quality and instruction adherence")
        chosen = st.multiselect("Metrics", [m.id for m in readmodel.QUALITY_METRICS], default=["faithfulness", "coverage", "loose_ias", "strict_ias"],
                                format_func=lambda k: readmodel.METRICS[k].label, key="lb_metrics")
        shown = board[board["metric"].isin(chosen)]
        charts.show_chart(charts.leaderboard_bars(shown, chosen), shown, "leaderboard_metrics")
        for key in chosen:
            caption_state_text(texts[key], f"Bars of {readmodel.METRICS[key].label}")

        st.subheader("Orchestration gap: Loose minus Strict IAS")
        gap = board[board["metric"].isin(["loose_ias", "strict_ias", "orchestration_gap"])]
        charts.show_chart(charts.orchestration_gap(board), gap, "orchestration_gap")
        st.caption(readmodel.GAP_ASSUMPTION)
        if not bounds.empty:
            st.dataframe(bounds.assign(**{"worst-case bound (95%)": [
                "—" if b != b else f"[{b:+.1%}, {h:+.1%}]" for b, h in zip(bounds["bound_low"], bounds["bound_high"],
                                                                          strict=True)]})[
                ["model", "worst-case bound (95%)", "responses", "undetermined"]], hide_index=True)
        for key in ("loose_ias", "strict_ias"):
            caption_state_text(texts[key], f"Gap: {readmodel.METRICS[key].label}")

        st.subheader("Cost and latency per 1k instances")
        cost = board[board["metric"].isin(["cost_per_1k", "latency_min_per_1k"])]
        charts.show_chart(charts.cost_latency(cost), cost, "cost_latency")
        for key in ("cost_per_1k", "latency_min_per_1k"):
            caption_state_text(texts[key], f"Cost and latency: {readmodel.METRICS[key].label}")

        metric_drilldown_on_request(lambda: results_view.filtered_scores(filters), filters.judge, "lb_drill")
        results_view.corrected_section(filters)
