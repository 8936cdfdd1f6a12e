"""Protocol views: the declared views of any protocol package (core.protocols.base.View) for the chosen runs and
judge, rendered as they are built (a table with its counts, an optional chart, a caption). A new protocol's results
appear here without a page of its own."""

import streamlit as st

from core.protocols import PROTOCOLS
from core.protocols.views import build_views, drill_metrics, protocol_runs, scoring_judges, view_responses, with_views
from core.scoring.judges.names import judge_label
from ui.auth import require_page
from ui.drilldown import metric_drilldown
from ui.paper_tables import paper_tables_panel
from ui.session import engine
from ui.tables import state_caption

require_page(__file__)
st.title("Protocol views")
st.caption("The result views and seed-paper tables each protocol package declares, for the runs that answered its "
           "instances.")

names = with_views()
if not names:
    st.info("No registered protocol declares page views.")
    st.stop()
name = st.selectbox("Protocol", names, format_func=lambda n: PROTOCOLS.get(n).title, key="pv_protocol")
runs = protocol_runs(engine(), name)
if runs.empty:
    st.info(f"No runs hold {PROTOCOLS.get(name).title} responses yet: import its instances and run them "
            f"(`gauntlet run --conditions ...`).")
    st.stop()
labels = {int(r.run_id): f"#{r.run_id} {r.name} ({r.responses} responses)" for r in runs.itertuples()}
run_ids = st.multiselect("Runs", list(labels), default=list(labels)[:1], format_func=labels.get, key="pv_runs")
judges = scoring_judges(engine(), run_ids)
if not run_ids or not judges:
    st.info("Choose a run that has been scored (`gauntlet score RUN_ID`).")
    st.stop()
judge = st.selectbox("Judge", judges, format_func=judge_label, key="pv_judge")
if PROTOCOLS.get(name).paper_tables:
    st.subheader("The paper's tables, reproduced")
    paper_tables_panel(name, run_ids, judge, on_request=True)
views = build_views(engine(), name, run_ids, judge)
# the responses behind the views feed their drill-downs only: read when there is a view to drill into
responses = view_responses(engine(), name, run_ids, judge) if views else None
for number, (view, result) in enumerate(views):
    st.subheader(view.title)
    st.dataframe(result.table, hide_index=True, width="stretch")
    state_caption(result.table, what="Behind the table")
    if result.figure is not None:
        st.plotly_chart(result.figure, width="stretch")
    st.caption(result.caption)
    if metrics := drill_metrics(result.table, responses):
        metric_drilldown(responses, judge, f"pv_drill_{number}", metrics)
