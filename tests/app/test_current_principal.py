"""ui.auth.current_principal in a page run (AppTest), the session cookie stubbed: a tab-only sign-in never reads the
cookie; a sign-in that came from the cookie reads it on every run, takes the account's current role and is signed out
once the session is revoked; a tab without a principal is restored from a valid cookie."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from streamlit.testing.v1 import AppTest

from core.review import sessions
from core.review.auth import update_user
from tests.app.test_sessions import engine, new_session  # noqa: F401  (engine: the seeded database fixture)
from tests.workspace_factories import principal


def _script() -> None:
    import streamlit as st

    from ui.auth import current_principal

    found = current_principal()
    st.text(f"{found.username} {found.role} {','.join(found.domains)}" if found else "signed out")


def _revoke(db, token: str) -> None:
    sessions.revoke(db, token)


def _new_domains(db, token: str) -> None:
    update_user(db, "alice", domains=["Medical"])  # domains only: the session lives on, with the new domains


CASES = [  # (tab state before the run, what happens to the session, cookie reads, shown)
    pytest.param("tab-only", None, 0, "alice expert Energy", id="tab-only-sign-in-reads-no-cookie"),
    pytest.param("bound", None, 1, "alice expert Energy", id="cookie-sign-in-re-validated"),
    pytest.param("bound", _new_domains, 1, "alice expert Medical", id="cookie-sign-in-takes-new-domains"),
    pytest.param("bound", _revoke, 1, "signed out", id="revoked-cookie-signs-the-tab-out"),
    pytest.param("none", None, 1, "alice expert Energy", id="restored-from-the-cookie"),
    pytest.param("none", _revoke, 1, "signed out", id="revoked-cookie-restores-nobody"),
]


@pytest.mark.parametrize(("tab", "change", "reads", "shown"), CASES)
def test_the_cookie_is_read_only_where_it_decides(engine, monkeypatch, tab, change, reads, shown):  # noqa: F811
    from ui import auth

    token = new_session(engine, at=datetime.now(UTC))
    read: list[int] = []
    monkeypatch.setattr(auth, "_session_cookie", lambda: read.append(1) or token)
    at = AppTest.from_function(_script, default_timeout=30)
    if tab != "none":
        at.session_state[auth.SESSION_KEY] = principal("alice")
        at.session_state[auth.BOUND_KEY] = tab == "bound"
    if change is not None:
        change(engine, token)
    at.run()
    assert not at.exception, at.exception
    assert [t.value for t in at.text] == [shown]
    assert len(read) == reads
    if tab == "none" and shown != "signed out":
        assert at.session_state[auth.BOUND_KEY] is True  # restored from the cookie: re-validated from now on
    if tab == "bound" and shown == "signed out":
        assert at.session_state[auth.NOTICE_KEY] == "Your session ended; sign in again."
