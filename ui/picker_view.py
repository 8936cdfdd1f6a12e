"""The Pick a generator page's result: the decision with its weaknesses, the ranking (n in every metric cell, cost
apart and together), the rank-sets and segment differences from gold labels, and the downloads."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.analysis import decide_rules, decision, decision_report, picker, readmodel
from core.analysis.judge_check import fitness_notice
from core.analysis.readmodel import decision_scores as keys
from ui import results_view
from ui.session import engine
from ui.table_fit import fitting_columns

DEFAULT_CHOICE = "Default: the EnterpriseRAG paper's weights and every other protocol's headline metrics"


@st.cache_data(max_entries=8, show_spinner="Reading every protocol's metrics…")
def scores(run_ids: tuple[int, ...], judge: str, version: tuple) -> pd.DataFrame:
    """The decision's per-item scores of every protocol of the runs (readmodel decision_scores; cached per data
    version), on the response frame the other results views share (read once per data version)."""
    return keys.decision_scores(engine(), run_ids, judge, results_view.response_frame(run_ids, judge, version))


@st.cache_data(max_entries=64, show_spinner=False)
def _rank_part(kind: str, key: tuple, _compute) -> object:
    """One scores-only part of picker.rank (evidence, a paired test, the weaknesses), cached per data version and
    `key` (a floor, budget or weight change re-ranks without re-drawing the bootstraps that did not change)."""
    return _compute()


def rank(filters: results_view.Filters, scores: pd.DataFrame, spec: picker.PickSpec) -> picker.PickResult:
    """picker.rank of the page's scores (`scores(filters...)`), its scores-only parts cached per data version."""
    version = (filters.run_ids, filters.judge, filters.version)
    return picker.rank(scores, results_view.models(filters.version), spec, judge=filters.judge,
                       memo=lambda kind, key, compute: _rank_part(kind, (*version, *key), compute))


def _reset_choice() -> None:
    """A new preset: forget the weights and floors set for the previous one (they start from the preset again)."""
    for name in [k for k in st.session_state if str(k).startswith(("pk_w_", "pk_floor_", "pk_more_"))]:
        del st.session_state[name]


def _floor_slider(column, key: str, default: float | None) -> float | None:
    """A floor (ceiling where lower is better) in points over the metric's declared range; its lenient end is none."""
    entry = keys.decision_key(key)
    low, high = (round(v * 100) for v in entry.declaration.range)
    lenient = low if entry.metric.higher_is_better else high
    sign = "≥" if entry.metric.higher_is_better else "≤"
    start = lenient if default is None else round(default * 100)
    value = column.slider(f"{entry.label} {sign} (points)", low, high, start, key=f"pk_floor_{key}",
                          help=f"{entry.metric.meaning}. At {lenient}: no floor.")
    return None if value == lenient else value / 100


def choose(scores: pd.DataFrame) -> tuple[picker.PickSpec, list[str]]:
    """The product owner's choice on the page: a preset (data/decision/presets.yaml) or the default, a weight per
    metric grouped by protocol (headline metrics of every protocol the runs hold, the preset's, and any added), a
    floor per weighted metric and the budget; (the PickSpec, the default floors left out as undecidable)."""
    names = [DEFAULT_CHOICE, *decide_rules.presets()]
    choice = st.selectbox("Start from", names, key="pk_preset", on_change=_reset_choice,
                          help="A named preset, or the default; then change any weight or floor below.")
    if choice == DEFAULT_CHOICE:
        spec, dropped = picker.spec_from_rules(decide_rules.DecideRules(), scores)
    else:
        spec, dropped = picker.spec_from_rules(decide_rules.DecideRules(preset=choice, explicit_preset=True), scores)
        st.caption(decide_rules.preset(choice).description)
    offered = list(dict.fromkeys([*spec.metrics, *picker.reported_metrics(scores, picker.PickSpec(weights={}))]))
    catalogue = keys.decision_catalogue()
    measured = [k for k in catalogue if k in scores.columns and scores[k].notna().any() and k not in offered]
    more = st.multiselect("Add a metric", measured, format_func=picker.label, key="pk_more",
                          help="Any other metric the runs' protocols declare and the judge measured.")
    offered += more
    st.subheader("Weights")
    weights: dict[str, float] = {}
    for protocol in dict.fromkeys(catalogue[k].protocol for k in offered if k in catalogue):
        mine = [k for k in offered if catalogue[k].protocol == protocol]
        st.markdown(f"**{catalogue[mine[0]].protocol_title}**")
        for key, column in zip(mine, st.columns(max(len(mine), 1)), strict=False):
            weights[key] = column.number_input(catalogue[key].metric.label, 0.0, 10.0, float(spec.weights.get(key, 0.0)),
                                               0.5, key=f"pk_w_{key}", help=catalogue[key].metric.meaning)
    st.subheader("Hard floors and budget")
    if dropped:
        st.caption("Default floor left out on " + ", ".join(picker.label(m) for m in dropped)
                   + ": this judge decided it on no response (an LLM judge or gold labels would measure it).")
    floored = [k for k in offered if weights.get(k, 0) > 0 or k in spec.floors]
    floors: dict[str, float] = {}
    columns = st.columns(4)
    for i, key in enumerate(floored):
        value = _floor_slider(columns[i % 4], key, spec.floors.get(key))
        if value is not None:
            floors[key] = value
    budget = st.number_input("Budget per 1k queries (USD, 0 = none)", 0.0, 10_000.0, 0.0, 1.0, key="pk_budget")
    return picker.PickSpec(spec.domains, spec.modes, picker.ordered(weights), picker.ordered(floors), budget or None), dropped


def _column_config(result: picker.PickResult) -> dict:
    spec = result.spec
    weighted = {m: f" ×{w:g}" for m, w in spec.weights.items() if w > 0}
    return {
        "rank": st.column_config.TextColumn("#"),
        "baseline": st.column_config.CheckboxColumn("baseline (floor)"),
        "score": st.column_config.TextColumn("weighted score"),
        "cost_per_1k": st.column_config.NumberColumn("generation / 1k (USD)", format="%.2f"),
        "judge_cost_per_1k": st.column_config.NumberColumn("judging / 1k (USD)", format="%.2f"),
        "total_cost_per_1k": st.column_config.NumberColumn("total / 1k (USD)", format="%.2f"),
        **{m: st.column_config.TextColumn(picker.label(m) + weighted.get(m, "")) for m in result.metrics},
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
    config = _column_config(result)
    for part, table in picker.ranking_parts(picker.ranking_table(result)).items():
        st.markdown(f"**{part}**")
        st.dataframe(table, hide_index=True, width="stretch", column_config=fitting_columns(table, "model", config))
    evidence(result)
    store = engine()
    d1, d2 = st.columns(2)
    # written when clicked (a deferred download), not on every rerun of the page: the judge's fitness read then too
    d1.download_button("Download summary (Markdown)",
                       lambda: picker.summary_markdown(result, judge, runs, fitness_notice(store, judge)),
                       "generator_choice.md", "text/markdown", key="pk_md")
    d2.download_button("Download summary (HTML)",
                       lambda: picker.summary_html(result, judge, runs, fitness_notice(store, judge)),
                       "generator_choice.html", "text/html", key="pk_html")


@st.cache_data(max_entries=8, show_spinner="Ranking with the gold labels…")
def _gold_ranks(run_ids: tuple[int, ...], judge: str, version: tuple, gold: tuple, candidates: tuple[str, ...],
                metrics: tuple[str, ...], top: tuple[str, str] | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    from core.store.labels import gold_labels

    labels = gold_labels(engine(), list(run_ids))
    # without a gold label gold_ranks reads no score: the per-response scores are not loaded for it
    scores = results_view.scores(run_ids, judge, version) if labels else pd.DataFrame()
    return decision.gold_ranks(engine(), run_ids, scores, labels, candidates, metrics, top)


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
        st.session_state["pk_decision"] = (key, decision_report.render_html(made), made)
    stored = st.session_state.get("pk_decision")
    if stored and stored[0] == key:
        family(stored[2])
        c1, c2 = st.columns(2)
        c1.download_button("Download decision report (HTML)", stored[1], "decision_report.html", "text/html",
                           key="pk_decision_html")
        if decision_report.pdf_available():
            c2.download_button("Download decision report (PDF)", lambda: decision_report.render_pdf(stored[1]),
                               "decision_report.pdf", "application/pdf", key="pk_decision_pdf")
        else:
            c2.caption("PDF needs the `pdf` extra: `pip install -e '.[pdf]'` (WeasyPrint, on the system's Pango). "
                       "The HTML file prints to PDF from any browser.")


# The evidence in two tables that each fit the page: the value with its interval and judge, then every state's count.
EVIDENCE_VALUE = ["label", "model", "value", "ci_low", "ci_high", "n", "interval", "judge_label"]
EVIDENCE_STATES = ["label", "model", "n_scored", "n_not_applicable", "n_unparseable", "n_judge_error", "n_unjudged",
                   "n_skipped"]


def evidence(result: picker.PickResult) -> None:
    """Every metric behind the ranking, per protocol: its value with the interval of its declared kind, n, the count
    of every score state and the judge (the read model's key_summary)."""
    frame = result.evidence
    if frame.empty:
        return
    st.subheader("The metrics behind the ranking, per protocol")
    st.caption("Each metric on its own protocol's items: mean with its 95% interval (the family its kind declares), "
               "n with a value and the count of every score state, by the judge named.")
    for title, group in frame.groupby("protocol_title", sort=False):
        st.markdown(f"**{title}**")
        for shown in (EVIDENCE_VALUE, EVIDENCE_STATES):
            table = group[shown]
            st.dataframe(table, hide_index=True, width="stretch", column_config=fitting_columns(table, "label"))


def family(made: decision.Decision) -> None:
    """Per protocol, the rank-sets of every reported metric and the top two's segment cells, with the one Holm
    correction over every test the decision makes."""
    tests = made.family
    if tests.rank_sets.empty:
        return
    st.subheader("Which candidates could be first, per protocol")
    st.caption(f"Paired sign-flip tests on the items both answered, every pair of candidates per metric and every "
               f"segment cell of the top two: {tests.tests} tests under one Holm correction (α = {tests.alpha:g}).")
    for protocol, group in tests.rank_sets.groupby("protocol", sort=False):
        st.markdown(f"**{keys.decision_key(group['key'].iloc[0]).protocol_title}**")
        st.dataframe(group.drop(columns=["protocol", "key"]), hide_index=True, width="stretch")
        cells = tests.segments[tests.segments["protocol"] == protocol]
        if not cells.empty:
            shown = cells.assign(significant=cells["significant"].map(
                lambda v: "not tested" if v is None or v != v else ("yes" if v else "no")))
            st.dataframe(shown.drop(columns=["protocol", "key"]), hide_index=True, width="stretch")
