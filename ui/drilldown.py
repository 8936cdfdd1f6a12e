"""Drill-down widget: the responses behind a number, each with its documents, constraint verdicts, reasons and judges."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st
from streamlit.errors import StreamlitAPIException

from core.analysis import readmodel
from core.analysis.responses import judges_side_by_side, prompt_sent
from core.generation.reasoning import Reasoned
from core.scoring.judges.names import judge_label
from core.store.benchmark import marks_by_response
from core.store.generated import mark_cell
from core.store.sanitize import inline_code, plain_markdown
from ui.instance_view import render_generated_mark
from ui.reasoning import show_reasoning
from ui.session import engine
from ui.tables import response_config

MAX_ROWS = 200


def response_detail(response_id: int, judge: str, key: str = "dd") -> None:
    """One response in full: query, response text, documents, constraint verdicts and metric verdicts with reasons;
    the side-by-side judges and the prompt are read only when their tab is chosen (`key` names the tabs' state)."""
    d = readmodel.response_details(engine(), int(response_id), judge)
    if not d:
        st.warning(f"Response {response_id} no longer exists.")
        return
    judges = plain_markdown(", ".join(d["judges"])) or "none"
    st.markdown(f"**{plain_markdown(d['model'])}** on {inline_code(d['instance_uid'])} ({plain_markdown(str(d['mode']))}, "
                f"{plain_markdown(d['origin'])}) — judges: {judges}")
    render_generated_mark(d["generated"])
    st.markdown(f"**Query:** {plain_markdown(d['query'])}")
    st.text_area("Response", d["response"], height=160, disabled=True, key=f"dd_text_{response_id}")
    show_reasoning(Reasoned(d["response"], d["reasoning"], d["reasoning_state"]), d["reasoning_tokens"],
                   f"dd_{response_id}")
    with st.expander(f"Documents ({len(d['documents'])})"):
        for doc in d["documents"]:
            st.markdown(f"**[doc {doc['position']}] {plain_markdown(doc['title'] or '')}** · role: {doc['role']}")
            st.caption(plain_markdown(doc["text"][:2000]))
    verdicts, judges, prompt = st.tabs(["Verdicts", "All judges side by side", "Prompt sent"],
                                       key=f"{key}_tabs_{response_id}", on_change="rerun")
    with verdicts:
        st.markdown(f"**Constraints and verdicts** ({judge_label(judge)} and the rule checker)")
        st.dataframe(d["constraints"], hide_index=True, width="stretch")
        st.markdown("**Metric verdicts**")
        st.dataframe(d["metrics"], hide_index=True, width="stretch")
    if judges.open:
        with judges:
            render_judges(int(response_id))
    if prompt.open:
        with prompt:
            render_prompt(int(response_id))
    compare_link(int(response_id), f"Compare every model's response to {d['instance_uid']}")


def compare_link(response_id: int, label: str) -> None:
    """A link to the Compare responses page opened on this response's instance (a plain link outside the app)."""
    try:
        st.page_link("pages/compare_responses.py", label=label, icon=":material/view_column:",
                     query_params={"response": str(response_id)})
    except StreamlitAPIException:
        st.markdown(f"[{plain_markdown(label)}](compare_responses?response={response_id})")


def render_prompt(response_id: int) -> None:
    """The exact messages the model received (from the stored call), or the rebuilt prompt, clearly labelled."""
    sent = prompt_sent(engine(), response_id)
    if sent is None or not sent.messages:
        st.info("No prompt is known for this response.")
        return
    if sent.source == "sent":
        st.caption("Exactly as sent: the request stored with this response's call (the response cache).")
    else:
        st.warning(sent.note, icon=":material/construction:")
    if sent.note and sent.source == "sent":
        st.caption(plain_markdown(sent.note))
    for number, message in enumerate(sent.messages, start=1):
        st.markdown(f"**{number}. {plain_markdown(str(message.get('role', '')))}** ({len(str(message.get('content', '')))} characters)")
        st.code(str(message.get("content", "")), language=None, wrap_lines=True)
    if sent.parameters:
        st.caption("Parameters: " + ", ".join(f"{k}={v}" for k, v in sent.parameters.items()))


def render_judges(response_id: int) -> None:
    """Every judge's verdict and reason on each constraint and metric of one response, side by side."""
    table = judges_side_by_side(engine(), response_id)
    if table.empty or len(table.columns) <= 2:
        st.info("No judge has scored this response yet: score its run (Run evaluation page or `gauntlet score`).")
        return
    judges = [c for c in table.columns[2:] if not c.endswith(" · reason")]
    st.caption(f"{len(judges)} judges: {', '.join(judges)}. A blank cell: that judge gave no verdict on the item.")
    config = {"item": st.column_config.TextColumn("item", pinned=True), "text": st.column_config.TextColumn("constraint", width="medium")}
    config |= {c: st.column_config.TextColumn(c, width="large") for c in table.columns if c.endswith(" · reason")}
    st.dataframe(table, hide_index=True, width="stretch", column_config=config)


def drilldown(rows: pd.DataFrame, judge: str, key: str, title: str = "Responses behind this number") -> None:
    """List `rows` (must hold response_id) and open the chosen one with response_detail."""
    st.markdown(f"#### {title}")
    if rows.empty:
        st.caption("No responses behind this selection.")
        return
    shown = rows.head(MAX_ROWS)
    if len(rows) > MAX_ROWS:
        st.caption(f"Showing the first {MAX_ROWS} of {len(rows)} responses.")
    ids = shown["response_id"].astype(int).tolist()
    marks = marks_by_response(engine(), ids)
    shown = shown.assign(generated=[mark_cell(marks.get(i)) for i in ids])  # the answered item's LLM mark
    st.dataframe(shown, hide_index=True, width="stretch", column_config=response_config(shown))
    models, uids = ([""] * len(ids) if c not in shown else shown[c].tolist() for c in ("model", "instance_uid"))
    labels = {i: f"{m} · {u} (response {i})" + (f" · {mark_cell(marks.get(i))}" if marks.get(i) else "")
              for i, m, u in zip(ids, models, uids, strict=True)}
    chosen = st.selectbox("Open a response", ids, format_func=labels.get, key=f"{key}_pick")
    if chosen is not None:
        response_detail(chosen, judge, key)


def metric_drilldown(scores: pd.DataFrame, judge: str, key: str, metric_keys: list[str] | None = None) -> None:
    """Drill-down from a (model, metric) cell: the responses and their values, failing ones first."""
    with st.expander("Drill down: the responses behind a cell", icon=":material/search:"):
        _cell_responses(scores, judge, key, metric_keys)


def metric_drilldown_on_request(load: Callable[[], pd.DataFrame], judge: str, key: str,
                                metric_keys: list[str] | None = None) -> None:
    """metric_drilldown whose responses are read (`load`) only once its switch is on: a page drawn from aggregates
    does not pay for the per-response rows (Streamlit runs a collapsed expander's body) until someone drills down."""
    with st.expander("Drill down: the responses behind a cell", icon=":material/search:"):
        if st.toggle("Show the responses", key=f"{key}_load",
                     help="Read on request: the page does not load every response until you ask."):
            _cell_responses(load(), judge, key, metric_keys)


def _cell_responses(scores: pd.DataFrame, judge: str, key: str, metric_keys: list[str] | None) -> None:
    """The model and metric choice and the responses behind that cell (inside the drill-down's expander)."""
    metric_keys = [m for m in metric_keys or readmodel.METRICS if m in scores.columns]
    c1, c2 = st.columns(2)
    model = c1.selectbox("Model", sorted(scores["model"].unique()), key=f"{key}_model")
    metric = c2.selectbox("Metric", metric_keys, format_func=lambda k: readmodel.METRICS[k].label if k in readmodel.METRICS else k, key=f"{key}_metric")
    sub = scores[(scores["model"] == model) & scores[metric].notna()]
    rows = sub[["response_id", "model", "instance_uid", "domain", "mode", metric]].sort_values(metric, ascending=readmodel.METRICS[metric].higher_is_better if metric in readmodel.METRICS else True)
    drilldown(rows, judge, key)
