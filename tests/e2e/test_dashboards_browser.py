"""Browser test: sign in through the form, open every results page of the running app in headless Debian chromium and
save a screenshot; a role without access (expert) gets only the refusal.

Needs /usr/bin/chromium (CI installs it; never `playwright install`). Fails with a clear message when it is absent.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.make_synthetic_results import make_results
from core.review.auth import create_user
from core.store.db import make_engine

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
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
IDLE = "[data-testid=stApp][data-test-script-state=notRunning]"
USERS = {"ana": ("analyst", "ana-pass-123"), "eve": ("expert", "eve-pass-123")}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(session_url_factory):
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium package (apt-get install chromium); browser tests never download a browser")
    url = session_url_factory()
    make_results(url, n_models=4, n_instances=90, seed=2)
    engine = make_engine(url)
    for name, (role, password) in USERS.items():
        create_user(engine, name, role, password=password)
    engine.dispose()
    port = _free_port()
    env = {**os.environ, "GAUNTLET_DATABASE_URL": url, "GAUNTLET_FIRST_START": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "ui.serve", "--server.headless=true", f"--server.port={port}",
                             "--browser.gatherUsageStats=false"], cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.5)
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=20)


@pytest.fixture(scope="module")
def browser(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        yield b
        b.close()


def _open_signed_in(browser, server: str, page: str, user: str, errors: list[str]):
    """A new tab on the page's deep link, signed in through the login form as `user`; the page then opens."""
    tab = browser.new_page(viewport={"width": 1400, "height": 1000})
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.goto(f"{server}/{page}", wait_until="domcontentloaded")
    tab.wait_for_selector(IDLE, timeout=60_000)
    tab.get_by_role("textbox", name="Username").fill(user)
    tab.get_by_role("textbox", name="Password").fill(USERS[user][1])
    tab.get_by_role("button", name="Sign in").click()
    tab.get_by_role("textbox", name="Username").wait_for(state="detached", timeout=30_000)
    tab.wait_for_timeout(300)
    tab.wait_for_selector(IDLE, timeout=60_000)
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
    tab.wait_for_timeout(500)  # let plotly finish its first paint
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
