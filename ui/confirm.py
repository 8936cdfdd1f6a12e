"""Confirmations that outlive the rerun after a write: kept in the session state by `confirm`, shown on the next run
by `show_confirmations` as a toast and as a line that stays until the next action."""

from __future__ import annotations

import streamlit as st

KEY = "pending_confirmations"


def confirm(message: str) -> None:
    """Keep `message` for the next run of the page (call it before st.rerun)."""
    st.session_state.setdefault(KEY, []).append(message)


def show_confirmations() -> None:
    """The confirmations kept since the last run: each as a long toast and a success line."""
    for message in st.session_state.pop(KEY, []):
        st.toast(message, icon=":material/check_circle:", duration="long")
        st.success(message, icon=":material/check_circle:")
