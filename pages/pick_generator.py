"""Pick a generator: weights, hard floors and a budget give a ranked list with reasons, a top-two test and a downloadable summary."""

import streamlit as st

from core.analysis import picker, readmodel
from ui import results_view
from ui.auth import require_page

require_page(__file__)
st.title("Pick a generator")
st.caption("Choose what matters, set the minimums a model must meet and your budget; the ranking explains itself.")

filters = results_view.sidebar_filters(subset=False, domains=False)
if filters:
    scores = results_view.scores(filters.run_ids, filters.judge, filters.version)
    c1, c2 = st.columns(2)
    domains = c1.multiselect("Domains (empty = all)", sorted(scores["domain"].dropna().unique()), key="pk_domains")
    modes = c2.multiselect("Subsets (empty = all)", list(readmodel.MODES), key="pk_modes")

    st.subheader("Weights")
    wcols = st.columns(len(picker.PICK_METRICS))
    weights = {m: col.number_input(readmodel.METRICS[m].label, 0.0, 10.0, float(picker.DEFAULT_WEIGHTS.get(m, 0.0)), 0.5, key=f"pk_w_{m}")
               for m, col in zip(picker.PICK_METRICS, wcols, strict=True)}

    st.subheader("Hard floors and budget")
    f1, f2, f3, f4 = st.columns(4)
    floors = {"rejection": f1.slider("Rejection accuracy ≥ (%)", 0, 100, 40, key="pk_floor_rejection") / 100,
              "strict_ias": f2.slider("Strict IAS ≥ (%)", 0, 100, 20, key="pk_floor_strict") / 100,
              "faithfulness": f3.slider("Faithfulness ≥ (%)", 0, 100, 0, key="pk_floor_faith") / 100}
    floors = {k: v for k, v in floors.items() if v > 0}
    budget = f4.number_input("Budget per 1k queries (USD, 0 = none)", 0.0, 10_000.0, 0.0, 1.0, key="pk_budget")

    spec = picker.PickSpec(tuple(domains), tuple(modes), weights, floors, budget or None)
    result = picker.rank(scores, results_view.models(filters.version), spec)
    if result.note:
        st.info(result.note)
    if result.ranking.empty:
        st.warning("No model has scored responses in this scope.")
    else:
        st.subheader("Ranking")
        st.dataframe(result.ranking[["rank", "model", "score", "eligible", "reason", "cost_per_1k", *picker.PICK_METRICS]], hide_index=True, width="stretch",
                     column_config={"score": st.column_config.NumberColumn("weighted score", format="percent"),
                                    "cost_per_1k": st.column_config.NumberColumn("cost / 1k (USD)", format="%.2f"),
                                    **{m: st.column_config.NumberColumn(readmodel.METRICS[m].label, format="percent") for m in picker.PICK_METRICS}})
        if result.top_two:
            (st.success if result.top_two.significant else st.warning)(picker.top_two_verdict(result) + ".")
        runs = ", ".join(f"#{r}" for r in filters.run_ids)
        d1, d2 = st.columns(2)
        d1.download_button("Download summary (Markdown)", picker.summary_markdown(result, filters.judge, runs), "generator_choice.md", "text/markdown", key="pk_md")
        d2.download_button("Download summary (HTML)", picker.summary_html(result, filters.judge, runs), "generator_choice.html", "text/html", key="pk_html")
