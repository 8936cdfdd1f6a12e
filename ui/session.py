"""Per-browser-session state shared by pages: the database engine (the signed-in user is ui.auth's)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from core.config import database_url
from core.store.db import get_engine

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


@st.cache_resource
def _engine_for(url: str) -> Engine:
    return get_engine(url)


def engine() -> Engine:
    """The process-wide SQLAlchemy engine for the configured database (thread-safe, so cache_resource is appropriate)."""
    return _engine_for(database_url())



FILTER_SLOT = "_sidebar_filter_slot"


def filter_slot():
    """Where a page puts its filters: the sidebar place app.py keeps above the page list (so the filters are on
    screen at 1280x800), else the sidebar itself (a page run alone, as in AppTest)."""
    return st.session_state.get(FILTER_SLOT) or st.sidebar
