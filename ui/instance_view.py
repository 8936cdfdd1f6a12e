"""Rendering of one benchmark instance: query, constraints by category, documents with role badges."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from core.store.benchmark import InstanceDetail
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
    st.info(plain_markdown(instance.query), icon=":material/help:")
    left, right = st.columns([2, 3])
    with left:
        st.markdown("#### Instruction set")
        render_constraints(detail)
    with right:
        st.markdown(f"#### Documents ({len(detail.documents)})")
        render_documents(detail)
