"""Stress tests: the page's content (pages/stress_tests.py is the thin script that checks the role and calls render;
the code lives here so a rerun does not recompile it)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.protocols.kb_corruption import CONDITION_NAMES, NAME, SEVERITIES, TYPE_LABELS, TYPES
from core.protocols.kb_corruption import NAME as KB_CORRUPTION
from core.protocols.kb_corruption import analysis as kb_corruption
from core.scoring.judges.names import judge_label
from core.store.sanitize import inline_code, plain_markdown
from ui import charts, results_view
from ui.paper_tables import paper_tables_panel
from ui.session import engine
from ui.tables import state_caption


@st.cache_data(max_entries=8, show_spinner="Loading RAGStress results…")
def load(run_ids: tuple[int, ...], judge: str, version: tuple) -> dict[str, pd.DataFrame]:
    """Every RAGStress aggregate of the runs under `judge` (cached per data version)."""
    scores = kb_corruption.stress_scores(engine(), list(run_ids), judge)
    table = kb_corruption.accuracy(scores)
    catalog = results_view.models(version)
    per_model, correlations = kb_corruption.capability_vs_robustness(table, catalog.loc[catalog["is_baseline"], "model"])
    return {"scores": scores, "accuracy": table, "impact": kb_corruption.corruption_impact(scores),
            "gaps": kb_corruption.resilience_gaps(scores), "mixed": kb_corruption.mixed_vs_worst(scores, table),
            "curves": kb_corruption.severity_curves(table), "robustness": per_model, "correlations": correlations,
            "retrieval": kb_corruption.retrieval_profile(engine(), scores["instance_uid"].unique())}


def pct(value: float, low: float = np.nan, high: float = np.nan, n: int | None = None, unparseable: int = 0) -> str:
    """'62.0% [55.1, 68.4] n=120† unparseable=3' (no data when missing, † when n < 30, unparseable when any)."""
    if pd.isna(value):
        return "no data"
    ci = f" [{low:.1%}, {high:.1%}]" if not pd.isna(low) else ""
    size = "" if n is None else f" n={n}" + ("†" if 0 < n < 30 else "")
    return f"{value:.1%}{ci}{size}" + (f" unparseable={unparseable}" if unparseable else "")


def delta_heatmap(impact: pd.DataFrame, label: str) -> go.Figure:
    """Type x severity heatmap of one model's corruption impact (percentage points), 'no data' where missing."""
    cells = impact.set_index(["type", "severity"])
    z = [[cells["delta"].get((t, s), np.nan) * 100 for s in SEVERITIES] for t in TYPES]
    text = [[("no data" if pd.isna(cells["delta"].get((t, s), np.nan)) else
              f"{cells.loc[(t, s), 'delta'] * 100:+.1f} pp<br>n={int(cells.loc[(t, s), 'n'])}"
              + ("†" if cells.loc[(t, s), "small_n"] else "")) for s in SEVERITIES] for t in TYPES]
    fig = go.Figure(go.Heatmap(z=z, x=list(SEVERITIES), y=[TYPE_LABELS[t] for t in TYPES], text=text,
                               texttemplate="%{text}", colorscale="RdBu", reversescale=True, zmid=0,
                               colorbar={"title": "Δ pp"}))
    fig.update_layout(title=f"Corruption impact Δ = clean − corrupted accuracy · {label}", margin={"t": 50})
    return fig


def severity_figure(table: pd.DataFrame, model: str, label: str) -> go.Figure:
    """Accuracy by severity, one line per corruption type, 95% CIs, with the clean level dotted."""
    fig = go.Figure()
    mine = table[table["model"] == model]
    for kind in TYPES:
        d = mine[mine["type"] == kind].set_index("severity").reindex(list(SEVERITIES))
        fig.add_scatter(x=list(SEVERITIES), y=d["accuracy"] * 100, mode="lines+markers", name=TYPE_LABELS[kind],
                        error_y={"type": "data", "symmetric": False, "array": (d["ci_high"] - d["accuracy"]) * 100,
                                 "arrayminus": (d["accuracy"] - d["ci_low"]) * 100},
                        customdata=d["n"], hovertemplate="%{x}: %{y:.1f}% (n=%{customdata})")
    clean = mine.loc[mine["condition"] == "clean", "accuracy"]
    if not clean.empty and not pd.isna(clean.iloc[0]):
        fig.add_hline(y=clean.iloc[0] * 100, line_dash="dot", annotation_text="clean")
    fig.update_layout(title=f"Accuracy by severity · {model} · {label}", yaxis_title="accuracy (%)",
                      yaxis={"range": [0, 105]}, margin={"t": 50})
    return fig


def mixed_figure(mixed: pd.DataFrame, label: str) -> go.Figure:
    """Mixed-KB accuracy beside the worst type-filtered accuracy per model."""
    frame = mixed.assign(worst_label=mixed["worst_condition"])
    fig = charts.paired_bars(frame, "model", [("unfiltered mixed", "mixed_accuracy", "mixed_low", "mixed_high"),
                                              ("worst type-filtered", "worst_accuracy", "worst_low", "worst_high")],
                             "accuracy (%)")
    fig.update_layout(title=f"Mixed knowledge base vs worst case · {label}")
    return fig


def capability_figure(per_model: pd.DataFrame, label: str) -> go.Figure:
    """No-retrieval accuracy against accuracy under corrupted retrieval, one point per model."""
    fig = go.Figure(go.Scatter(x=per_model["no_retrieval"] * 100, y=per_model["corrupted"] * 100,
                               mode="markers+text", text=per_model["model"], textposition="top center"))
    fig.update_layout(title=f"Capability vs robustness · {label}", xaxis_title="no-retrieval accuracy (%)",
                      yaxis_title="mean accuracy over the 12 corrupted conditions (%)", margin={"t": 50})
    return fig


def show_response(response_id: int, judge: str) -> None:
    """One response with the documents its prompt held, in order, and the verdict."""
    d = kb_corruption.response_documents(engine(), int(response_id), judge)
    if not d:
        st.warning(f"Response {response_id} no longer exists.")
        return
    verdict = d["verdict"] or {}
    st.markdown(f"**{plain_markdown(d['model'])}** on {inline_code(d['instance_uid'])} · condition "
                f"{inline_code(d['condition'])} · key **{d['answer_key']}** · verdict "
                f"{plain_markdown(str(verdict.get('value', 'unscored')))} ({plain_markdown(verdict.get('reason') or '')})")
    st.markdown(f"**Question:** {plain_markdown(d['query'])}")
    st.caption(" · ".join(f"{k}. {plain_markdown(v)}" for k, v in d["choices"].items()))
    st.text_area("Answer", d["response"], height=80, disabled=True, key=f"rs_answer_{response_id}")
    if not d["documents"]:
        st.info("No documents in this prompt (no retrieval).")
    for doc in d["documents"]:
        kind = doc["corruption_type"] + (f" · {doc['severity']}" if doc["severity"] else "")
        st.markdown(f"**[doc {doc['rank']}]** {inline_code(doc['doc_id'])} · {kind} · "
                    f"{'own entry' if doc['own_entry'] else 'another question'} · marks {doc['marked_key']}"
                    + (f" · claims {doc['claimed_key']}" if doc["claimed_key"] else ""))
        st.text(doc["text"])


def render() -> None:
    """Title, filters and every RAGStress table, chart and drill-down of the chosen runs and judge."""
    st.title("Stress tests")
    st.caption("RAGStress: one knowledge base holds a clean and 12 corrupted entries of every MMLU question (factual "
               "corruption, numeric typo, relevance poisoning, contradiction injection, each subtle / moderate / obvious); "
               "each condition is a metadata filter over the same index (top-5). A controlled robustness comparison, not "
               "a general leaderboard. Accuracy is the first option letter against the key.")

    filters = results_view.sidebar_filters(subset=False, domains=False, protocol=KB_CORRUPTION, ias=False)
    if filters:
        held = results_view.holds_protocol(KB_CORRUPTION, filters.run_ids, filters.version)
        data = load(filters.run_ids, filters.judge, filters.version) if held else {}
        scores, table = (data["scores"], data["accuracy"]) if held else (pd.DataFrame(), pd.DataFrame())
        label = judge_label(filters.judge)
        if scores.empty:
            st.info("No RAGStress responses in these runs. Build the benchmark with `gauntlet kb-corruption build`, import "
                    "it and answer it with `gauntlet run ... --conditions` (the build prints the command).")
            st.stop()
        st.caption(f"Verdicts of **{label}** (mcq_accuracy: the same option-letter rule under every judge). † n < 30; "
                   "not-applicable items (numeric typos of questions whose entry holds no number) are counted, "
                   "never scored 0.")
        with st.expander("The paper's tables: Table 1 (model x 15 conditions), Δ, Γ, mixed vs worst, severity curves"):
            paper_tables_panel(NAME, filters.run_ids, filters.judge, key="rs_paper", on_request=True)
        models = sorted(scores["model"].unique())
        tabs = st.tabs(["Accuracy", "Corruption impact", "Severity", "Mixed vs worst", "Capability vs robustness",
                        "Resilience gaps", "Retrieval", "Drill-down"])

        with tabs[0]:
            wide = table.assign(cell=[pct(a, lo, hi, n, u) for a, lo, hi, n, u in
                                      zip(table["accuracy"], table["ci_low"], table["ci_high"], table["n"],
                                          table["n_unparseable"], strict=True)])
            grid = wide.pivot(index="condition", columns="model", values="cell").reindex(
                [c for c in CONDITION_NAMES if c in set(wide["condition"])])
            st.dataframe(grid, width="stretch")
            state_caption(table, kb_corruption.METRIC, "Every cell above (unparseable: no option letter read)")
            st.download_button("Download accuracy (CSV)", table.to_csv(index=False).encode("utf-8"),
                               file_name="ragstress_accuracy.csv", mime="text/csv", key="rs_acc_csv")

        with tabs[1]:
            impact = data["impact"]
            model = st.selectbox("Model", models, key="rs_delta_model")
            mine = impact[impact["model"] == model]
            if mine.empty or mine["delta"].isna().all():
                st.info("No data: this model has no question answered both clean and corrupted.")
            else:
                charts.show_chart(delta_heatmap(mine, label), mine, "ragstress_delta")
                state_caption(table[table["model"] == model], kb_corruption.METRIC, f"Responses of {model} behind the map")
            st.dataframe(impact, hide_index=True, width="stretch")
            state_caption(table, kb_corruption.METRIC, "Responses behind the table")

        with tabs[2]:
            model = st.selectbox("Model", models, key="rs_curve_model")
            charts.show_chart(severity_figure(table, model, label), table[table["model"] == model], "ragstress_severity")
            state_caption(table[table["model"] == model], kb_corruption.METRIC, f"Responses of {model} behind the curves")
            curves = data["curves"]
            flagged = curves[curves["non_monotonic"]]
            for _, row in flagged.iterrows():
                strength = "beyond the moderate point's 95% CI" if row["beyond_ci"] else "within noise (CIs overlap)"
                st.warning(f"{plain_markdown(row['model'])}: {TYPE_LABELS[row['type']]} is not monotonic in severity "
                           f"({row['shape']}; {strength}).", icon=":material/ssid_chart:")
            st.dataframe(curves, hide_index=True, width="stretch")

        with tabs[3]:
            mixed = data["mixed"]
            if mixed.empty:
                st.info("No data: needs the mixed and at least one type-filtered condition.")
            else:
                charts.show_chart(mixed_figure(mixed, label), mixed, "ragstress_mixed")
                st.caption("Mixed accuracy above the worst type-filtered case means a mixed knowledge base hides the "
                           "worst case (clean entries stay retrievable). p: McNemar on the questions answered under both.")
                st.dataframe(mixed, hide_index=True, width="stretch")
                state_caption(table, kb_corruption.METRIC, "Responses behind the chart and table")

        with tabs[4]:
            per_model, correlations = data["robustness"], data["correlations"]
            charts.show_chart(capability_figure(per_model, label), per_model, "ragstress_capability")
            st.caption("Spearman over models (baselines excluded) of no-retrieval accuracy against accuracy under the "
                       "corrupted conditions.")
            st.dataframe(correlations, hide_index=True, width="stretch")
            state_caption(table, kb_corruption.METRIC, "Responses behind the chart and table")

        with tabs[5]:
            st.caption("Γ(M1, M2, type) = mean over severities of Δ(M2) − Δ(M1) on the questions both answered clean and "
                       "at every severity: positive means M2 is the more vulnerable. Paired t-test; Bonferroni over rows.")
            st.dataframe(data["gaps"], hide_index=True, width="stretch")
            state_caption(table, kb_corruption.METRIC, "Responses behind the table")

        with tabs[6]:
            st.caption("What each filter returned at build time: queries with zero documents (the no-retrieval rate), how "
                       "often the question's own entry was retrieved and ranked first, the corrupted share of the "
                       "retrieved documents.")
            st.dataframe(data["retrieval"], hide_index=True, width="stretch")

        with tabs[7]:
            c1, c2 = st.columns(2)
            model = c1.selectbox("Model", models, key="rs_drill_model")
            present = [c for c in CONDITION_NAMES if c in set(scores["condition"])]
            condition = c2.selectbox("Condition", present, key="rs_drill_condition")
            rows = kb_corruption.item_rows(scores, model, condition)
            st.dataframe(rows, hide_index=True, width="stretch")
            if not rows.empty:
                labels = {int(r.response_id): f"{r.instance_uid} · correct={r.correct}" for r in rows.itertuples()}
                chosen = st.selectbox("Open a response", list(labels), format_func=labels.get, key="rs_drill_pick")
                if chosen is not None:
                    show_response(chosen, filters.judge)
