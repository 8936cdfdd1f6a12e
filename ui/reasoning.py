"""The reasoning of a response, shown collapsed under its answer (never mixed into it)."""

from __future__ import annotations

import streamlit as st

from core.generation.reasoning import UNFINISHED_REASON, Reasoned


def show_reasoning(split: Reasoned, tokens: int, key: str) -> None:
    """A collapsed expander with the model's reasoning and its token count; a warning when it never finished."""
    if split.unfinished:
        st.warning(f"No answer: {UNFINISHED_REASON} (the reasoning was cut off before an answer).",
                   icon=":material/hourglass_bottom:")
    if not split.reasoning:
        return
    label = f"Reasoning ({tokens:,} tokens)" if tokens else "Reasoning"
    with st.expander(label, expanded=False):
        st.text_area(label, split.reasoning, height=200, disabled=True, key=f"reasoning_{key}",
                     label_visibility="collapsed")
