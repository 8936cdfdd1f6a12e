"""AppTest: sign-in flow, role-based page list, every workspace page's guard per role, expired sessions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlmodel import Session, select
from streamlit.testing.v1 import AppTest

from core.store.models import Annotation
from tests.workspace_factories import PASSWORDS, principal, seeded_db
from ui.navigation import pages_for

ROOT = Path(__file__).resolve().parents[2]
WORKSPACE_PAGES = {
    "pages/verify_instances.py": ("Verify instances", {"expert", "admin"}),
    "pages/label_responses.py": ("Label responses", {"expert", "admin"}),
    "pages/adjudicate.py": ("Gold labels & adjudication", {"admin"}),
    "pages/judge_alignment.py": ("Judge alignment", {"admin", "analyst"}),
    "pages/users.py": ("Users", {"admin"}),
}
USERS = {"admin": "admin", "expert": "alice", "analyst": "ana", "viewer": "vic"}


@pytest.fixture
def seeded(tmp_path, monkeypatch):
    s = seeded_db(tmp_path)
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", s.url)
    return s


def page_as(path: str, who: str | None, when: datetime | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / path), default_timeout=30)
    if who:
        at.session_state["gauntlet_principal"] = principal(who, when)
    return at.run()


CASES = [pytest.param(path, role, id=f"{Path(path).stem}-{role}") for path in WORKSPACE_PAGES for role in USERS]


@pytest.mark.parametrize("path, role", CASES)
def test_page_guard_per_role(seeded, path, role):
    title, allowed = WORKSPACE_PAGES[path]
    at = page_as(path, USERS[role])
    assert not at.exception, at.exception
    if role in allowed:
        assert [t.value for t in at.title] == [title]
        assert not at.error
    else:
        assert [e.value for e in at.error] == [f"Your role ({role}) may not open this page."]
        assert not at.title and not at.markdown and not at.dataframe and not at.button


@pytest.mark.parametrize("path", list(WORKSPACE_PAGES))
def test_page_asks_to_sign_in_when_signed_out(seeded, path):
    at = page_as(path, None)
    assert [t.value for t in at.title] == ["Sign in to RAG Gauntlet"]
    assert not at.dataframe and not at.expander and len(at.text_input) == 2


@pytest.mark.parametrize(
    "role, expected",
    [("expert", {"Browse benchmark", "Verify instances", "Label responses"}),
     ("analyst", {"Browse benchmark", "Judge alignment"}),
     ("viewer", {"Browse benchmark"})],
)
def test_page_list_depends_on_role(role, expected):
    titles = {p.title for p in pages_for(role)}
    assert expected <= titles
    assert not ({"Users", "Gold labels & adjudication"} & titles)
    assert {"Users", "Gold labels & adjudication", "Verify instances", "Judge alignment"} <= {p.title for p in pages_for("admin")}


@pytest.mark.parametrize(
    "name, username, password, signed_in",
    [("right password", "alice", PASSWORDS["alice"], True), ("wrong password", "alice", "wrong-password", False)],
)
def test_login_flow(seeded, name, username, password, signed_in):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30).run()
    assert [t.value for t in at.title] == ["Sign in to RAG Gauntlet"]
    at.text_input(key="login_username").set_value(username)
    at.text_input(key="login_password").set_value(password)
    at.button[0].click().run()
    assert ("gauntlet_principal" in at.session_state) is signed_in, name
    if not signed_in:
        assert [e.value for e in at.error] == ["Unknown username or wrong password."]
    else:
        at.switch_page("pages/verify_instances.py").run()
        assert [t.value for t in at.title] == ["Verify instances"]


def test_expired_session_shows_login_and_cannot_write(seeded):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30)
    at.session_state["gauntlet_principal"] = principal("alice")
    at.run()
    at.switch_page("pages/verify_instances.py").run()
    assert [t.value for t in at.title] == ["Verify instances"]
    at.session_state["gauntlet_principal"] = principal("alice", datetime.now(UTC) - timedelta(hours=9))
    at.button(key=f"v_accept_{seeded.instances['E-noisy']}").click().run()
    assert "gauntlet_principal" not in at.session_state
    assert any("expired" in w.value for w in at.warning) or any("sign in" in e.value.lower() for e in at.error)
    with Session(seeded.engine) as s:
        assert s.exec(select(Annotation)).all() == []
