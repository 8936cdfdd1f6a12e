"""The Pick a generator page's result: the decision with its weaknesses, the ranking (n in every metric cell, cost
apart and together), the rank-sets and segment differences from gold labels, and the downloads."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.analysis import decision, decision_report, picker, readmodel
from core.analysis.judge_check import fitness_notice
from ui import results_view
from ui.session import engine
from ui.table_fit import fitting_columns


def _column_config(spec: picker.PickSpec) -> dict:
    weighted = {m: f" ×{w:g}" for m, w in spec.weights.items() if w > 0}
    return {
        "rank": st.column_config.TextColumn("#"),
        "baseline": st.column_config.CheckboxColumn("baseline (floor)"),
        "score": st.column_config.TextColumn("weighted score"),
        "cost_per_1k": st.column_config.NumberColumn("generation / 1k (USD)", format="%.2f"),
        "judge_cost_per_1k": st.column_config.NumberColumn("judging / 1k (USD)", format="%.2f"),
        "total_cost_per_1k": st.column_config.NumberColumn("total / 1k (USD)", format="%.2f"),
        **{m: st.column_config.TextColumn(readmodel.METRICS[m].label + weighted.get(m, "")) for m in picker.PICK_METRICS},
    }


def show(result: picker.PickResult, judge: str, runs: str) -> None:
    """Render one pick: the headline decision and its tests, safety flags in red, weaknesses, the ranking table and
    the Markdown / HTML summaries."""
    if result.note:
        st.info(result.note)
    if result.ranking.empty:
        st.warning("No model has scored responses in this scope.")
        return
    (st.success if result.recommended else st.warning)(picker.headline(result))
    st.markdown("\n".join(f"- {line}." for line in picker.decision_lines(result)))
    for line in picker.safety_lines(result):
        st.error(f"Safety: {line}.", icon=":material/report:")
    weak = picker.weakness_lines(result)
    if weak:
        st.warning("**Weaknesses of the pick**\n\n" + "\n".join(f"- {line}." for line in weak))
    st.subheader("Ranking")
    st.caption(picker.metrics_note(judge) + " Cost per 1k queries: generation and judging apart, and their total.")
    config = _column_config(result.spec)
    for part, table in picker.ranking_parts(picker.ranking_table(result)).items():
        st.markdown(f"**{part}**")
        st.dataframe(table, hide_index=True, width="stretch", column_config=fitting_columns(table, "model", config))
    fitness = fitness_notice(engine(), judge)
    d1, d2 = st.columns(2)
    d1.download_button("Download summary (Markdown)", picker.summary_markdown(result, judge, runs, fitness),
                       "generator_choice.md", "text/markdown", key="pk_md")
    d2.download_button("Download summary (HTML)", picker.summary_html(result, judge, runs, fitness),
                       "generator_choice.html", "text/html", key="pk_html")


@st.cache_data(max_entries=8, show_spinner="Ranking with the gold labels…")
def _gold_ranks(run_ids: tuple[int, ...], judge: str, version: tuple, gold: tuple, candidates: tuple[str, ...],
                metrics: tuple[str, ...], top: tuple[str, str] | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    from core.store.labels import gold_labels

    labels = gold_labels(engine(), list(run_ids))
    return decision.gold_ranks(engine(), run_ids, results_view.scores(run_ids, judge, version), labels,
                               candidates, metrics, top)


def honest_ranks(result: picker.PickResult, filters: results_view.Filters) -> None:
    """Rank-sets (which candidates could be first) and the top two's segment differences, when gold labels exist."""
    candidates = tuple(result.ranking.loc[~result.ranking["baseline"], "model"])
    metrics = tuple(picker.gold_metrics(result.spec))
    if len(candidates) < 2 or not metrics:
        return
    top = (result.top_two.a, result.top_two.b) if result.top_two else None
    sets, segments = _gold_ranks(filters.run_ids, filters.judge, filters.version, filters.gold, candidates, metrics, top)
    if sets.empty:
        return
    st.subheader("Which candidates could be first (judge-corrected rank-sets)")
    st.caption(f"Per gold-decidable metric, each candidate's corrected interval at {sets['confidence'].iloc[0]:.2%} "
               f"(Bonferroni over {len(candidates)} candidates: all hold together with probability ≥ "
               f"{1 - picker.ALPHA:.0%}) and the ranks it could take. A candidate without enough gold labels could be "
               "anywhere.")
    st.dataframe(sets.assign(metric=sets["metric"].map(readmodel.GOLD_METRICS)), hide_index=True, width="stretch")
    if not segments.empty:
        st.subheader(f"Segment differences: {top[0]} − {top[1]}" if top else "Segment differences")
        st.caption("Judge-corrected difference per domain × condition × language on the instances both answered "
                   "(from the gold labels alone where the judge decided the metric for neither, as the note says); "
                   f"p-values Holm-adjusted over the tested cells (α = {picker.ALPHA:g}).")
        shown = segments.assign(significant=segments["significant"].map(
            lambda v: "not tested" if v is None or v != v else ("yes" if v else "no")))
        st.dataframe(shown, hide_index=True, width="stretch")


def decision_report_button(filters: results_view.Filters, spec: picker.PickSpec, question: str) -> None:
    """Prepare the decision report (the same file `gauntlet decide` writes for the same inputs), then download it."""
    key = (filters.run_ids, filters.judge, repr(spec), question, filters.version, filters.gold)
    if st.button("Prepare decision report", key="pk_decide", icon=":material/description:"):
        made = decision.decide(engine(), filters.run_ids, filters.judge, spec, question)
        st.session_state["pk_decision"] = (key, decision_report.render_html(made))
    stored = st.session_state.get("pk_decision")
    if stored and stored[0] == key:
        c1, c2 = st.columns(2)
        c1.download_button("Download decision report (HTML)", stored[1], "decision_report.html", "text/html",
                           key="pk_decision_html")
        if decision_report.pdf_available():
            c2.download_button("Download decision report (PDF)", lambda: decision_report.render_pdf(stored[1]),
                               "decision_report.pdf", "application/pdf", key="pk_decision_pdf")
        else:
            c2.caption("PDF needs the `pdf` extra: `pip install -e '.[pdf]'` (WeasyPrint, on the system's Pango). "
                       "The HTML file prints to PDF from any browser.")
