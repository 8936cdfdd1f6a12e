"""Browser (Debian chromium): a write's confirmation survives the rerun that refreshes the page (the toast is on
screen after it, the new account is listed), and the watch panel of a finished run ends with a link that opens the
run's results (issue 28 item 7)."""

from __future__ import annotations

import pytest

from tests.e2e.harness import choose, chromium, new_context, open_page, serve, settle, shot, sign_in
from tests.workspace_factories import PASSWORDS, seeded_db

pytestmark = pytest.mark.browser
FOLDER = "confirmations"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One app server and one browser for the module (the tests write nothing the other reads)."""
    seeded = seeded_db(tmp_path_factory.mktemp("confirmations"))
    with serve(seeded.url) as app, chromium() as browser:
        yield app.url, browser, seeded


@pytest.fixture
def app(served):
    """A fresh browser context signed in as the admin."""
    url, browser, seeded = served
    page = new_context(browser).new_page()
    try:
        sign_in(page, url, "admin", PASSWORDS["admin"])
        yield page, seeded
    finally:
        page.context.close()


def test_a_new_account_is_confirmed_after_the_rerun_and_listed(app):
    page, _ = app
    open_page(page, "Users")
    form = page.get_by_test_id("stForm").filter(has_text="Create account")
    form.get_by_label("Username").fill("dora")
    form.get_by_label("Password (empty: generate one)").fill("dora-pass-123456")
    form.get_by_role("button", name="Create account").click()
    settle(page)
    page.get_by_test_id("stToast").filter(has_text="Created dora.").wait_for(timeout=30_000)
    choose(page, "Account", "dora")  # the account picker, drawn from the list read after the write
    page.get_by_test_id("stForm").filter(has_text="Editing dora,").wait_for(timeout=30_000)
    shot(page, FOLDER, "users-created")


def test_the_watch_panel_links_to_the_results(app):
    page, seeded = app
    open_page(page, "Run evaluation")
    link = page.get_by_role("link", name=f"See run {seeded.run_id} on Leaderboard")
    link.wait_for(timeout=30_000)
    shot(page, FOLDER, "watch-panel-link")
    link.click()
    page.get_by_role("heading", name="Leaderboard").wait_for(timeout=30_000)
    settle(page)
    assert f"runs={seeded.run_id}" in page.url
