"""Domains: radar per domain (Faithfulness, Coverage, Strict IAS, Loose IAS) and a domain x metric heatmap (Figure 9)."""

import streamlit as st

from core.analysis import readmodel
from core.analysis.readmodel.enterprise_aggregates import (
    domain_metrics_from_aggregates,
    domain_pooled_from_aggregates,
    filter_aggregates,
)
from core.protocols import page_protocol
from ui import charts, results_view
from ui.auth import require_page
from ui.drilldown import metric_drilldown_on_request
from ui.tables import SMALL_N_NOTE, caption_state_text

require_page(__file__)
st.title("Domains")
st.caption("How each model holds up per vertical domain, in %. Radars overlay the models you choose (each model keeps "
           "its colour on every page; equal values show as thicker lines with the note in the hover); the heatmap "
           "pools them.")


def metric_captions(texts: dict, view: str, model: str | None = None) -> None:
    """Under a view: the state counts of the responses behind each domain metric (summed over the domains), from
    readmodel.metric_state_texts (keyed by metric, or by (model, metric) for one model's radar)."""
    for key in readmodel.DOMAIN_METRICS:
        caption_state_text(texts[key if model is None else (model, key)], f"{view}: {readmodel.METRICS[key].label}")


filters = results_view.sidebar_filters(domains=False, sets=True, protocol=page_protocol(__file__))
if filters:
    metrics = list(readmodel.DOMAIN_METRICS)
    aggregates = results_view.domain_aggregates_for(filters)  # None with a benchmark set or 'accepted only': the responses
    scores = results_view.filtered_scores(filters) if aggregates is None else None
    per_domain = (readmodel.domain_metrics(scores) if scores is not None
                  else domain_metrics_from_aggregates(aggregates, metrics))
    order = readmodel.model_order(per_domain["model"].unique(), results_view.models(filters.version))
    chosen = st.multiselect("Models on the radars", order, default=order[:5], key="dom_models")
    shown = per_domain[per_domain["model"].isin(chosen)]
    if scores is not None:
        pooled = scores[scores["model"].isin(chosen)]
        states = readmodel.metric_state_counts(pooled, metrics, by="domain")
        drawn = readmodel.domain_metric_states(pooled, ["model", "domain"])
        matrix = readmodel.domain_heatmap(pooled)
        counts = pooled.groupby("domain", sort=True)[metrics].count()
        cells = readmodel.domain_metric_states(pooled, ["domain"])
    else:
        states, drawn, cells, matrix, counts = domain_pooled_from_aggregates(
            filter_aggregates(aggregates, models=chosen), metrics)

    st.subheader("Per-domain radar")
    if shown.empty:
        st.info("Choose at least one model above to draw the radars.")
    else:
        charts.show_chart(charts.domain_radars(shown, chosen, results_view.model_colors(filters.version)), drawn, "domain_radars")
        if (shown["responses"] < 30).any():
            st.caption(SMALL_N_NOTE + " Under each radar: responses per model in that domain.")
        st.caption("Per model over its domains below; per model and domain in the chart's CSV.")
        radar_texts = readmodel.metric_state_texts(drawn, [(m, k) for m in chosen for k in metrics], by="model")
        for model in chosen:
            metric_captions(radar_texts, f"Radars, {model}", model)

    st.subheader("Domain x metric heatmap (chosen models pooled)")
    charts.show_chart(charts.domain_heatmap(matrix, counts), cells, "domain_heatmap")
    if (counts < 30).to_numpy().any():
        st.caption(SMALL_N_NOTE + " († in a cell: fewer than 30 responses behind it.)")
    metric_captions(readmodel.metric_state_texts(states, metrics), "Heatmap")

    metric_drilldown_on_request(lambda: (rows := results_view.filtered_scores(filters))[rows["model"].isin(chosen)],
                                filters.judge, "dom_drill", metrics)
