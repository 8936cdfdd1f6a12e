"""Browser test: sign in through the form, open every results page of the running app in headless Debian chromium and
save a screenshot; a role without access (expert) gets only the refusal.

Needs /usr/bin/chromium (CI installs it; never `playwright install`). Fails with a clear message when it is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.make_synthetic_results import make_results
from core.review.auth import create_user
from core.store.db import make_engine
from tests.e2e.harness import charts_drawn, chromium, require_chromium, serve, settle

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
PAGES = {
    "leaderboard": "Leaderboard",
    "domains": "Domains",
    "constraint_errors": "Constraint errors",
    "robustness": "Robustness",
    "model_pairs": "Model pairs",
    "data_quality": "Data quality",
    "pick_generator": "Pick a generator",
}
USERS = {"ana": ("analyst", "ana-pass-123"), "eve": ("expert", "eve-pass-123")}


@pytest.fixture(scope="module")
def server(session_url_factory):
    """One app server for the module, on a database of synthetic results and two users."""
    require_chromium()
    url = session_url_factory()
    make_results(url, n_models=4, n_instances=90, seed=2)
    engine = make_engine(url)
    for name, (role, password) in USERS.items():
        create_user(engine, name, role, password=password)
    engine.dispose()
    with serve(url) as served:
        yield served.url


@pytest.fixture(scope="module")
def browser(server):
    with chromium() as b:
        yield b


def _open_signed_in(browser, server: str, page: str, user: str, errors: list[str]):
    """A new tab on the page's deep link, signed in through the login form as `user`; the page then opens."""
    tab = browser.new_page(viewport={"width": 1400, "height": 1000})
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.goto(f"{server}/{page}", wait_until="domcontentloaded")
    settle(tab, timeout=60_000)
    tab.get_by_role("textbox", name="Username").fill(user)
    tab.get_by_role("textbox", name="Password").fill(USERS[user][1])
    tab.get_by_role("button", name="Sign in").click()
    tab.get_by_role("textbox", name="Username").wait_for(state="detached", timeout=30_000)
    settle(tab, timeout=60_000)
    sidebar = tab.locator("[data-testid=stSidebar]").inner_text()
    assert f"Signed in as {user}" in sidebar, sidebar
    assert tab.locator("[data-testid=stSidebarNav]").count() == 0, "Streamlit's automatic page list must not appear"
    return tab


@pytest.mark.parametrize("page", list(PAGES))
def test_page_renders_charts_in_chromium(server, browser, page):
    ARTIFACTS.mkdir(exist_ok=True)
    errors: list[str] = []
    tab = _open_signed_in(browser, server, page, "ana", errors)
    tab.wait_for_selector("[data-testid=stDataFrame]" if page == "pick_generator" else ".js-plotly-plot .main-svg", timeout=30_000)
    charts_drawn(tab)
    tab.screenshot(path=str(ARTIFACTS / f"dashboard_{page}.png"), full_page=True)
    assert not tab.locator("[data-testid=stException]").count(), tab.locator("[data-testid=stException]").first.inner_text()
    assert tab.get_by_role("heading", name=PAGES[page]).count() >= 1
    assert not errors, errors
    tab.close()


@pytest.mark.parametrize(("page", "user"), [pytest.param("leaderboard", "eve", id="leaderboard-expert"),
                                            pytest.param("constraint_errors", "eve", id="constraint_errors-expert")])
def test_disallowed_role_sees_only_the_refusal(server, browser, page, user):
    ARTIFACTS.mkdir(exist_ok=True)
    errors: list[str] = []
    tab = _open_signed_in(browser, server, page, user, errors)
    tab.get_by_text(f"Your role ({USERS[user][0]}) may not open this page.").wait_for(timeout=30_000)
    tab.screenshot(path=str(ARTIFACTS / f"dashboard_{page}_refused.png"), full_page=True)
    assert tab.get_by_role("heading", name=PAGES[page]).count() == 0
    assert not tab.locator(".js-plotly-plot").count() and not tab.locator("[data-testid=stDataFrame]").count()
    assert not errors, errors
    tab.close()
