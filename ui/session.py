"""Per-browser-session state shared by pages: the database engine (the signed-in user is ui.auth's)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from core.config import database_url
from core.store.db import get_engine

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


def engine() -> Engine:
    """The process-wide SQLAlchemy engine for the configured database (thread-safe): core.store.db.get_engine's one
    per URL, a dict lookup (about 1 us a call where st.cache_resource took about 30 us; pages call this many times a
    run)."""
    return get_engine(database_url())



FILTER_SLOT = "_sidebar_filter_slot"


def filter_slot():
    """Where a page puts its filters: the sidebar place app.py keeps above the page list (so the filters are on
    screen at 1280x800), else the sidebar itself (a page run alone, as in AppTest)."""
    return st.session_state.get(FILTER_SLOT) or st.sidebar
