"""Data quality: natural vs augmented instances (equivalence within ±0.2, Figure 8 / Table 8) and the benchmark composition."""

import streamlit as st

from core.analysis import readmodel
from ui import charts, results_view
from ui.auth import require_page
from ui.session import engine

require_page(__file__)
st.title("Data quality")
st.caption("Do augmented (synthetic) instances behave like natural ones? Differences are natural − augmented; "
           "equivalence means the 95% CI lies within ±margin.")

filters = results_view.sidebar_filters()
if filters:
    scores = results_view.filtered_scores(filters)
    margin = st.slider("Equivalence margin", 0.05, 0.5, 0.2, 0.05, key="dq_margin")
    eq = results_view.equivalence(*results_view.cache_args(filters), margin)
    if eq[["n_natural", "n_augmented"]].min(axis=1).max() == 0:
        st.info("These runs hold only one origin (natural or augmented) in this subset; nothing to compare.")
    else:
        plot = eq.assign(diff=eq["tost_mean"].fillna(eq["diff"]), ci_low=eq["tost_low"].fillna(eq["boot_low"]), ci_high=eq["tost_high"].fillna(eq["boot_high"]))
        st.caption("CI: TOST t-interval over per-model differences when 2+ models have both origins, else a pooled bootstrap CI.")
        charts.show_chart(charts.forest(plot.dropna(subset=["diff"]), "label", "natural − augmented (percentage points)", margin=margin), eq, "natural_vs_augmented")
        st.dataframe(eq[["label", "natural", "augmented", "diff", "n_natural", "n_augmented", "models", "tost_low", "tost_high", "tost_p", "tost_equivalent", "boot_low", "boot_high", "equivalent_by_ci"]],
                     hide_index=True, width="stretch")

    st.subheader("Benchmark composition")
    comp = readmodel.benchmark_composition(engine())
    c1, c2 = st.columns(2)
    with c1:
        st.caption("Latest benchmark instances")
        charts.show_chart(charts.composition_bars(comp), comp, "benchmark_composition")
    with c2:
        st.caption("Instances in the chosen runs and subset")
        evaluated = readmodel.evaluated_composition(scores)
        charts.show_chart(charts.composition_bars(evaluated), evaluated, "evaluated_composition")
