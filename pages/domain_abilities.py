"""Domain abilities (DomainRAG): score vs noise count per gold position ("lost in the middle"), HTML vs text, ability x
setting per model, and adherence to anti-references."""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.analysis.readmodel import state_columns
from core.protocols.domainrag import NAME
from core.protocols.domainrag import analysis as dr
from core.scoring.judges.names import judge_label
from ui import charts, results_view
from ui.auth import require_page
from ui.drilldown import drilldown
from ui.paper_tables import paper_tables_panel
from ui.session import engine, filter_slot
from ui.tables import state_caption

METRICS = {"exact_match": "EM (share of answer parts contained)", "strict_exact_match": "strict EM",
           "token_f1": "token F1 (characters)", "rouge_l": "ROUGE-L (characters)",
           "domainrag.token_f1_jieba": "F1 (the authors', jieba)", "domainrag.rouge_l_jieba": "ROUGE-L (the authors', jieba)",
           "consistency": "consistency (judge 0-5, normalised; long answers)",
           "domainrag.ge_paper": "GE, the paper's criteria (LLM judge 0-5, normalised; long answers)"}
LINES = {"first": "gold first", "middle": "gold in the middle", "last": "gold last",
         dr.REPEATED: "gold repeated (same size)"}
SETTING_ORDER = ["close_book", "golden", "bm25_top1", "bm25_top3", "dense_top1", "dense_top3", "released_bm25_top1",
                 "released_bm25_top3", "released_dense_top1", "released_dense_top3", "noisy", "repeated_gold", "html",
                 "html_as_text", "full_pages", "anti_reference"]


@st.cache_data(ttl=5, show_spinner=False)
def _runs(version: tuple) -> pd.DataFrame:
    return dr.domainrag_runs(engine())


@st.cache_data(max_entries=8, show_spinner=False)
def _judges(run_ids: tuple[int, ...], version: tuple) -> list[str]:
    return [j for j in dr.domainrag_judges(engine(), list(run_ids)) if j != "rule"]


@st.cache_data(max_entries=8, show_spinner="Computing the DomainRAG views…")
def _report(run_ids: tuple[int, ...], judge: str, metric: str, version: tuple) -> dict[str, pd.DataFrame]:
    return dr.domainrag_report(engine(), list(run_ids), judge, metric)


def _pct(value: float, low: float, high: float, n: int, small: bool) -> str:
    return "no data" if pd.isna(value) else f"{value:.1%} [{low:.1%}, {high:.1%}] n={n}{'†' if small else ''}"


def _errors(frame: pd.DataFrame) -> dict:
    return {"type": "data", "symmetric": False, "array": (frame["ci_high"] - frame["value"]) * 100,
            "arrayminus": (frame["value"] - frame["ci_low"]) * 100}


def _n_text(frame: pd.DataFrame) -> pd.Series:
    return frame["n"].astype(int).astype(str) + np.where(frame["small_n"], " †", "")


def table(frame: pd.DataFrame, keys: dict[str, str]) -> pd.DataFrame:
    """The numbers behind a chart: value [CI] n and the responses left out, with the judge."""
    shown = {label: frame[key] for key, label in keys.items()}
    return pd.DataFrame({**shown, "value [95% CI] n": [_pct(v, lo, hi, n, s) for v, lo, hi, n, s in zip(
        frame["value"], frame["ci_low"], frame["ci_high"], frame["n"], frame["small_n"], strict=True)],
        **state_columns(frame), "judge": frame["judge_label"]})


def noise_lines(curve: pd.DataFrame) -> go.Figure:
    """Score vs noise count, one line per gold position and the repeated-gold control; the golden reference alone as
    a dashed level."""
    fig = go.Figure()
    for line, label in LINES.items():
        mine = curve[curve["line"] == line].sort_values("noise_count")
        if mine.empty:
            continue
        fig.add_scatter(x=mine["noise_count"], y=mine["value"] * 100, mode="lines+markers", name=label,
                        error_y=_errors(mine), customdata=_n_text(mine),
                        hovertemplate="%{x} noise: %{y:.1f}% (n=%{customdata})<extra>%{fullData.name}</extra>")
    golden = curve[curve["line"] == dr.NO_NOISE]
    if not golden.empty and pd.notna(golden["value"].iloc[0]):
        fig.add_hline(y=float(golden["value"].iloc[0]) * 100, line_dash="dash", line_color="#888",
                      annotation_text=f"{dr.NO_NOISE}, n={int(golden['n'].iloc[0])}")
    fig.update_layout(xaxis_title="noise passages beside the gold one", yaxis_title="score (%)", yaxis_range=[0, 105],
                      xaxis={"tickvals": [4, 9, 14, 19, 24]}, margin={"t": 30})
    return fig


def grouped_bars(frame: pd.DataFrame, x: str, series: str, labels: dict[str, str] | None = None) -> go.Figure:
    """Grouped bars (x by series) with 95% CI error bars, n and † in the hover, 'no data' where nothing was measured."""
    fig = go.Figure()
    for name, mine in frame.groupby(series, sort=False):
        fig.add_bar(name=(labels or {}).get(name, name), x=mine[x], y=mine["value"].fillna(0.0) * 100,
                    text=charts.no_data_text(mine["value"]), textposition="outside", error_y=_errors(mine),
                    customdata=_n_text(mine), hovertemplate="%{x}: %{y:.1f}% (n=%{customdata})<extra>%{fullData.name}"
                                                            "</extra>")
    fig.update_layout(barmode="group", yaxis_title="score (%)", yaxis_range=[0, 110], margin={"t": 30})
    return fig


def heatmap(cells: pd.DataFrame) -> go.Figure:
    """Ability x setting for one model: value % with n in each cell, 'no data' where the ability has no such setting."""
    settings = [s for s in SETTING_ORDER if s in set(cells["setting"])]
    abilities = [a for a in dr.ABILITY_LABELS if a in set(cells["ability"])]
    grid = cells.set_index(["ability", "setting"])
    z = np.full((len(abilities), len(settings)), np.nan)
    text = np.full(z.shape, "no data", dtype=object)
    for i, ability in enumerate(abilities):
        for j, setting in enumerate(settings):
            if (ability, setting) in grid.index:
                row = grid.loc[(ability, setting)]
                if pd.notna(row["value"]):
                    z[i, j] = row["value"] * 100
                    text[i, j] = f"{row['value']:.0%}<br>n={row['n']}{'†' if row['small_n'] else ''}"
    fig = go.Figure(go.Heatmap(z=z, x=settings, y=[dr.ABILITY_LABELS[a] for a in abilities], zmin=0, zmax=100,
                               colorscale="Viridis", text=text, texttemplate="%{text}", colorbar={"title": "%"},
                               hovertemplate="%{y} · %{x}: %{text}<extra></extra>"))
    fig.update_layout(margin={"t": 30}, xaxis_title="setting (anti_reference: scored against the anti-answer)")
    return fig


require_page(__file__)
st.title("Domain abilities")
st.caption("DomainRAG (Chinese college admissions): six abilities — extractive, conversational, structural (HTML vs "
           "text), faithful (anti-references), time-sensitive and multi-document QA — under close-book, golden, "
           "retrieved and noisy references. Cells: value [95% CI] n over questions (a setting made of several "
           "conditions is averaged per question first); † n < 30 (small sample); \"no data\" = nothing measured "
           "(never 0); not-applicable, judge errors and unscored responses are counted and left out.")

version = results_view.data_version()
runs = _runs(version)
if runs.empty:
    st.info("No DomainRAG responses yet. Build the instances with `gauntlet domainrag build`, import them with "
            "`gauntlet import var/built/domainrag.jsonl`, then run them under the settings you want, e.g. "
            "`gauntlet run --models MODEL --conditions ,close_book,bm25_top3,noise_9_middle,html,anti_reference`.",
            icon=":material/info:")
    st.stop()



def sidebar(found: pd.DataFrame) -> tuple[tuple[int, ...], str, str]:
    """Runs (newest first by default), one of the judges that scored them, and the metric."""
    names = {int(r["run_id"]): f"#{r['run_id']} {r['name'] or 'run'} ({r['status']}, {r['responses']} DomainRAG "
                               "responses)" for _, r in found.iterrows()}
    newest = [next(iter(names))]
    with filter_slot():
        st.subheader("Domain abilities filters")
        picked = tuple(sorted(st.multiselect("Runs", list(names), default=newest, format_func=names.get,
                                             key="dr_runs") or newest))
        scored = _judges(picked, version)
        if not scored:
            st.warning("These runs are not scored yet: `gauntlet score RUN --judge llm:JUDGE`.")
            st.stop()
        return (picked, st.selectbox("Judge", scored, format_func=judge_label, key="dr_judge"),
                st.selectbox("Metric", list(METRICS), format_func=METRICS.get, key="dr_metric"))


def view(frame: pd.DataFrame, empty: str, caption: str, figure, key: str, columns: dict[str, str]) -> None:
    """One view: what to run when it has no data; else its caption naming the judge, the chart (`figure(frame)`) with
    its CSV download, and the numbers behind it."""
    if frame.empty:
        st.info(empty)
        return
    st.caption(f"{caption} Judge {judge_label(judge)}.")
    charts.show_chart(figure(frame), frame, key)
    st.dataframe(table(frame, columns), hide_index=True, width="stretch")
    what = key.removeprefix("domainrag_").replace("_", " ")
    state_caption(frame, metric, f"Questions behind the {what} chart and table, summed over its cells")


run_ids, judge, metric = sidebar(runs)
report = _report(run_ids, judge, metric, version)
st.caption(f"Judge: **{judge_label(judge)}** · metric {METRICS[metric]} · runs {', '.join(f'#{r}' for r in run_ids)}.")
if judge == "heuristic":
    st.warning("With the **heuristic (lexical, offline)** judge, EM, F1 and ROUGE-L are exact; consistency is token F1 "
               "instead of an LLM's 0-5 score.", icon=":material/warning:")
if report["scores"].empty:
    st.info("No scored DomainRAG responses for this choice.")
    st.stop()

if (unknown_share := dr.unreadable_dense_share(report["scores"])) is not None:
    st.warning(dr.unreadable_dense_warning(unknown_share), icon=":material/translate:")
st.subheader("The paper's Table 2, reproduced")
paper_tables_panel(NAME, run_ids, judge, key="dr_paper")

models = sorted(report["scores"]["model"].unique())
tabs = st.tabs(["Lost in the middle", "HTML vs text", "Ability × setting", "Anti-reference adherence", "Drill-down"])

with tabs[0]:
    model = st.selectbox("Model", models, key="dr_noise_model")
    view(report["noise_curve"][report["noise_curve"]["model"] == model],
         "No noise-sweep responses: run extractive questions with the noise_N_first|middle|last conditions.",
         f"Extractive QA, {model}: the gold passage first, in the middle or last among N noise passages, and the gold "
         "passage repeated N + 1 times; dashed: the gold passage alone.", noise_lines, "domainrag_noise_curve",
         {"line": "line", "noise_count": "noise passages"})

with tabs[1]:
    view(report["html_vs_text"], "No structural responses: run structural questions with the default, html and "
         "html_as_text conditions.", "Structural QA: the same page as plain text (the golden reference), as cleaned "
         "HTML, and as that HTML converted to text with tables as Markdown.",
         lambda f: grouped_bars(f, "model", "format", dr.FORMAT_LABELS), "domainrag_html_vs_text",
         {"model": "model", "format_label": "format"})

with tabs[2]:
    model = st.selectbox("Model", models, key="dr_grid_model")
    view(report["ability_setting"][report["ability_setting"]["model"] == model], "No scored responses.",
         f"{model}: one cell per ability and setting; noisy = the 15 noise count × position conditions and "
         "repeated_gold = its 5 controls, each averaged per question; anti_reference is scored against the "
         "anti-answer.", heatmap, "domainrag_ability_setting", {"ability_label": "ability", "setting": "setting"})

with tabs[3]:
    scope = st.radio("Questions", list(dr.ANTI_SCOPES.values()), horizontal=True, key="dr_anti_scope")
    view(report["anti_adherence"][report["anti_adherence"]["scope"] == scope], "No faithful responses: run the "
         "faithful questions closed book and with the golden reference, and their anti-answer companions with the "
         "anti_reference condition.", "Faithful QA: the gold answer's score closed book and with the golden "
         "reference, and adherence to the anti-reference (the anti-answer's score when it is the only document: "
         "does the model follow the evidence it is given?). On 10 of the 49 questions the anti-answer repeats most "
         "gold items (a list with one item dropped or swapped), so exact match cannot tell the two answers apart "
         "there.", lambda f: grouped_bars(f, "model", "measure"), "domainrag_anti_adherence",
         {"model": "model", "measure": "measure"})

with tabs[4]:
    scores = report["scores"]
    c1, c2, c3 = st.columns(3)
    model = c1.selectbox("Model", models, key="dr_dd_model")
    abilities = [a for a in dr.ABILITY_LABELS if a in set(scores["ability"])]
    ability = c2.selectbox("Ability", [None, *abilities], key="dr_dd_ability",
                           format_func=lambda a: "any ability" if a is None else dr.ABILITY_LABELS[a])
    settings = [s for s in SETTING_ORDER if s in set(dr.cell_responses(scores, model, ability, None, judge, metric)["setting"])]
    setting = c3.selectbox("Setting", [None, *settings], key="dr_dd_setting",
                           format_func=lambda s: "any setting" if s is None else s)
    drilldown(dr.cell_responses(scores, model, ability, setting, judge, metric), judge, "dr_drill",
              f"Responses behind {model} · {METRICS[metric]}, lowest score first")
