"""Compare responses: several models' answers to one instance side by side, the exact prompt each was sent, and every
judge's verdicts and reasons side by side for one response. The instance and the models are in the URL."""

import streamlit as st

from core.analysis.responses import answered_instances, instance_of_response, instance_responses
from core.store.benchmark import instance_detail
from core.store.generated import generated_mark
from core.store.sanitize import html_markdown, plain_markdown
from ui import results_view
from ui.auth import require_page
from ui.drilldown import render_judges, render_prompt
from ui.instance_view import render_constraints, render_documents, render_generated_mark
from ui.reasoning import show_reasoning
from ui.session import engine

require_page(__file__)
st.title("Compare responses")
st.caption("Pick an instance: each model's response in its own column with the prompt it was sent; below, every "
           "judge's verdicts and reasons on one response side by side. Copy the address to share this view.")

filters = results_view.sidebar_filters(subset=False, domains=False)
if filters:
    instances = {i.instance_id: i for i in answered_instances(engine(), filters.run_ids)}
    if not instances:
        st.info("These runs have no responses yet: launch a run on the Run evaluation page, or choose other runs.")
        st.stop()
    linked = st.query_params.get("response")
    if linked and "cmp_instance" not in st.session_state and linked.isdigit():
        st.session_state["cmp_instance"] = instance_of_response(engine(), int(linked))
    results_view.url_seed("cmp_instance", "instance", list(instances), cast=int)
    instance_id = st.selectbox("Instance", list(instances), key="cmp_instance", format_func=lambda i: instances[i].label)
    results_view.url_keep("cmp_instance", "instance")
    st.query_params.pop("response", None)
    detail = instance_detail(engine(), instance_id)
    render_generated_mark(generated_mark(detail.instance.meta, len(detail.constraints)))
    st.info(plain_markdown(detail.instance.query), icon=":material/help:")
    with st.expander(f"Instruction set ({len(detail.constraints)}) and documents ({len(detail.documents)})"):
        left, right = st.columns([2, 3])
        with left:
            render_constraints(detail)
        with right:
            render_documents(detail)

    responses = instance_responses(engine(), instance_id, filters.run_ids)
    label = {r.response_id: f"{r.model} · run {r.run_id}" + (f" · {r.condition}" if r.condition else "") for r in responses}
    results_view.url_seed("cmp_models", "responses", list(label), multi=True, cast=int,
                          default=[r.response_id for r in responses][:3])
    chosen = st.multiselect("Responses side by side", list(label), key="cmp_models", format_func=label.get)
    results_view.url_keep("cmp_models", "responses", multi=True)
    by_id = {r.response_id: r for r in responses}
    raw = st.toggle("Show raw text", key="cmp_raw")
    for start in range(0, len(chosen), 3):
        for column, rid in zip(st.columns(3), chosen[start:start + 3], strict=False):
            r = by_id[rid]
            with column, st.container(border=True):
                st.markdown(f"**{plain_markdown(r.model)}** · run {r.run_id}" + (f" · {plain_markdown(r.condition)}" if r.condition else ""))
                cost = f"${r.cost_usd:.4f}"
                latency = "-" if r.latency_ms is None else f"{r.latency_ms:.0f} ms"
                st.caption(f"{r.status} · {latency} · {cost} · {r.output_tokens} output tokens · response {r.response_id}")
                if r.status != "done":
                    st.error(f"No answer: {plain_markdown(r.error or r.status)}", icon=":material/error:")
                elif raw:
                    st.code(r.text, language=None, wrap_lines=True)
                else:
                    st.markdown(html_markdown(r.text), unsafe_allow_html=True)
                show_reasoning(r.reasoning, r.reasoning_tokens, f"cmp_{rid}")
                with st.expander("Prompt sent"):
                    render_prompt(rid)
    if not chosen:
        st.caption("Choose one or more responses above.")

    st.subheader("Judges side by side")
    judged = st.selectbox("Response", chosen or list(label), key="cmp_judged", format_func=label.get)
    if judged is not None:
        render_judges(int(judged))
