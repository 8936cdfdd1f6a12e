"""Domains: radar per domain (Faithfulness, Coverage, Strict IAS, Loose IAS) and a domain x metric heatmap (Figure 9)."""

import streamlit as st

from core.analysis import readmodel
from ui import charts, results_view
from ui.auth import require_page
from ui.drilldown import metric_drilldown

require_page(__file__)
st.title("Domains")
st.caption("How each model holds up per vertical domain. Radars overlay the models you choose; the heatmap pools them.")

filters = results_view.sidebar_filters(domains=False)
if filters:
    scores = results_view.filtered_scores(filters)
    per_domain = readmodel.domain_metrics(scores)
    order = readmodel.model_order(per_domain["model"].unique(), results_view.models(filters.version))
    chosen = st.multiselect("Models on the radars", order, default=order[:5], key="dom_models")
    shown = per_domain[per_domain["model"].isin(chosen)]

    st.subheader("Per-domain radar")
    charts.show_chart(charts.domain_radars(shown, chosen), shown, "domain_radars")

    st.subheader("Domain x metric heatmap (chosen models pooled)")
    matrix = readmodel.domain_heatmap(scores[scores["model"].isin(chosen)])
    charts.show_chart(charts.domain_heatmap(matrix), matrix.reset_index(), "domain_heatmap")

    metric_drilldown(scores[scores["model"].isin(chosen)], filters.judge, "dom_drill", list(readmodel.DOMAIN_METRICS))
