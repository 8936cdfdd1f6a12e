"""Data quality: natural vs augmented instances (equivalence within ±0.2, Figure 8 / Table 8) and the benchmark composition."""

import streamlit as st

from core.analysis import readmodel
from core.protocols import page_protocol
from core.store.benchmark import generated_counts
from ui import charts, results_view
from ui.auth import require_page
from ui.session import engine
from ui.tables import Col, show_table

EQUIVALENCE_COLUMNS = {
    "label": Col("Metric"), "natural": Col("Natural", "pct"), "augmented": Col("Augmented", "pct"),
    "diff": Col("Natural − augmented", "pp"), "n_natural": Col("n natural", "int"), "n_augmented": Col("n augmented", "int"),
    "models": Col("Models with both", "int"), "tost_low": Col("TOST 95% CI low", "pp"), "tost_high": Col("TOST 95% CI high", "pp"),
    "tost_p": Col("TOST p", "p"), "tost_equivalent": Col("Equivalent (TOST)", "bool"),
    "t": Col("paired t (over models)", "num"), "t_p": Col("p (paired t, Table 8)", "p"),
    "cohen_d": Col("Cohen's d", "num", "mean / SD of the models' natural − augmented differences"),
    "boot_low": Col("Bootstrap 95% CI low", "pp"), "boot_high": Col("Bootstrap 95% CI high", "pp"),
    "equivalent_by_ci": Col("Equivalent (CI within margin)", "bool"),
}

require_page(__file__)
st.title("Data quality")
st.caption("Do augmented (synthetic) instances behave like natural ones? Differences are natural − augmented; "
           "equivalence means the 95% CI lies within ±margin.")

filters = results_view.sidebar_filters(sets=True, protocol=page_protocol(__file__))
if filters:
    margin = st.slider("Equivalence margin", 0.05, 0.5, 0.2, 0.05, key="dq_margin")
    eq = results_view.equivalence(*results_view.cache_args(filters), margin=margin)
    if eq[["n_natural", "n_augmented"]].min(axis=1).max() == 0:
        st.info("These runs hold only one origin (natural or augmented) in this subset; nothing to compare.")
    else:
        plot = eq.assign(diff=eq["tost_mean"].fillna(eq["diff"]), ci_low=eq["tost_low"].fillna(eq["boot_low"]), ci_high=eq["tost_high"].fillna(eq["boot_high"]))
        st.caption("CI: TOST t-interval over per-model differences when 2+ models have both origins, else a pooled bootstrap CI.")
        sized = plot.assign(n=plot[["n_natural", "n_augmented"]].min(axis=1))
        charts.show_chart(charts.forest(sized.dropna(subset=["diff"]), "label", "natural − augmented (percentage points)",
                                        margin=margin, n="n"), eq, "natural_vs_augmented")
        show_table(eq.assign(n=eq[["n_natural", "n_augmented"]].min(axis=1)), EQUIVALENCE_COLUMNS, pin="label",
                   n_column="n", key="dq_table")

    st.subheader("Benchmark composition")
    comp = readmodel.benchmark_composition(engine())
    c1, c2 = st.columns(2)
    with c1:
        st.caption("Latest benchmark instances")
        charts.show_chart(charts.composition_bars(comp), comp, "benchmark_composition")
    with c2:
        st.caption("Instances in the chosen runs and subset")
        evaluated = results_view.evaluated_composition(*results_view.cache_args(filters))
        charts.show_chart(charts.composition_bars(evaluated), evaluated, "evaluated_composition")

with st.expander("LLM-generated instances", expanded=True):
    st.caption("Latest instances per protocol: which a model drafted, wrote or edited (the model in brackets), beside "
               "the rule- or human-made ones.")
    st.dataframe([{"protocol": c.protocol, "generated": c.generated, "instances": c.instances}
                  for c in generated_counts(engine())], hide_index=True, key="dq_generated")
