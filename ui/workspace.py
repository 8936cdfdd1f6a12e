"""Expert workspace panels: the verification panel, the labelling panel and the label form shared with adjudication."""

from __future__ import annotations

from typing import Any

import streamlit as st
from streamlit.errors import StreamlitAPIException

from core.review.auth import Principal
from core.review.annotations import Bundle, load_bundle, new_client_token
from core.review.gold import ResponseContext, gold_queue, load_response, record_gold_label
from core.review.verification import overlap_setting, record_verification, verification_queue
from core.store.sanitize import html_markdown, inline_code, plain_markdown
from core.store.schema import DOCUMENT_ROLES
from ui.auth import guarded_write
from ui.instance_view import render_instance
from ui.session import engine

MODE_CHECKS = {
    "noisy": "Noisy: at least one document answers the query and at least one is on topic but irrelevant.",
    "gap": "Gap: no document contains the answer, although the documents are on topic.",
    "conflict": "Conflict: the conflicting documents really contradict each other on the summarised fact.",
}
DECISION_BUTTONS = [("accept", "Accept", "Alt+A", "primary"), ("needs_edit", "Needs edit", "Alt+E", "secondary"),
                    ("reject", "Reject", "Alt+X", "secondary")]

def _token(key: str) -> str:
    """A client token that stays the same until the submit it belongs to succeeds (double submits store once)."""
    return st.session_state.setdefault(f"token_{key}", new_client_token())


def _load_next() -> None:
    """Rerun only the panel (fast) during a fragment rerun; a full rerun otherwise (e.g. under AppTest)."""
    try:
        st.rerun(scope="fragment")
    except StreamlitAPIException:
        st.rerun()


def _progress(done: int, total: int, noun: str) -> None:
    st.progress(done / total if total else 1.0, text=f"{done} of {total} {noun} done")


def render_bundle(bundle: Bundle) -> None:
    """Query, constraints by category and documents with role badges, side by side (compact header)."""
    render_instance(bundle, compact=True)


def render_verification_decision(who: str, payload: dict[str, Any]) -> None:
    """One expert's verification decision: the decision, the consistency verdict and the context-validity verdict."""
    st.markdown(f"**{plain_markdown(who)}** · decision **{plain_markdown(str(payload.get('decision', '')).replace('_', ' '))}**")
    clashing = ", ".join(inline_code(str(c)) for c in payload.get("clashing_constraints") or []) or "none"
    st.markdown(f"Consistency: **{plain_markdown(str(payload.get('consistency', '')))}** · clashing: {clashing}")
    if payload.get("consistency_note"):
        st.caption(f"Consistency note: {plain_markdown(str(payload['consistency_note']))}")
    roles = ", ".join(f"{inline_code(str(d))} → {plain_markdown(str(r))}" for d, r in (payload.get("role_corrections") or {}).items())
    st.markdown(f"Context: **{'valid' if payload.get('context_valid') else 'invalid'}** · role corrections: {roles or 'none'}")
    if payload.get("context_note"):
        st.caption(f"Context note: {plain_markdown(str(payload['context_note']))}")


@st.fragment
def verification_panel(principal: Principal) -> None:
    """The next instance of the expert's queue with both checks and a decision; submitting loads the next one."""
    queue = verification_queue(engine(), principal, overlap_setting())
    _progress(queue.decided, queue.total, "verifications")
    if not queue.instance_ids:
        st.success("Your verification queue is empty.", icon=":material/task_alt:")
        return
    bundle = load_bundle(engine(), queue.instance_ids[0])
    inst = bundle.instance
    render_bundle(bundle)
    with st.form(f"verify_{inst.id}"):
        st.markdown("##### 1 · Instruction–query consistency")
        consistency = st.radio("Can the query be answered while obeying every constraint?",
                               ["consistent", "inconsistent"], horizontal=True, key=f"v_consistency_{inst.id}")
        clashing = st.multiselect("Clashing constraints", [c.cid for c in bundle.constraints], key=f"v_clash_{inst.id}")
        consistency_note = st.text_input("Note on consistency", key=f"v_cnote_{inst.id}")
        st.markdown("##### 2 · Context validity")
        st.caption(MODE_CHECKS.get(inst.mode, ""))
        valid = st.radio("Does the bundle match its mode?", ["valid", "invalid"], horizontal=True,
                         key=f"v_valid_{inst.id}")
        roles = {}
        for number, doc in enumerate(bundle.documents, start=1):
            roles[doc.doc_uid] = st.selectbox(f"Role of doc {number}: {plain_markdown(doc.title or '')}", DOCUMENT_ROLES,
                                              index=DOCUMENT_ROLES.index(doc.role), key=f"v_role_{inst.id}_{doc.doc_uid}")
        with st.expander("Edit constraint wording (creates a new version)"):
            edits = {c.cid: st.text_area(plain_markdown(c.cid), value=c.text, key=f"v_edit_{inst.id}_{c.cid}")
                     for c in bundle.constraints}
        context_note = st.text_input("Note on context", key=f"v_xnote_{inst.id}")
        st.markdown("##### 3 · Decision")
        pressed = None
        for column, (decision, label, shortcut, kind) in zip(st.columns(3), DECISION_BUTTONS, strict=True):
            if column.form_submit_button(f"{label} ({shortcut})", type=kind, shortcut=shortcut, key=f"v_{decision}_{inst.id}"):
                pressed = decision
    if pressed is None:
        return
    result = guarded_write(lambda: record_verification(
        engine(), principal, inst.id, consistency=consistency, context_valid=valid == "valid", decision=pressed,
        clashing_constraints=clashing, consistency_note=consistency_note, context_note=context_note,
        role_corrections=roles, constraint_edits=edits, client_token=_token(f"verify_{inst.id}"),
        overlap=overlap_setting(),
    ))
    if result is not None:
        st.session_state.pop(f"token_verify_{inst.id}", None)
        suffix = f"; new version saved (id {result.new_instance_id})" if result.new_instance_id else ""
        st.session_state["verify_last"] = f"{inst.uid}: {pressed.replace('_', ' ')} recorded{suffix}."
        _load_next()


def label_fields(ctx: ResponseContext, key: str, initial: dict[str, Any] | None = None) -> dict[str, Any]:
    """Inputs for a gold label (inside a form): each constraint yes/no, refusal (gap), conflict recognition (conflict)."""
    initial = initial or {}
    yes_no = ["yes", "no"]
    constraints = {}
    for c in ctx.bundle.constraints:
        prior = (initial.get("constraints") or {}).get(c.cid)
        choice = st.radio(f"{inline_code(c.cid)} {plain_markdown(c.text)}", yes_no, horizontal=True, key=f"{key}_c_{c.cid}",
                          index=None if prior is None else (0 if prior else 1))
        constraints[c.cid] = None if choice is None else choice == "yes"
    payload: dict[str, Any] = {"constraints": constraints}
    mode = ctx.bundle.instance.mode
    if mode == "gap":
        prior = initial.get("valid_refusal")
        choice = st.radio("Valid refusal (the response says the documents do not contain the answer)", ["1", "0"],
                          horizontal=True, key=f"{key}_refusal", index=None if prior is None else (0 if prior else 1))
        payload["valid_refusal"] = None if choice is None else int(choice)
    if mode == "conflict":
        prior = initial.get("conflict_recognized")
        choice = st.radio("Conflict recognised (names the disagreement and what each source says)", ["1", "0"],
                          horizontal=True, key=f"{key}_conflict", index=None if prior is None else (0 if prior else 1))
        payload["conflict_recognized"] = None if choice is None else int(choice)
    payload["note"] = st.text_input("Note (optional)", key=f"{key}_note")
    return payload


def missing_answers(payload: dict[str, Any]) -> list[str]:
    """Items left unanswered in a label form."""
    missing = [cid for cid, v in payload["constraints"].items() if v is None]
    return missing + [k for k in ("valid_refusal", "conflict_recognized") if k in payload and payload[k] is None]


def render_response(ctx: ResponseContext) -> None:
    """The response under review: rendered (sanitised, images as "[image: URL]" text) and raw."""
    st.markdown(f"#### Response · {plain_markdown(ctx.model)} · run {ctx.run_id}")
    rendered, raw = st.tabs(["Rendered", "Raw text"])
    with rendered:
        st.markdown(html_markdown(ctx.response.text or ""), unsafe_allow_html=True)
    with raw:
        st.code(ctx.response.text or "", language=None, wrap_lines=True)


@st.fragment
def labelling_panel(principal: Principal) -> None:
    """The next response assigned to the expert: context, response and the label form (no verdicts, no other labels)."""
    queue = gold_queue(engine(), principal)
    _progress(queue.decided, queue.total, "labels")
    if not queue.instance_ids:
        st.success("No responses are waiting for your label.", icon=":material/task_alt:")
        return
    response_id = queue.instance_ids[0]
    ctx = load_response(engine(), response_id)
    render_bundle(ctx.bundle)
    render_response(ctx)
    with st.form(f"label_{response_id}"):
        st.markdown("##### Your label")
        payload = label_fields(ctx, f"l_{response_id}")
        submitted = st.form_submit_button("Submit label (Alt+S)", type="primary", shortcut="Alt+S", key=f"l_submit_{response_id}")
    if not submitted:
        return
    missing = missing_answers(payload)
    if missing:
        st.error(f"Answer every item first: {', '.join(missing)}")
        return
    saved = guarded_write(lambda: record_gold_label(engine(), principal, response_id, payload, _token(f"label_{response_id}")))
    if saved is not None:
        st.session_state.pop(f"token_label_{response_id}", None)
        _load_next()
