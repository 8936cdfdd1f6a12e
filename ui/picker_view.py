"""The Pick a generator page's result: the decision, the ranking (n in every metric cell) and the summary downloads."""

from __future__ import annotations

import streamlit as st

from core.analysis import picker, readmodel


def _column_config(spec: picker.PickSpec) -> dict:
    weighted = {m: f" ×{w:g}" for m, w in spec.weights.items() if w > 0}
    return {
        "rank": st.column_config.TextColumn("#"),
        "baseline": st.column_config.CheckboxColumn("baseline (floor)"),
        "score": st.column_config.TextColumn("weighted score"),
        "cost_per_1k": st.column_config.NumberColumn("cost / 1k (USD)", format="%.2f"),
        **{m: st.column_config.TextColumn(readmodel.METRICS[m].label + weighted.get(m, "")) for m in picker.PICK_METRICS},
    }


def show(result: picker.PickResult, judge: str, runs: str) -> None:
    """Render one pick: the headline decision and its tests, the ranking table and the Markdown / HTML summaries."""
    if result.note:
        st.info(result.note)
    if result.ranking.empty:
        st.warning("No model has scored responses in this scope.")
        return
    (st.success if result.recommended else st.warning)(picker.headline(result))
    st.markdown("\n".join(f"- {line}." for line in picker.decision_lines(result)))
    st.subheader("Ranking")
    st.caption(picker.metrics_note(judge))
    st.dataframe(picker.ranking_table(result), hide_index=True, width="stretch", column_config=_column_config(result.spec))
    d1, d2 = st.columns(2)
    d1.download_button("Download summary (Markdown)", picker.summary_markdown(result, judge, runs), "generator_choice.md", "text/markdown", key="pk_md")
    d2.download_button("Download summary (HTML)", picker.summary_html(result, judge, runs), "generator_choice.html", "text/html", key="pk_html")
