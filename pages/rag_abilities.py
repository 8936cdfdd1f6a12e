"""RAG abilities (LIT-RAGBench): which generator ability fails — accuracy per category and aspect with 95% CIs,
over-abstention vs abstention accuracy, English beside Japanese, and the responses behind each number."""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core.analysis import readmodel
from core.protocols.lit_ragbench import analysis as lit
from core.scoring.judges.names import judge_label
from ui import charts, results_view
from ui.auth import require_page
from ui.paper_tables import paper_tables_panel
from ui.session import engine
from ui.tables import state_caption

LANGUAGES = {"en": "English", "ja": "Japanese"}
CONDITION_NAMES = {"": "default (seeded shuffle, tables as stored)", "reshuffled": "reshuffled (another seed)",
                   "html_as_text": "HTML tables as text",
                   "paper_prompts": "paper prompts (the authors' released generator and judge prompts)"}


@st.cache_data(ttl=5, show_spinner=False)
def _runs(version: tuple) -> pd.DataFrame:
    return lit.lit_runs(engine())


@st.cache_data(max_entries=8, show_spinner=False)
def _judges(run_ids: tuple[int, ...], version: tuple) -> list[str]:
    return [j for j in readmodel.run_judges(engine(), list(run_ids)) if j != readmodel.RULE_JUDGE]


@st.cache_data(max_entries=8, show_spinner="Computing accuracy per category and aspect…")
def _report(run_ids: tuple[int, ...], judge: str, version: tuple) -> dict[str, pd.DataFrame]:
    return lit.lit_report(engine(), list(run_ids), judge)


def _pct(value: float, low: float, high: float, n: int, small: bool) -> str:
    return "no data" if pd.isna(value) else f"{value:.1%} [{low:.1%}, {high:.1%}] n={n}{'†' if small else ''}"


def _errors(frame: pd.DataFrame, value: str, low: str, high: str) -> dict:
    return {"type": "data", "symmetric": False, "array": (frame[high] - frame[value]) * 100,
            "arrayminus": (frame[value] - frame[low]) * 100}


def radar(cells: pd.DataFrame) -> go.Figure:
    """One polygon per model over the five categories (a category without data is a gap, never 0)."""
    fig = go.Figure()
    for model, mine in cells.groupby("model", sort=True):
        values = mine.set_index("key").reindex(lit.CATEGORIES)
        r = [None if pd.isna(v) else v * 100 for v in values["value"]]
        fig.add_scatterpolar(r=[*r, r[0]], theta=[*lit.CATEGORIES, lit.CATEGORIES[0]], name=model, connectgaps=False,
                             customdata=[*values["n"].fillna(0).astype(int), int(values["n"].fillna(0).iloc[0])],
                             hovertemplate="%{theta}: %{r:.1f}% (n=%{customdata})<extra>%{fullData.name}</extra>")
    fig.update_layout(polar={"radialaxis": {"range": [0, 100], "ticksuffix": "%"}}, margin={"t": 30})
    return fig


def bars(cells: pd.DataFrame) -> go.Figure:
    """Grouped bars per category or aspect, one colour per model, 95% CI error bars, n (and † small n) in the hover."""
    fig = go.Figure()
    for model, mine in cells.groupby("model", sort=True):
        n_text = mine["n"].astype(str) + np.where(mine["small_n"], " †", "")
        fig.add_bar(name=model, x=mine["label"], y=mine["value"].fillna(0.0) * 100, text=charts.no_data_text(mine["value"]),
                    textposition="outside", error_y=_errors(mine, "value", "ci_low", "ci_high"), customdata=n_text,
                    hovertemplate="%{x}: %{y:.1f}% (n=%{customdata})<extra>%{fullData.name}</extra>")
    fig.update_layout(barmode="group", yaxis_title="accuracy (%)", yaxis_range=[0, 105], margin={"t": 30})
    return fig


def tradeoff(table: pd.DataFrame) -> go.Figure:
    """Over-abstention (x) against Abstention accuracy (y) per model and language, both with 95% CIs."""
    fig = go.Figure()
    shown = table.dropna(subset=["over_abstention", "abstention_accuracy"])
    for language, mine in shown.groupby("language", sort=True):
        fig.add_scatter(x=mine["over_abstention"] * 100, y=mine["abstention_accuracy"] * 100, mode="markers+text",
                        text=mine["model"], textposition="top center", name=LANGUAGES.get(language, language),
                        marker={"size": 11, "symbol": "circle" if language == "en" else "diamond"},
                        error_x=_errors(mine, "over_abstention", "oa_ci_low", "oa_ci_high"),
                        error_y=_errors(mine, "abstention_accuracy", "aa_ci_low", "aa_ci_high"),
                        customdata=np.column_stack([mine["oa_n"], mine["aa_n"]]),
                        hovertemplate="%{text}<br>over-abstention %{x:.1f}% (n=%{customdata[0]})<br>abstention "
                                      "accuracy %{y:.1f}% (n=%{customdata[1]})<extra>%{fullData.name}</extra>")
    fig.update_layout(xaxis_title="over-abstention on answerable questions (%) — lower is better",
                      yaxis_title="Abstention accuracy (%) — higher is better", xaxis_range=[-5, 105],
                      yaxis_range=[-5, 105], margin={"t": 30})
    return fig


def overview(report: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per model and language: category average, all questions, over-abstention, Abstention accuracy."""
    rows = report["overall"].merge(report["abstention"], on=[*lit.GROUP, "judge", "judge_label"], suffixes=("", "_a"))
    return pd.DataFrame({
        "model": rows["model"], "language": rows["language"].map(lambda x: LANGUAGES.get(x, x)),
        "category-averaged accuracy": [_pct(v, lo, hi, n, False) + f" over {k}/5 categories{'†' if s else ''}"
                                       for v, lo, hi, n, s, k in
                                       zip(rows["value"], rows["ci_low"], rows["ci_high"], rows["n"],
                                           rows["small_n"], rows["n_categories"], strict=True)],
        "all questions": [_pct(v, lo, hi, n, False) for v, lo, hi, n in
                          zip(rows["micro_value"], rows["micro_ci_low"], rows["micro_ci_high"], rows["n"], strict=True)],
        "over-abstention": [_pct(v, lo, hi, n, 0 < n < 30) + (f" (undetermined: {u})" if u else "") for v, lo, hi, n, u in
                            zip(rows["over_abstention"], rows["oa_ci_low"], rows["oa_ci_high"], rows["oa_n"],
                                [lit.undetermined_text(r) for _, r in rows.iterrows()], strict=True)],
        "Abstention accuracy": [_pct(v, lo, hi, n, 0 < n < 30) for v, lo, hi, n in
                                zip(rows["abstention_accuracy"], rows["aa_ci_low"], rows["aa_ci_high"], rows["aa_n"],
                                    strict=True)],
        "judge": rows["judge_label"],
    })


def cell_table(cells: pd.DataFrame) -> pd.DataFrame:
    """The numbers behind a chart: value [CI] n and the responses left out, per model and key."""
    return pd.DataFrame({"model": cells["model"], "language": cells["language"], "category / aspect": cells["label"],
                         "accuracy [95% CI] n": [_pct(v, lo, hi, n, s) for v, lo, hi, n, s in
                                                 zip(cells["value"], cells["ci_low"], cells["ci_high"], cells["n"],
                                                     cells["small_n"], strict=True)],
                         **readmodel.state_columns(cells), "judge": cells["judge_label"]})


def settings_view(settings: pd.DataFrame) -> pd.DataFrame:
    """Product prompts beside the paper's released ones: category average [CI] n under each, and paper - product."""
    sides = {name: [_pct(v, lo, hi, n, False) for v, lo, hi, n in
                    zip(settings[f"{name}_value"], settings[f"{name}_ci_low"], settings[f"{name}_ci_high"],
                        settings[f"{name}_n"], strict=True)] for name in ("product", "paper")}
    return pd.DataFrame({"model": settings["model"], "language": settings["language"].map(lambda x: LANGUAGES.get(x, x)),
                         "product prompts": sides["product"], "paper prompts": sides["paper"],
                         "paper − product": settings["diff_paper_product"].map(lambda d: f"{d:+.1%}"),
                         "judge": settings["judge_label"]})


def detail(response_id: int, judge: str) -> None:
    """One response: question, reference, the documents in the shuffled order the model saw, verdicts and reasons."""
    d = lit.response_detail(engine(), response_id, judge)
    if not d:
        st.warning(f"Response {response_id} no longer exists.")
        return
    st.markdown(f"**{d['model']}** on `{d['instance_uid']}` ({LANGUAGES.get(d['language'], d['language'])}, condition "
                f"{d['condition'] or 'default'}, {d['prompt_setting']} prompts) — aspects: {', '.join(d['aspects'])}")
    st.text_area("Question", d["query"], height=90, disabled=True, key=f"lit_q_{response_id}")
    left, right = st.columns(2)
    left.text_area("Response", d["response"], height=160, disabled=True, key=f"lit_r_{response_id}")
    right.text_area(f"Reference answer ({d['answer_type']})", d["reference_answer"], height=70, disabled=True,
                    key=f"lit_a_{response_id}")
    right.text_area("Reference reasoning", d["reasoning"], height=70, disabled=True, key=f"lit_w_{response_id}")
    st.markdown(f"**Verdicts of {d['judge_label']}**")
    st.dataframe(d["verdicts"], hide_index=True, width="stretch")
    positives = [doc["prompt_position"] for doc in d["documents"] if doc["role"] == "positive"]
    st.markdown(f"**Context as the model saw it**: {len(d['documents'])} documents, order {d['order']} with seed "
                f"{d['seed']} (this instance's shuffle seed {d['bundle_seed']}); positives at "
                f"{', '.join(f'[doc {p}]' for p in positives) or 'none (negatives only)'}.")
    for doc in d["documents"]:
        head = f"[doc {doc['prompt_position']}] {doc['role']} · {doc['content_type']} · stored #{doc['stored_position']}"
        with st.expander(head + (f" — {doc['title']}" if doc["title"] else ""), expanded=False):
            st.text(doc["text"][:6000])


require_page(__file__)
st.title("RAG abilities")
st.caption("LIT-RAGBench: accuracy per ability category (Integration, Reasoning, Logic, Table, Abstention) and aspect, "
           "in English and Japanese. A question counts for every aspect it has. Accuracy = the judge's 1/0 against the "
           "reference answer and reasoning (on Abstention questions, declining is the right answer). Cells: value "
           "[95% CI] n; † n < 30 (small sample; on the category average: some category has n < 30); \"no data\" = "
           "nothing measured (never 0); judge errors and unscored responses are counted and left out.")

version = results_view.data_version()
runs = _runs(version)
if runs.empty:
    st.info("No LIT-RAGBench responses yet. Import the benchmark with `gauntlet lit-ragbench import "
            "../shared/datasets/lit-ragbench/en.jsonl ../shared/datasets/lit-ragbench/ja.jsonl`, then run it: "
            "`gauntlet run --models MODEL,baseline:always-refuse --judge llm:JUDGE`.", icon=":material/info:")
    st.stop()

labels = {int(r["run_id"]): f"#{r['run_id']} {r['name'] or 'run'} ({r['status']}, {r['responses']} LIT responses)"
          for _, r in runs.iterrows()}
with st.sidebar:
    st.subheader("RAG abilities filters")
    chosen = st.multiselect("Runs", list(labels), default=[next(iter(labels))], format_func=labels.get, key="lit_runs")
    run_ids = tuple(sorted(chosen or [next(iter(labels))]))
    judges = _judges(run_ids, version)
    if not judges:
        st.warning("These runs are not scored yet: `gauntlet score RUN --judge llm:JUDGE`.")
        st.stop()
    judge = st.selectbox("Judge", judges, format_func=judge_label, key="lit_judge")
    report = _report(run_ids, judge, version)
    conditions = sorted(report["overall"]["condition"].unique())
    condition = st.selectbox("Condition", conditions, format_func=lambda c: CONDITION_NAMES.get(c, c), key="lit_cond")

views = {key: frame[frame["condition"] == condition] if "condition" in frame else frame for key, frame in report.items()}
st.caption(f"Judge: **{judge_label(judge)}** · runs {', '.join(f'#{r}' for r in run_ids)} · condition "
           f"{CONDITION_NAMES.get(condition, condition)}.")
if judge == "heuristic":
    st.warning("The **heuristic (lexical, offline)** judge counts an answer correct when it contains the reference "
               "answer and an abstention when refusal phrases dominate: paraphrases, computed values and unit changes "
               "are missed. Use an LLM judge for real numbers.", icon=":material/warning:")
if views["overall"].empty:
    st.info("No scored LIT-RAGBench responses for this choice.")
    st.stop()

st.dataframe(overview(views), hide_index=True, width="stretch")
state_caption(views["overall"], lit.ACCURACY, "Responses behind the table (each once)")
if not report["settings"].empty:
    st.markdown("**Prompt settings side by side**: category-averaged accuracy under the product's prompts and under "
                "the authors' released prompts (condition paper_prompts), same runs and judge.")
    st.dataframe(settings_view(report["settings"]), hide_index=True, width="stretch")
with st.expander("The paper's Table 2 (category accuracy per model, Japanese and English)", expanded=False):
    paper_tables_panel(lit.NAME, run_ids, judge, key="lit_paper")
tabs = st.tabs(["Categories", "Aspects", "Abstention trade-off", "English vs Japanese", "Drill-down"])
present = [code for code in LANGUAGES if code in set(views["categories"]["language"])]

with tabs[0]:
    language = st.radio("Language", present, format_func=LANGUAGES.get, horizontal=True, key="lit_cat_lang")
    cells = views["categories"][views["categories"]["language"] == language]
    charts.show_chart(radar(cells), cells, "lit_category_radar")
    state_caption(cells, lit.ACCURACY, "Behind the radar, summed over its cells")
    charts.show_chart(bars(cells), cells, "lit_category_bars")
    st.dataframe(cell_table(cells), hide_index=True, width="stretch")
    state_caption(cells, lit.ACCURACY, "Behind the bars and table, summed over the cells")

with tabs[1]:
    language = st.radio("Language", present, format_func=LANGUAGES.get, horizontal=True, key="lit_asp_lang")
    cells = views["aspects"][views["aspects"]["language"] == language]
    charts.show_chart(bars(cells), cells, "lit_aspect_bars")
    st.dataframe(cell_table(cells), hide_index=True, width="stretch")
    state_caption(cells, lit.ACCURACY, "Behind the bars and table, summed over the cells (a question counts for each "
                  "of its aspects)")

with tabs[2]:
    st.caption("Each model twice (● English, ◆ Japanese): x = share of answerable questions (Integration, Reasoning, "
               "Logic, Table) it declined and got wrong, y = accuracy on the Abstention category. Top left is best; "
               "bars are 95% CIs.")
    charts.show_chart(tradeoff(views["abstention"]), views["abstention"], "lit_abstention_tradeoff")
    state_caption(views["overall"], lit.ACCURACY, "Responses behind the chart")

with tabs[3]:
    level = st.radio("By", ["category", "aspect"], horizontal=True, key="lit_lang_level")
    table = views["languages" if level == "category" else "aspect_languages"]
    model = st.selectbox("Model", sorted(table["model"].unique()), key="lit_lang_model")
    mine = table[table["model"] == model]
    series = [("English", "value_en", "ci_low_en", "ci_high_en"), ("Japanese", "value_ja", "ci_low_ja", "ci_high_ja")]
    charts.show_chart(charts.paired_bars(mine, "label", series, "accuracy (%)"), mine, "lit_en_ja")
    st.dataframe(mine[["label", "value_en", "n_en", "value_ja", "n_ja", "diff_ja_en", "judge_label", *lit.LANGUAGE_STATES]],
                 hide_index=True,
                 width="stretch", column_config={c: st.column_config.NumberColumn(c, format="percent")
                                                 for c in ("value_en", "value_ja", "diff_ja_en")})
    state_caption(views["overall"][views["overall"]["model"] == model], lit.ACCURACY,
                  f"Responses of {model} behind the chart and table")

with tabs[4]:
    scores = views["scores"]
    c1, c2, c3, c4 = st.columns(4)
    model = c1.selectbox("Model", sorted(scores["model"].unique()), key="lit_dd_model")
    language = c2.selectbox("Language", present, format_func=LANGUAGES.get, key="lit_dd_lang")
    keys = ["any", *lit.CATEGORIES, *lit.ASPECTS]
    key = c3.selectbox("Category or aspect", keys, key="lit_dd_key",
                       format_func=lambda k: k if k in ("any", *lit.CATEGORIES) else f"  {lit.ASPECTS[k].label} ({k})")
    outcome = c4.selectbox("Judged", ["wrong", "right", "all"], key="lit_dd_outcome")
    rows = scores[(scores["model"] == model) & (scores["language"] == language)]
    if key != "any":
        rows = rows[rows["categories" if key in lit.CATEGORIES else "aspects"].map(lambda xs, k=key: k in xs)]
    if outcome != "all":
        rows = rows[rows[lit.ACCURACY] == (1.0 if outcome == "right" else 0.0)]
    listed = rows[["response_id", "instance_uid", "aspects", lit.ACCURACY, lit.REFUSAL, lit.OVER_ABSTENTION]]
    st.caption(f"{len(listed)} responses ({judge_label(judge)}).")
    if listed.empty:
        st.info("No responses behind this selection.")
    else:
        st.dataframe(listed.assign(aspects=listed["aspects"].map(", ".join)), hide_index=True, width="stretch")
        names = dict(zip(listed["response_id"], listed["instance_uid"], strict=True))
        picked = st.selectbox("Open a response", list(names), format_func=lambda r: f"{names[r]} (response {r})",
                              key="lit_dd_pick")
        detail(int(picked), judge)
