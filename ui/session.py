"""Per-browser-session state shared by pages: the database engine and the current user's role."""

from __future__ import annotations

import streamlit as st
from sqlalchemy.engine import Engine

from core.db import get_engine


@st.cache_resource
def engine() -> Engine:
    """The process-wide SQLAlchemy engine (thread-safe, so cache_resource is appropriate)."""
    return get_engine()


def current_role() -> str:
    """Role of the signed-in user; 'viewer' when nobody is signed in."""
    return st.session_state.get("role", "viewer")
