"""Signing an AppTest session in as a given role, the way the login page does."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from core.review.auth import Principal, now_utc
from ui.auth import SESSION_KEY


def sign_in(at: AppTest, role: str, username: str = "tester", domains: tuple[str, ...] = ()) -> AppTest:
    """Put a fresh principal with `role` into the AppTest's session state; returns the AppTest."""
    now = now_utc()
    at.session_state[SESSION_KEY] = Principal(username=username, role=role, domains=domains, login_at=now, last_seen=now)
    return at
