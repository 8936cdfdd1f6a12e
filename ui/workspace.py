"""Expert workspace panels: verification (queue, needs-edit follow-ups, my decisions), labelling (queue, my labels)
and the label form shared with adjudication. Every decision is confirmed and can be undone; items can be skipped,
the previous one reopened, and any submitted item revisited and decided again (append-only: the latest counts)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import streamlit as st
from streamlit.errors import StreamlitAPIException

from core.generation.reasoning import stored_split
from core.review.annotations import Undone, label_history, load_bundle, new_client_token
from core.review.auth import Principal
from core.review.gold import (
    ResponseContext,
    auto_satisfied,
    citation_sentences,
    gold_queue,
    label_history_of,
    labelling_context,
    load_response,
    my_label,
    my_labels,
    record_gold_label,
    sample_batches,
    set_sample_blinding,
    undo_last_label,
    wants_citation_support,
    wants_faithful,
)
from core.review.verification import (
    live_decisions,
    my_decision,
    my_verifications,
    needs_edit_queue,
    overlap_setting,
    record_verification,
    undo_last_verification,
    verification_queue,
)
from core.store.benchmark import InstanceDetail
from core.store.generated import generated_mark, mark_cell
from core.store.sanitize import html_markdown, inline_code, plain_markdown
from core.store.schema import DOCUMENT_ROLES
from ui.auth import guarded_write
from ui.confirm import confirm
from ui.instance_view import (
    render_evidence_edits,
    render_instance,
    render_label_history,
    render_verification_decision,
    render_verification_history,
)
from ui.reasoning import show_reasoning
from ui.session import engine

__all__ = ["mark_suffix", "render_evidence_edits", "render_verification_decision"]  # re-exported for the adjudication page

MODE_CHECKS = {
    "noisy": "Noisy: at least one document answers the query and at least one is on topic but irrelevant.",
    "gap": "Gap: no document contains the answer, although the documents are on topic.",
    "conflict": "Conflict: the conflicting documents really contradict each other on the summarised fact.",
}
EDITED_CHECK = ("Edited evidence: the edited passage states the wrong answer, nothing in the bundle still gives the "
                "gold answer, and the wrong answer is the same kind of thing as the gold.")
DECISION_BUTTONS = [("accept", "Accept", "Alt+A", "primary"), ("needs_edit", "Needs edit", "Alt+E", "secondary"),
                    ("reject", "Reject", "Alt+X", "secondary")]
VERIFY_VIEWS = {"queue": "Queue", "needs_edit": "Needs edit", "mine": "My decisions"}
LABEL_VIEWS = {"queue": "Queue", "mine": "My labels"}


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


def mark_suffix(bundle: InstanceDetail) -> str:
    """' · LLM-generated (model)' for an item a model drafted, wrote or edited, '' otherwise (selectbox labels)."""
    cell = mark_cell(generated_mark(bundle.instance.meta, len(bundle.constraints)))
    return f" · {cell}" if cell else ""


def render_bundle(bundle: InstanceDetail) -> None:
    """Query, constraints by category and documents with role badges, side by side (compact header)."""
    render_instance(bundle, compact=True)


# --------------------------------------------------------------------------- navigation: skip, previous, undo


def _nav(prefix: str) -> dict[str, Any]:
    """This browser session's trail through a queue: skipped items, the items passed (for Previous), the open one."""
    return st.session_state.setdefault(f"{prefix}_nav", {"skipped": [], "trail": [], "open": None})


def _ordered(ids: list[int], skipped: list[int]) -> list[int]:
    """The queue with this session's skipped items moved to its end (in the order they were skipped)."""
    return [i for i in ids if i not in skipped] + [i for i in skipped if i in ids]


def _passed(nav: dict[str, Any], item: int) -> None:
    """Leave `item` (decided or skipped): remember it for Previous and go back to the queue."""
    nav["trail"] = [i for i in nav["trail"] if i != item] + [item]
    nav["open"] = None


def _confirm(prefix: str, message: str) -> None:
    """Show `message` as a toast on the next run and keep it as the last action (with its Undo button)."""
    st.session_state[f"{prefix}_toast"] = f"{message}."
    st.session_state[f"{prefix}_last"] = f"{message}."


def _confirmation(prefix: str, undo: Callable[[str], Undone]) -> None:
    """The toast of the last action, and a line repeating it with an Undo button (undo takes back your latest one)."""
    toast = st.session_state.pop(f"{prefix}_toast", None)
    if toast:
        st.toast(toast, icon=":material/check_circle:", duration="long")
    last = st.session_state.get(f"{prefix}_last")
    if not last:
        return
    text, button = st.columns([5, 1], vertical_alignment="center")
    text.caption(f":material/check_circle: Last: {plain_markdown(last)}")
    if button.button("Undo", key=f"{prefix}_undo", shortcut="Alt+Z", icon=":material/undo:"):
        undone = guarded_write(lambda: undo(_token(f"{prefix}_undo")))
        if undone is None:
            return
        st.session_state.pop(f"token_{prefix}_undo", None)
        st.session_state.pop(f"{prefix}_last", None)
        status = f"; status now {undone.status.replace('_', ' ')}" if undone.status else ""
        st.session_state[f"{prefix}_toast"] = f"Undone: {undone.what}{status}."
        _nav(prefix)["open"] = undone.target_id
        _load_next()


def _nav_buttons(prefix: str, nav: dict[str, Any], current: int | None, queue: list[int]) -> None:
    """Previous (reopen the item passed last), Skip (to the end of the queue) and Back to the queue."""
    prev, skip, back = st.columns(3)
    if prev.button("Previous", key=f"{prefix}_prev", shortcut="Alt+P", icon=":material/arrow_back:",
                   disabled=not nav["trail"]):
        nav["open"] = nav["trail"].pop()
        _load_next()
    if skip.button("Skip", key=f"{prefix}_skip", shortcut="Alt+K", icon=":material/skip_next:",
                   disabled=current not in queue or len(queue) < 2):
        nav["skipped"] = [i for i in nav["skipped"] if i != current] + [current]
        _passed(nav, current)
        _load_next()
    if nav["open"] is not None and back.button("Back to the queue", key=f"{prefix}_back", icon=":material/inbox:"):
        nav["open"] = None
        _load_next()


def _current_item(prefix: str, nav: dict[str, Any], queue: list[int]) -> int | None:
    """The item to show (the reopened one, else the head of the queue with skipped items last) under the
    Previous / Skip / Back buttons."""
    ids = _ordered(queue, nav["skipped"])
    current = nav["open"] or (ids[0] if ids else None)
    _nav_buttons(prefix, nav, current, ids)
    return current


def _revision(prior: dict[str, Any] | None) -> str:
    """A key suffix that changes with the standing label a form is pre-filled from (widgets keep their first value)."""
    if not prior:
        return ""
    return "_r" + hashlib.sha256(json.dumps(prior, sort_keys=True, default=str).encode()).hexdigest()[:8]


def _view(prefix: str, views: dict[str, str], counts: dict[str, int]) -> str:
    labels = {k: f"{v} ({counts[k]})" if k in counts else v for k, v in views.items()}
    chosen = st.segmented_control("Show", list(views), format_func=labels.get, default="queue", key=f"{prefix}_view",
                                  label_visibility="collapsed")
    return chosen or "queue"


# --------------------------------------------------------------------------- verification


def _verification_form(principal: Principal, instance_id: int, prefix: str, *, expand_edits: bool = False) -> None:
    """One instance with both checks and a decision, pre-filled with your standing decision on it if any."""
    bundle = load_bundle(engine(), instance_id)
    inst = bundle.instance
    prior = my_decision(engine(), principal, inst.id) or {}
    k = f"{inst.id}{_revision(prior)}"
    if prior:
        st.info(f"You decided **{str(prior.get('decision')).replace('_', ' ')}** on {plain_markdown(inst.uid)} "
                f"v{inst.version}. Deciding again records a new decision that replaces it (both are kept).",
                icon=":material/history:")
        with st.expander("Your decisions on this instance"):
            render_verification_history([(inst.version, e) for e in label_history(
                engine(), "instance", [inst.id], ("verification",), author=principal.username)])
    render_bundle(bundle)
    edited = render_evidence_edits(bundle, f"{prefix}_{inst.id}")
    corrections = prior.get("role_corrections") or {}
    with st.form(f"verify_{inst.id}"):
        st.markdown("##### 1 · Instruction–query consistency")
        consistency = st.radio("Can the query be answered while obeying every constraint?",
                               ["consistent", "inconsistent"], horizontal=True, key=f"v_consistency_{k}",
                               index=1 if prior.get("consistency") == "inconsistent" else 0)
        clashing = st.multiselect("Clashing constraints", [c.cid for c in bundle.constraints], key=f"v_clash_{k}",
                                  default=[c for c in prior.get("clashing_constraints") or [] if c in {x.cid for x in bundle.constraints}])
        consistency_note = st.text_input("Note on consistency", key=f"v_cnote_{k}", value=prior.get("consistency_note", ""))
        st.markdown("##### 2 · Context validity")
        st.caption(MODE_CHECKS.get(inst.mode, "") or (EDITED_CHECK if edited else ""))
        valid = st.radio("Does the bundle match its mode?", ["valid", "invalid"], horizontal=True,
                         key=f"v_valid_{k}", index=1 if prior and not prior.get("context_valid") else 0)
        roles = {}
        for number, doc in enumerate(bundle.documents, start=1):
            role = corrections.get(doc.doc_uid, doc.role)
            roles[doc.doc_uid] = st.selectbox(f"Role of doc {number}: {plain_markdown(doc.title or '')}", DOCUMENT_ROLES,
                                              index=DOCUMENT_ROLES.index(role), key=f"v_role_{k}_{doc.doc_uid}")
        with st.expander("Edit constraint wording (creates a new version)", expanded=expand_edits):
            edits = {c.cid: st.text_area(plain_markdown(c.cid), value=c.text, key=f"v_edit_{k}_{c.cid}")
                     for c in bundle.constraints}
        context_note = st.text_input("Note on context", key=f"v_xnote_{k}", value=prior.get("context_note", ""))
        st.markdown("##### 3 · Decision")
        pressed = None
        for column, (decision, label, shortcut, kind) in zip(st.columns(3), DECISION_BUTTONS, strict=True):
            if column.form_submit_button(label, type=kind, shortcut=shortcut, key=f"v_{decision}_{inst.id}"):
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
        _confirm(prefix, f"{inst.uid} v{inst.version}: {pressed.replace('_', ' ')} recorded{suffix}")
        nav = _nav(prefix)
        nav["skipped"] = [i for i in nav["skipped"] if i != inst.id]
        _passed(nav, inst.id)
        _load_next()


def _verification_queue_view(principal: Principal, nav: dict[str, Any], follow_ups: int) -> None:
    queue = verification_queue(engine(), principal, overlap_setting())
    _progress(queue.decided, queue.total, "verifications")
    current = _current_item("v", nav, queue.instance_ids)
    if current is None:
        st.success("Your verification queue is empty.", icon=":material/task_alt:")
        if follow_ups:
            st.info(f"{follow_ups} instances marked 'needs edit' wait for a follow-up: open **Needs edit** above.")
        return
    if nav["skipped"] and current in nav["skipped"]:
        st.caption("You skipped this instance earlier; it came back at the end of your queue.")
    _verification_form(principal, current, "v")


def _needs_edit_view(principal: Principal, ids: list[int]) -> None:
    st.caption("Instances of your domains that an expert marked 'needs edit'. Fix the wording or the document roles "
               "and accept (a new version is saved), or decide again.")
    if not ids:
        st.success("No instance waits for a follow-up edit.", icon=":material/task_alt:")
        return
    bundles = {i: load_bundle(engine(), i) for i in ids}
    picked = st.selectbox("Instance", ids, key="v_fix_pick",
                          format_func=lambda i: f"{bundles[i].instance.uid} v{bundles[i].instance.version} · "
                                                f"{bundles[i].domain}{mark_suffix(bundles[i])}")
    st.markdown("##### Why it needs an edit")
    for who, payload in live_decisions(engine(), picked).items():
        with st.container(border=True):
            render_verification_decision(who, payload)
    _verification_form(principal, picked, "v", expand_edits=True)


def _my_decisions_view(principal: Principal) -> None:
    mine = my_verifications(engine(), principal)
    if not mine:
        st.info("You have not decided any instance yet; your decisions appear here to revisit.")
        return
    st.dataframe([{"instance": d.uid, "version": d.version, "generated": d.generated,
                   "decision": d.decision.replace("_", " "),
                   "when": f"{d.at:%Y-%m-%d %H:%M}", "newer version": "yes" if d.latest_id else ""} for d in mine],
                 hide_index=True, width="stretch", column_config={"instance": st.column_config.TextColumn(pinned=True)})
    by_id = {d.instance_id: d for d in mine}
    picked = st.selectbox("Revisit", list(by_id), key="v_mine_pick",
                          format_func=lambda i: f"{by_id[i].uid} v{by_id[i].version} · {by_id[i].decision.replace('_', ' ')}")
    chosen = by_id[picked]
    if chosen.latest_id:
        st.warning("Your decision was on an older version; a new decision applies to the latest version.",
                   icon=":material/update:")
    _verification_form(principal, chosen.latest_id or chosen.instance_id, "v")


@st.fragment
def verification_panel(principal: Principal) -> None:
    """The expert's verification work: the queue (skip, previous), the needs-edit follow-ups and their decisions to
    revisit; every decision is confirmed and the latest can be undone."""
    nav = _nav("v")
    follow = needs_edit_queue(engine(), principal)
    _confirmation("v", lambda token: undo_last_verification(engine(), principal, token))
    view = _view("v", VERIFY_VIEWS, {"needs_edit": len(follow)})
    if view == "needs_edit":
        _needs_edit_view(principal, follow)
    elif view == "mine":
        _my_decisions_view(principal)
    else:
        _verification_queue_view(principal, nav, len(follow))


# --------------------------------------------------------------------------- gold labels


SUPPORT_CHOICES = {"supported": "Supported", "partial": "Partially", "not": "Not supported"}
SUPPORT_SHORTCUTS = {"supported": "Alt+1", "partial": "Alt+2", "not": "Alt+3"}


def _support_key(key: str, n: int) -> str:
    return f"{key}_cs_{n}"


def _set_support(key: str, n: int, value: str, total: int) -> None:
    st.session_state[_support_key(key, n)] = value
    st.session_state[f"{key}_cs_cursor"] = min(n + 1, total)


def _move_support_cursor(key: str, n: int) -> None:
    st.session_state[f"{key}_cs_cursor"] = max(1, n)


def citation_support_keys(ctx: ResponseContext, key: str) -> None:
    """Keyboard labelling of citation support (outside the label form): the current sentence; Alt+1 supported, Alt+2
    partially, Alt+3 not supported by the documents it cites, each moving to the next sentence; Alt+B goes back.
    The choices land in the form's per-sentence radios, submitted with the label."""
    sentences = citation_sentences(ctx.response.text)
    if not wants_citation_support(ctx.bundle) or not sentences:
        return
    n = min(st.session_state.get(f"{key}_cs_cursor", 1), len(sentences))
    st.markdown(f"##### Citation support · sentence {n} of {len(sentences)}")
    st.markdown(f"> {plain_markdown(sentences[n - 1])}")
    cols = st.columns(4)
    for col, (value, label) in zip(cols, SUPPORT_CHOICES.items(), strict=False):
        col.button(f"{label} ({SUPPORT_SHORTCUTS[value]})", key=f"{key}_csb_{value}", shortcut=SUPPORT_SHORTCUTS[value],
                   on_click=_set_support, args=(key, n, value, len(sentences)))
    cols[3].button("Previous sentence (Alt+B)", key=f"{key}_csb_back", shortcut="Alt+B",
                   on_click=_move_support_cursor, args=(key, n - 1))


def _citation_support_fields(ctx: ResponseContext, key: str, prior: dict[str, str]) -> dict[str, str | None]:
    """One radio per answer sentence: supported / partially / not supported by the documents it cites."""
    st.markdown("Citation support: is each sentence supported by the documents it cites? (Alt+1 / Alt+2 / Alt+3 "
                "label the sentence shown above the form and move on.)")
    support: dict[str, str | None] = {}
    for n, sentence in enumerate(citation_sentences(ctx.response.text), start=1):
        widget = _support_key(key, n)
        if widget not in st.session_state and str(n) in prior:
            st.session_state[widget] = prior[str(n)]
        options: dict[str, Any] = {} if widget in st.session_state else {"index": None}
        support[str(n)] = st.radio(f"Sentence {n}: {plain_markdown(sentence)}", list(SUPPORT_CHOICES),
                                   format_func=SUPPORT_CHOICES.__getitem__, horizontal=True, key=widget, **options)
    return support


def label_fields(ctx: ResponseContext, key: str, initial: dict[str, Any] | None = None) -> dict[str, Any]:
    """Inputs for a gold label (inside a form): each applicable constraint yes/no (conditional ones that cannot apply
    are shown as satisfied automatically), refusal (gap), conflict recognition (conflict)."""
    initial = initial or {}
    yes_no = ["yes", "no"]
    auto = auto_satisfied(ctx.bundle)
    constraints = {}
    for c in ctx.bundle.constraints:
        if c.cid in auto:
            st.markdown(f"{inline_code(c.cid)} {plain_markdown(c.text)}  \n:green[:material/check: satisfied "
                        f"automatically: applies only to {auto[c.cid]} instances, this one is "
                        f"{plain_markdown(ctx.bundle.instance.mode or '')}]")
            constraints[c.cid] = True
            continue
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
    if wants_faithful(ctx.bundle):
        prior = initial.get("faithful")
        choice = st.radio("Faithful (every claim of the answer is supported by the retrieved documents)", ["1", "0"],
                          horizontal=True, key=f"{key}_faithful", index=None if prior is None else (0 if prior else 1))
        payload["faithful"] = None if choice is None else int(choice)
    if wants_citation_support(ctx.bundle):
        payload["citation_support"] = _citation_support_fields(ctx, key, initial.get("citation_support") or {})
    payload["note"] = st.text_input("Note (optional)", key=f"{key}_note", value=initial.get("note", ""))
    return payload


def missing_answers(payload: dict[str, Any]) -> list[str]:
    """Items left unanswered in a label form."""
    missing = [cid for cid, v in payload["constraints"].items() if v is None]
    missing += [f"citation support of sentence {n}" for n, v in (payload.get("citation_support") or {}).items()
                if v is None]
    return missing + [k for k in ("valid_refusal", "conflict_recognized", "faithful") if k in payload and payload[k] is None]


def render_response(ctx: ResponseContext) -> None:
    """The response under review: rendered (sanitised, images as "[image: URL]" text) and raw."""
    st.markdown(f"#### Response · {plain_markdown(ctx.model)} · run {ctx.run_id}")
    split = stored_split(ctx.response.text, ctx.response.reasoning, ctx.response.reasoning_state)
    rendered, raw = st.tabs(["Rendered", "Raw text"])
    with rendered:
        st.markdown(html_markdown(split.answer), unsafe_allow_html=True)
    with raw:
        st.code(split.answer, language=None, wrap_lines=True)
    show_reasoning(split, ctx.response.reasoning_tokens, f"ws_{ctx.response.id}")


def _label_form(principal: Principal, response_id: int) -> None:
    """Context, response and the label form, pre-filled with your standing label on it if any (re-labelling)."""
    ctx = labelling_context(engine(), principal, response_id)  # the model stays hidden until a label is saved
    prior = my_label(engine(), principal, response_id)
    if prior:
        st.info("You labelled this response already. Submitting records a new label that replaces yours (both are "
                "kept).", icon=":material/history:")
        with st.expander("Your labels on this response"):
            render_label_history(label_history_of(engine(), response_id, principal.username))
    render_bundle(ctx.bundle)
    render_response(ctx)
    key = f"l_{response_id}{_revision(prior)}"
    citation_support_keys(ctx, key)
    with st.form(f"label_{response_id}"):
        st.markdown("##### Your label")
        payload = label_fields(ctx, key, initial=prior)
        submitted = st.form_submit_button("Submit label", type="primary", shortcut="Alt+S", key=f"l_submit_{response_id}")
    if not submitted:
        return
    missing = missing_answers(payload)
    if missing:
        st.error(f"Answer every item first: {', '.join(missing)}")
        return
    saved = guarded_write(lambda: record_gold_label(engine(), principal, response_id, payload, _token(f"label_{response_id}")))
    if saved is not None:
        st.session_state.pop(f"token_label_{response_id}", None)
        revealed = labelling_context(engine(), principal, response_id).model
        _confirm("l", f"label on {ctx.bundle.instance.uid} · {revealed} (response {response_id}) saved")
        nav = _nav("l")
        nav["skipped"] = [i for i in nav["skipped"] if i != response_id]
        _passed(nav, response_id)
        _load_next()


def _label_queue_view(principal: Principal, nav: dict[str, Any]) -> None:
    queue = gold_queue(engine(), principal)
    if not queue.total:
        st.info("No responses are waiting for your label: none has been assigned to you yet. An admin draws a gold "
                "sample on **Gold labels & adjudication → Draw a sample**; the responses assigned to you then appear "
                "here.", icon=":material/hourglass_empty:")
        return
    _progress(queue.decided, queue.total, "labels")
    current = _current_item("l", nav, queue.instance_ids)
    if current is None:
        st.success("No responses are waiting for your label.", icon=":material/task_alt:")
        st.caption("Revisit and re-label any of them under **My labels** above.")
        return
    _label_form(principal, current)


def _my_labels_view(principal: Principal) -> None:
    mine = my_labels(engine(), principal)
    if not mine:
        st.info("You have not labelled any response yet; your labels appear here to revisit.")
        return
    contexts = {rid: load_response(engine(), rid) for rid, _ in mine}
    st.dataframe([{"response": rid, "instance": contexts[rid].bundle.instance.uid, "model": contexts[rid].model,
                   "when": f"{at:%Y-%m-%d %H:%M}", "generated": mark_suffix(contexts[rid].bundle).removeprefix(" · ")}
                  for rid, at in mine], hide_index=True, width="stretch")
    picked = st.selectbox("Revisit", [rid for rid, _ in mine], key="l_mine_pick",
                          format_func=lambda r: f"{contexts[r].bundle.instance.uid} · {contexts[r].model} (response {r})"
                                                + mark_suffix(contexts[r].bundle))
    _label_form(principal, picked)


@st.fragment
def labelling_panel(principal: Principal) -> None:
    """The responses assigned to the expert (skip, previous) and their labels to revisit: context, response and the
    label form (no verdicts, no other labels); every label is confirmed and the latest can be undone."""
    nav = _nav("l")
    _confirmation("l", lambda token: undo_last_label(engine(), principal, token))
    if _view("l", LABEL_VIEWS, {}) == "mine":
        _my_labels_view(principal)
    else:
        _label_queue_view(principal, nav)


def sample_blinding_panel(principal: Principal) -> None:
    """The drawn gold samples with their blinding: experts see no model name until they save, unless an admin turns
    it off for a sample (re-checked against the setting read here)."""
    samples = sample_batches(engine())
    if not samples:
        return
    st.markdown("##### Samples and blind labelling")
    st.caption("In a blind sample, experts see no model name until they save their label, and each expert's queue "
               "follows a seeded shuffle across models (the seed is recorded).")
    st.dataframe([{"sample": s.batch, "responses": s.responses, "assignments": s.assignments,
                   "blind": "yes" if s.blind else "no", "queue seed": s.queue_seed} for s in samples],
                 hide_index=True, width="stretch")
    picked = st.selectbox("Sample", samples, format_func=lambda s: f"{s.batch} ({'blind' if s.blind else 'not blind'})",
                          key="blind_sample")
    if picked is None:
        return
    label = "Turn blinding off for this sample" if picked.blind else "Turn blinding back on for this sample"
    if st.button(label, key=f"blind_toggle_{picked.batch}"):
        changed = guarded_write(lambda: set_sample_blinding(engine(), principal, picked.batch, not picked.blind,
                                                            picked.blind))
        if changed is not None:
            confirm(f"{picked.batch}: blinding {'on' if not picked.blind else 'off'} ({changed} assignments).")
            st.rerun()
