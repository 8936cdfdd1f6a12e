"""Misleading evidence: the page's content (pages/misleading_evidence.py is the thin script that checks the role and calls render;
the code lives here so a rerun does not recompile it)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.analysis import readmodel
from core.protocols.misleading_evidence import CLEAN, CLOSED_BOOK, MISLEADING_CONDITIONS, NAME, POLICY_LABELS
from core.protocols.misleading_evidence import NAME as MISLEADING
from core.protocols.misleading_evidence import analysis as misleading_evidence
from core.scoring.judges.names import judge_label
from core.store.benchmark import marks_by_response
from core.store.generated import mark_cell
from core.store.sanitize import plain_markdown
from ui import charts, results_view
from ui.paper_tables import paper_tables_panel
from ui.session import engine
from ui.tables import state_caption


@st.cache_data(max_entries=8, show_spinner="Loading RAG-Stress outcomes…")
def outcomes(run_ids: tuple[int, ...], judge: str, version: tuple) -> pd.DataFrame:
    """The runs' RAG-Stress outcomes under `judge` (cached per data version)."""
    return misleading_evidence.load_outcomes(engine(), list(run_ids), judge)


def cell(value: float, low: float, high: float, small: bool) -> str:
    """'12.5% [8.1%, 17.0%]' with † when the sample is small; 'no data' when missing."""
    return "no data" if pd.isna(value) else f"{value:.1%} [{low:.1%}, {high:.1%}]" + ("†" if small else "")


def render() -> None:
    """Title, filters and every RAG-Stress table, chart, audit and drill-down of the chosen runs and judge."""
    st.title("Misleading evidence")
    st.caption("RAG-Stress: the question and reference answer stay fixed; the evidence comes clean, or with one assertion "
               "edited to support a designated wrong answer. Misleading rate (MR) = share of a model's closed-book-correct "
               "questions on which it gives that wrong answer; 'any wrong' = share no longer answered correctly.")

    filters = results_view.sidebar_filters(subset=False, domains=False, protocol=MISLEADING, ias=False)
    if filters:
        out = (outcomes(filters.run_ids, filters.judge, filters.version)
               if results_view.holds_protocol(MISLEADING, filters.run_ids, filters.version) else pd.DataFrame())
        label = judge_label(filters.judge)
        if out.empty:
            st.info("No RAG-Stress responses in these runs. Build instances with `gauntlet misleading-evidence build`, import them, "
                    f"and run with `--conditions {CLOSED_BOOK},{CLEAN},{','.join(MISLEADING_CONDITIONS)}`.",
                    icon=":material/info:")
            st.stop()
        st.subheader("The paper's table, reproduced")
        paper_tables_panel(NAME, filters.run_ids, filters.judge)
        datasets = sorted(out["dataset"].unique())
        dataset = st.selectbox("Dataset (and language)", datasets, key="rs_dataset",
                               help="Every figure below is of one dataset; datasets and languages are never pooled.")
        out = out[out["dataset"] == dataset]
        rates, acc = misleading_evidence.misleading_rates(out), misleading_evidence.accuracy(out)
        st.caption(f"Dataset: **{plain_markdown(dataset)}** · judge: **{label}** (the lexical reference metrics it stored) "
                   "· every cell shows its n; † n < 30 (small sample); undetermined responses are counted, never scored 0.")

        st.subheader("Misleading rate by policy and position")
        models = rates.drop_duplicates("model")
        names = {m: f"{m} (n={n}{'†' if 0 < n < 30 else ''})" for m, n in zip(models["model"], models["n_closed_book_correct"], strict=True)}
        wide = rates.pivot(index="model", columns="condition", values=["mr", "mr_low", "mr_high"])
        wide.columns = [f"{c}:{v}" for v, c in wide.columns]
        wide = wide.reset_index().assign(label=lambda f: f["model"].map(names))
        series = [(f"{POLICY_LABELS[p]} · {q}", f"{c}:mr", f"{c}:mr_low", f"{c}:mr_high")
                  for c, (p, q) in MISLEADING_CONDITIONS.items()]
        charts.show_chart(charts.paired_bars(wide, "label", series, f"MR (%), 95% CI · judge {label}"),
                          rates, "misleading_rate")
        state_caption(rates, "mcq_accuracy", "Answers behind the bars (closed-book-correct questions)")
        shown = rates.assign(**{"MR [95% CI]": [cell(*r) for r in zip(rates["mr"], rates["mr_low"], rates["mr_high"],
                                                                      rates["small_n"], strict=True)],
                                "any wrong [95% CI]": [cell(*r) for r in zip(rates["any_wrong"], rates["any_wrong_low"],
                                                                            rates["any_wrong_high"], rates["small_n"],
                                                                            strict=True)]})
        st.dataframe(shown[["model", "policy", "position", "MR [95% CI]", "any wrong [95% CI]", "n",
                            "n_closed_book_correct", "n_undetermined", "n_scored", "n_unparseable", "n_error", "n_not_applicable",
                            "n_unscored", "n_skipped", "judge_label"]], hide_index=True, width="stretch")
        state_caption(rates, "mcq_accuracy", "Answers behind the table")

        st.subheader("Policy gap (prioritise the documents − may rely on prior knowledge)")
        gap = misleading_evidence.with_rate_states(misleading_evidence.policy_gap(out), rates,
                                                   ["dataset", "model", "position"])
        st.dataframe(gap.drop(columns=["judge"]), hide_index=True, width="stretch")
        state_caption(rates, "mcq_accuracy", "Answers behind the policy gap")
        st.caption("Paired on the same closed-book-correct questions: McNemar per position; over all positions a sign test "
                   "over questions (each question counts once).")
        means = misleading_evidence.model_means(out)
        gap_all = means[means["measure"] == misleading_evidence.GAP].iloc[0]
        st.metric("Policy gap averaged over models and positions",
                  "no data" if pd.isna(gap_all["mean"]) else f"{gap_all['mean'] * 100:+.1f} pp",
                  help="Each model's gap over all positions, then their mean; 95% bootstrap interval over questions.")
        if pd.notna(gap_all["mean"]):
            st.caption(f"95% CI [{gap_all['ci_low'] * 100:+.1f}, {gap_all['ci_high'] * 100:+.1f}] pp · "
                       f"{gap_all['n_models']} models · n = {gap_all['n_questions']} questions"
                       + (" † n < 30" if gap_all["small_n"] else ""))
        st.dataframe(means.drop(columns=["judge"]), hide_index=True, width="stretch")
        st.download_button("Download the means over models (CSV)", means.to_csv(index=False).encode("utf-8"),
                           file_name="misleading_evidence_model_means.csv", mime="text/csv", key="rs_means_csv")
        st.dataframe(misleading_evidence.with_rate_states(misleading_evidence.position_means(rates), rates,
                                                          ["dataset", "policy", "position"]), hide_index=True, width="stretch")
        st.caption("MR by position, averaged over the models that have a value (n_models); min and max model MR.")
        state_caption(rates, "mcq_accuracy", "Answers behind the position means")

        st.subheader("MR against clean accuracy")
        summary = readmodel.with_model_info(misleading_evidence.model_summary(rates, acc), results_view.models(filters.version))
        plotted = summary.dropna(subset=["mr_documents", "clean_accuracy"])
        if plotted.empty:
            st.info("No data: no model has both a misleading rate and a clean accuracy.")
        else:
            charts.show_chart(charts.scatter_models(plotted, "clean_accuracy", "mr_documents",
                                                    f"clean accuracy (%), all questions · judge {label}",
                                                    "MR under 'prioritise the documents' (%), mean over positions"),
                              summary, "mr_vs_clean")
        missing = sorted(set(summary["model"]) - set(plotted["model"]))
        if missing:
            st.caption(f"No data for: {', '.join(plain_markdown(m) for m in missing)}.")
        st.dataframe(summary[["model", "mr_documents", "mr_prior_knowledge", "n_closed_book_correct", "clean_accuracy",
                              "clean_n", "clean_n_unparseable", "closed_book_accuracy", "closed_book_n",
                              "closed_book_n_unparseable", "small_n"]], hide_index=True,
                     width="stretch")
        state_caption(acc, "mcq_accuracy", "Clean and closed-book answers behind the chart and table")

        st.subheader("Paired audit of two models or checkpoints")
        order = sorted(out["model"].unique())
        c1, c2 = st.columns(2)
        model_a = c1.selectbox("Model A", order, key="rs_a")
        model_b = c2.selectbox("Model B", [m for m in order if m != model_a], key="rs_b")
        if model_b:
            st.dataframe(misleading_evidence.audit(out, model_a, model_b), hide_index=True, width="stretch")
            st.caption("Harmful override: closed-book correct, wrong with the evidence. Beneficial correction: closed-book "
                       "wrong, correct with clean evidence. Counts per question both answered (n); McNemar A vs B.")

        st.subheader("Drill down: the edited evidence")
        c1, c2 = st.columns(2)
        model = c1.selectbox("Model", order, key="rs_model")
        condition = c2.selectbox("Misleading condition", list(MISLEADING_CONDITIONS), key="rs_condition")
        mine = out[(out["model"] == model) & (out["condition"] == condition)]
        known = set(misleading_evidence.closed_book_correct(out).query("model == @model")["instance_uid"])
        choices = mine[mine["instance_uid"].isin(known)].sort_values(["misled", "instance_uid"], ascending=[False, True])
        if choices.empty:
            st.info("No data: this model has no closed-book-correct question answered under this condition.")
        else:
            generated = marks_by_response(engine(), [int(r) for r in choices["response_id"]])  # the LLM marks
            marks = {r.instance_uid: f"{r.instance_uid} — {'misled' if r.misled == 1 else 'not misled'}"
                     + (f" · {mark_cell(generated.get(int(r.response_id)))}" if generated.get(int(r.response_id))
                        else "")
                     for r in choices.itertuples()}
            uid = st.selectbox("Question (closed-book correct)", list(marks), format_func=marks.get, key="rs_uid")
            detail = misleading_evidence.evidence(engine(), uid)
            reference = detail["reference"]
            gold = reference.get("choices", {}).get(reference.get("answer_key"), "") or \
                "; ".join(a["text"] for a in reference.get("answers", []))
            st.markdown(f"**Question:** {plain_markdown(detail['query'])}")
            st.markdown(f"**Reference answer:** {plain_markdown(gold)} · **designated wrong answer:** "
                        f"{plain_markdown(detail['wrong_answer'])} ({plain_markdown(detail['entity_type'])}, "
                        f"edit by {plain_markdown(detail['method'])})")
            if detail["generated"]:
                st.caption(plain_markdown(detail["generated"]))
            position = MISLEADING_CONDITIONS[condition][1]
            for document in detail["documents"]:
                if document["evidence"] == CLEAN or document["position"] == position:
                    title = "Clean evidence" if document["evidence"] == CLEAN else f"Misleading evidence ({position})"
                    with st.expander(title, expanded=True):
                        st.markdown(misleading_evidence.edit_markdown(document), unsafe_allow_html=True)
            answers = misleading_evidence.responses(engine(), filters.run_ids, uid)
            answers = answers[(answers["model"] == model) & answers["condition"].isin([CLOSED_BOOK, CLEAN, condition])]
            for row in answers.itertuples():
                st.markdown(f"**{plain_markdown(row.condition)}** (response #{row.response_id}):")
                st.code(row.text or "", language=None)
