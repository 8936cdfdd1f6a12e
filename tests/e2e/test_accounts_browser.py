"""Browser (Debian chromium): the Users page edits exactly the chosen account, and a signed-in session survives a
reload and a new tab, ends on sign-out everywhere, and ends when an admin changes the account's role."""

from __future__ import annotations

import pytest
from sqlmodel import Session, select

from core.store.models import User
from tests.e2e.harness import (
    choose,
    chromium,
    new_context,
    open_page,
    serve,
    settle,
    shot,
    sign_in,
    submit_sign_in,
    wait_until,
)
from tests.workspace_factories import PASSWORDS, seeded_db

pytestmark = pytest.mark.browser
FOLDER = "accounts"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """One app server for the module; each test works on accounts no other test here changes (alice: password;
    carol: role; bob: throttled; ana: sessions), so the order of the tests does not matter."""
    seeded = seeded_db(tmp_path_factory.mktemp("accounts"))
    with serve(seeded.url) as served:
        yield served.url, seeded


def _user(seeded, name: str) -> User:
    with Session(seeded.engine) as session:
        return session.exec(select(User).where(User.username == name)).one()


def edit_form(page, username: str):
    """Choose `username` in the Users page and return its edit form once it is rendered (settle alone can return
    before the rerun has started on a loaded machine, leaving the previous account's form on screen)."""
    choose(page, "Account", username)
    settle(page)
    from playwright.sync_api import expect

    form = page.get_by_test_id("stForm").filter(has_text="Save changes").filter(has_text=f"Editing {username},")
    form.wait_for()
    # while a rerun replaces the form, the outgoing copy can still be attached beside the new one: wait for one
    expect(form).to_have_count(1, timeout=30_000)
    expect(form.get_by_label("Role", exact=True)).to_have_count(1, timeout=30_000)
    return form


def test_changing_only_the_password_keeps_role_and_domains(app):
    url, seeded = app
    with chromium() as browser:
        page = new_context(browser).new_page()
        try:
            sign_in(page, url, "admin", PASSWORDS["admin"])
            open_page(page, "Users")
            form = edit_form(page, "alice")
            form.get_by_label("New password (empty: unchanged)").fill("alice-new-pass-1")
            form.get_by_role("button", name="Save changes").click()
            settle(page)
            page.get_by_text("Saved alice").first.wait_for()
            shot(page, FOLDER, "1-users-saved")
        finally:
            shot(page, FOLDER, "last-users")
    alice = _user(seeded, "alice")
    assert (alice.role, alice.domains) == ("expert", ["Energy"])


def test_a_session_survives_a_reload_and_a_new_tab_and_ends_on_sign_out(app):
    url, _ = app
    with chromium() as browser:
        context = new_context(browser)
        page = context.new_page()
        try:
            sign_in(page, url, "ana", PASSWORDS["ana"])
            open_page(page, "Judge alignment")
            page.reload()
            settle(page)
            page.get_by_text("Signed in as ana").wait_for()
            assert page.get_by_role("heading", name="Judge alignment").count()  # the same page, still signed in
            other = context.new_page()
            other.goto(url)
            settle(other)
            other.get_by_text("Signed in as ana").wait_for()
            shot(other, FOLDER, "2-new-tab")
            cookie = next(c for c in context.cookies() if c["name"].startswith("gauntlet_session_"))
            assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
            assert page.evaluate("document.cookie").find("gauntlet_session") == -1  # not readable by scripts
            other.get_by_role("button", name="Sign out").click()
            settle(other)
            other.get_by_role("textbox", name="Username").wait_for()
            page.reload()
            settle(page)
            page.get_by_role("textbox", name="Username").wait_for()
            assert [c for c in context.cookies() if c["name"].startswith("gauntlet_session_")] == []
        finally:
            shot(page, FOLDER, "last-session")


def test_sign_in_is_throttled_with_a_clear_message(app):
    url, _ = app
    with chromium() as browser:
        page = new_context(browser).new_page()
        page.goto(url)
        settle(page)
        for attempt in range(6):
            submit_sign_in(page, "bob", f"wrong-password-{attempt}")
        page.get_by_text("Too many failed sign-ins for this account from this address. Try again in").wait_for()
        shot(page, FOLDER, "5-throttled")
        submit_sign_in(page, "bob", PASSWORDS["bob"])  # the right password from a new browser waits too, for now
        page.get_by_text("Too many failed sign-ins for this account from this address.").wait_for()
        assert not page.get_by_text("Signed in as bob").count()


def test_a_role_change_ends_the_accounts_sessions(app):
    url, seeded = app
    with chromium() as browser:
        expert = new_context(browser).new_page()
        admin = new_context(browser).new_page()
        try:
            sign_in(expert, url, "carol", PASSWORDS["carol"])
            sign_in(admin, url, "admin", PASSWORDS["admin"])
            open_page(admin, "Users")
            form = edit_form(admin, "carol")
            choose(admin, "Role", "viewer", scope=form)
            form.get_by_role("button", name="Save changes").click()
            settle(admin)
            admin.get_by_text("Saved carol").first.wait_for()
            wait_until(lambda: _user(seeded, "carol").role == "viewer", "the role change")
            admin.get_by_text("expert → viewer").first.wait_for(state="attached")  # the audit log (a grid cell)
            shot(admin, FOLDER, "3-audit-log")
            expert.reload()
            settle(expert)
            expert.get_by_role("textbox", name="Username").wait_for()
            expert.get_by_text("Your account was changed").wait_for()
            shot(expert, FOLDER, "4-signed-out-after-role-change")
        finally:
            shot(admin, FOLDER, "last-role-change")
