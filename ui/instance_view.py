"""Rendering of one benchmark instance: query, constraints by category, documents with role badges."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import streamlit as st

from core.review.annotations import HistoryEntry
from core.review.evidence_edits import automatic_checks, evidence_pair
from core.store.benchmark import InstanceDetail
from core.store.generated import GeneratedMark, generated_mark
from core.store.sanitize import html_markdown, inert_images, inline_code, plain_markdown

CATEGORY_TITLES = {
    "persona": "Persona definition",
    "output": "Output constraints",
    "knowledge_protocol": "Knowledge interaction protocol",
}
ROLE_COLORS = {"supporting": "green", "noise": "gray", "conflicting": "red", "partial": "orange"}
MODE_LABELS = {"noisy": "Noisy retrieval", "gap": "Knowledge gap", "conflict": "Factual conflict"}

if TYPE_CHECKING:
    from core.store.models import Document


def render_constraints(detail: InstanceDetail) -> None:
    """Constraints grouped by category, each with its sub-dimension, judge method and precondition."""
    for category, title in CATEGORY_TITLES.items():
        members = [c for c in detail.constraints if c.category == category]
        st.markdown(f"**{title}** ({len(members)})")
        if not members:
            st.caption("none")
        for c in members:
            how = f"rule {inline_code(c.checker_id or '')}" if c.judge_method == "rule" else "LLM judge"
            condition = f" · only if **{plain_markdown(c.precondition)}**" if c.precondition else ""
            st.markdown(f"- {inline_code(c.cid)} {plain_markdown(c.text)}  \n  "
                        f":gray[{plain_markdown(c.sub_dimension)} · {how}{condition}]")
            if c.judge_method == "llm" and c.criterion:
                st.caption(f"Criterion: {plain_markdown(c.criterion)}")


def render_document_body(document: Document) -> None:
    """A document's text; HTML is sanitised first, tables render as markdown, plain text is escaped; images in any
    of them show as "[image: URL]" text (never fetched)."""
    if document.content_type == "html":
        st.markdown(html_markdown(document.text), unsafe_allow_html=True)
    elif document.content_type == "markdown_table":
        st.markdown(inert_images(document.text))
    elif document.content_type == "csv":
        st.code(document.text, language=None)
    else:
        st.markdown(plain_markdown(document.text).replace("\n", "  \n"))


def render_documents(detail: InstanceDetail) -> None:
    """Documents in prompt order with role badges; supporting and conflicting ones are expanded."""
    summaries = sorted({d.conflict_summary for d in detail.documents if d.conflict_summary})
    for summary in summaries:
        st.error(f"Conflict: {plain_markdown(summary)}", icon=":material/compare_arrows:")
    for number, document in enumerate(detail.documents, start=1):
        highlighted = document.role in ("supporting", "conflicting")
        label = f"[doc {number}] {plain_markdown(document.title or '')} — {document.role}"
        with st.expander(label, expanded=highlighted):
            st.badge(document.role, color=ROLE_COLORS.get(document.role, "gray"))
            if document.conflict_group:
                st.caption(f"conflict group {plain_markdown(document.conflict_group)}")
            render_document_body(document)
            if document.source:
                st.caption(f"Source: {plain_markdown(document.source)} · {inline_code(document.doc_uid)} · "
                           f"{document.content_type}")


def render_generated_mark(mark: GeneratedMark | None) -> None:
    """The LLM mark of an item, as a badge with the full line (what the model drafted, wrote or edited, and which)."""
    if mark is None:
        return
    st.badge(mark.short(), icon=":material/smart_toy:", color="violet")
    st.caption(plain_markdown(mark.label()))


def render_instance(detail: InstanceDetail, *, compact: bool = False) -> None:
    """The full instance view: header, query, constraints and documents side by side.

    compact: a one-line header without the origin and status (the review panels, where experts judge blind).
    """
    instance = detail.instance
    mode = MODE_LABELS.get(instance.mode, instance.mode)
    if compact:
        st.markdown(f"**{plain_markdown(instance.uid)}** · v{instance.version} · {plain_markdown(detail.domain)} · "
                    f"{plain_markdown(mode or '')}")
    else:
        st.subheader(f"{plain_markdown(instance.uid)} · v{instance.version}")
        st.markdown(f"{plain_markdown(detail.domain)} · **{plain_markdown(mode or '')}** · "
                    f"{plain_markdown(instance.origin)} · status {inline_code(instance.status)}")
    render_generated_mark(generated_mark(instance.meta, len(detail.constraints)))
    st.info(plain_markdown(instance.query), icon=":material/help:")
    left, right = st.columns([2, 3])
    with left:
        st.markdown("#### Instruction set")
        render_constraints(detail)
    with right:
        st.markdown(f"#### Documents ({len(detail.documents)})")
        render_documents(detail)


def render_evidence_edits(detail: InstanceDetail, key: str) -> bool:
    """A built item's original and edited evidence side by side (the edit highlighted, the replaced text struck
    through; untrusted text escaped) and its automatic checks' verdicts and reasons; False when it has neither."""
    pair = evidence_pair(detail.documents)
    checks = automatic_checks(detail.instance.meta)
    if pair is None and not checks:
        return False
    st.markdown("#### Original and edited evidence")
    if pair is not None:
        for column, side in zip(st.columns(2), (pair.clean, pair.edited), strict=True):
            with column, st.container(border=True):
                st.markdown(f"**{plain_markdown(side.title)}**")
                st.markdown(side.markdown(), unsafe_allow_html=True)
        if pair.variants > 1:
            st.caption(f"The same edit sits in {pair.variants} edited documents (one per position in the prompt); "
                       "one is shown. Highlighted: the edited span; struck through: the text it replaced.")
    st.markdown("##### Automatic checks")
    if not checks:
        st.caption("No automatic check is stored on this item.")
        return True
    failed = sum(not c.passed for c in checks)
    st.caption(f"{len(checks) - failed} of {len(checks)} checks passed" + (f", {failed} failed" if failed else ""))
    st.dataframe([{"check": c.name.replace("_", " "), "verdict": "passed" if c.passed else "failed",
                   "reason": c.reason, "decided by": c.by} for c in checks], hide_index=True, width="stretch",
                 key=f"checks_{key}")
    return True


def render_verification_decision(who: str, payload: dict[str, Any]) -> None:
    """One expert's verification decision: the decision, the consistency verdict and the context-validity verdict."""
    st.markdown(f"**{plain_markdown(who)}** · decision **{plain_markdown(str(payload.get('decision', '')).replace('_', ' '))}**")
    clashing = ", ".join(inline_code(str(c)) for c in payload.get("clashing_constraints") or []) or "none"
    st.markdown(f"Consistency: **{plain_markdown(str(payload.get('consistency', '')))}** · clashing: {clashing}")
    if payload.get("consistency_note"):
        st.caption(f"Consistency note: {plain_markdown(str(payload['consistency_note']))}")
    roles = ", ".join(f"{inline_code(str(d))} → {plain_markdown(str(r))}" for d, r in (payload.get("role_corrections") or {}).items())
    st.markdown(f"Context: **{'valid' if payload.get('context_valid') else 'invalid'}** · role corrections: {roles or 'none'}")
    edits = payload.get("constraint_edits") or {}
    if edits:
        st.markdown("Wording edits: " + "; ".join(f"{inline_code(str(c))} → {plain_markdown(str(t))}" for c, t in edits.items()))
    if payload.get("context_note"):
        st.caption(f"Context note: {plain_markdown(str(payload['context_note']))}")


def _when(entry: HistoryEntry) -> str:
    return f"{entry.created_at:%Y-%m-%d %H:%M} UTC"


def render_verification_history(history: list[tuple[int, HistoryEntry]]) -> None:
    """Every verification decision and admin decision on an instance's versions, oldest first, with their notes;
    decisions their author undid are struck through (they no longer count)."""
    if not history:
        st.caption("No verification decision yet.")
        return
    for version, entry in history:
        undone = " · :orange[undone by its author, does not count]" if entry.undone else ""
        if entry.kind == "adjudication":
            p = entry.payload
            st.markdown(f"v{version} · {_when(entry)} · admin decision by **{plain_markdown(entry.author)}**: "
                        f"**{plain_markdown(str(p.get('decision', '')).replace('_', ' '))}**{undone}")
            if p.get("note"):
                st.caption(f"Reason: {plain_markdown(str(p['note']))}")
            continue
        with st.container(border=True):
            saved = " · saved a new version" if entry.payload.get("new_instance_id") else ""
            st.caption(f"v{version} · {_when(entry)} · resulting status "
                       f"{inline_code(str(entry.payload.get('resulting_status', '')))}{saved}{undone}")
            render_verification_decision(entry.author, entry.payload)


def render_label_history(entries: list[HistoryEntry]) -> None:
    """An expert's labels on one response, oldest first: each item's answer, the note, and whether it was undone."""
    live = [i for i, e in enumerate(entries) if not e.undone]
    rows = []
    for i, e in enumerate(entries):
        p = e.payload
        counts = "no (undone)" if e.undone else "yes (latest)" if live and i == live[-1] else "no (replaced)"
        row = {"when": _when(e), "counts": counts}
        row |= {cid: "yes" if v else "no" for cid, v in (p.get("constraints") or {}).items()}
        row |= {k: p[k] for k in ("valid_refusal", "conflict_recognized", "faithful") if p.get(k) is not None}
        rows.append(row | {"note": p.get("note", "")})
    st.dataframe(rows, hide_index=True, width="stretch")
