"""Robustness: knowledge gaps (Figure 2), factual conflicts (Figure 3, Table 3) and the knowledge-protocol effect (Figure 6)."""

import streamlit as st

from core.analysis import readmodel
from ui import charts, results_view
from ui.auth import require_page

require_page(__file__)
st.title("Robustness")
st.caption("Behaviour when the documents cannot answer (gap subset) or contradict each other (conflict subset).")

filters = results_view.sidebar_filters(subset=False)
if filters:
    catalog = results_view.models(filters.version)
    gap, (per_model, corr), effects = results_view.robustness(*results_view.cache_args(filters))
    gap_tab, conflict_tab, protocol_tab = st.tabs(["Knowledge gaps", "Factual conflicts", "Protocol effect"])

    with gap_tab:
        st.caption("Per model on the gap subset: adherence to knowledge-protocol constraints vs rejection accuracy (95% bootstrap CIs).")
        wide = gap.pivot_table(index="model", columns="metric", values=["value", "ci_low", "ci_high"]).reindex(readmodel.model_order(gap["model"].unique(), catalog))
        wide.columns = [f"{a}_{b}" for a, b in wide.columns]
        wide = wide.reset_index()
        series = [(label, f"value_{key}", f"ci_low_{key}", f"ci_high_{key}") for key, label in (("loose_knowledge_protocol", "Protocol adherence"), ("rejection", "Rejection accuracy"))
                  if f"value_{key}" in wide]
        if wide.empty:
            st.info("No gap instances in these runs.")
        else:
            charts.show_chart(charts.paired_bars(wide, "model", series, "accuracy (%)"), gap, "knowledge_gap")

    with conflict_tab:
        per_model = per_model.dropna(subset=["conflict_recognition"])
        if per_model.empty:
            st.info("No conflict instances in these runs.")
        else:
            st.caption("Conflict recognition vs answer coverage per model on the conflict subset; Spearman rho per paradigm (real models, needs 3+).")
            charts.show_chart(charts.scatter_models(per_model, "coverage", "conflict_recognition", "Answer coverage (%)", "Conflict recognition (%)"), per_model, "conflict_scatter")
            st.dataframe(corr.rename(columns={"rho": "Spearman rho", "p_value": "p"}), hide_index=True)
            st.markdown("**Conflict recognition ranking**")
            st.dataframe(per_model[["rank", "model", "paradigm", "conflict_recognition", "coverage", "n"]], hide_index=True, width="stretch",
                         column_config={"conflict_recognition": st.column_config.NumberColumn("CR", format="percent"),
                                        "coverage": st.column_config.NumberColumn("Coverage", format="percent")})

    with protocol_tab:
        metric = st.radio("Accuracy", list(readmodel.PROTOCOL_EFFECT_METRICS), format_func=lambda k: readmodel.METRICS[k].label, horizontal=True, key="rb_protocol_metric")
        effect = effects[metric]
        st.caption("Accuracy with minus without knowledge-protocol constraints (independent groups): difference with a 95% Wald CI; "
                   "p from a Yates-corrected chi-square test, or Fisher's exact test when an expected count is below 5.")
        testable = effect.dropna(subset=["diff"])
        if testable.empty:
            st.info("No model has instances both with and without protocol constraints in this subset.")
        else:
            charts.show_chart(charts.forest(testable, "model", "with − without protocol (percentage points)"), effect, "protocol_effect")
        st.dataframe(effect[["model", "k_with", "n_with", "k_without", "n_without", "acc_with", "acc_without", "diff", "ci_low", "ci_high", "p_value", "test", "note"]],
                     hide_index=True, width="stretch")
