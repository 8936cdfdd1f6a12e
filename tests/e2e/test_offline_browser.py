"""Offline means offline (Debian chromium): the sign-in page and every page of the app, as an admin, make no
request to any host but 127.0.0.1 (every other request is blocked and recorded), the tab's icon is an inline data:
URL, and each role's sidebar lists exactly its pages. A failing test leaves a screenshot in test-artifacts/pages/."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from bench.make_synthetic_results import make_results
from core.review.auth import create_user
from core.store.db import make_engine
from tests.e2e.harness import (
    OffHost,
    charts_drawn,
    chromium,
    new_context,
    open_page,
    serve,
    settle,
    shot_on_failure,
    sign_in,
)
from ui.navigation import PAGES, pages_for

pytestmark = pytest.mark.browser
ACCOUNTS = {"admin": ("admin", "admin-pass-1"), "eve": ("expert", "eve-pass-123"), "ana": ("analyst", "ana-pass-123"),
            "vic": ("viewer", "vic-pass-123")}
ICON = "link[rel='shortcut icon']"


@pytest.fixture(scope="module")
def served(session_url_factory):
    url = session_url_factory()
    make_results(url, n_models=3, n_instances=40, seed=4)
    engine = make_engine(url)
    for name, (role, password) in ACCOUNTS.items():
        create_user(engine, name, role, password=password, domains=["Energy"] if role == "expert" else ())
    engine.dispose()
    with serve(url) as app:
        yield app.url


def _icon(page) -> str:
    return page.evaluate(f"document.querySelector(\"{ICON}\") ? document.querySelector(\"{ICON}\").href : ''")


def _sidebar_links(page) -> list[str]:
    """The titles of the sidebar's page links (without their icon's ligature name), once the sidebar has drawn."""
    locator = page.locator("[data-testid=stSidebar] [data-testid=stPageLink] a")
    locator.first.wait_for(timeout=30_000)
    settle(page)
    links = locator.all_inner_texts()
    return [text.split("\n")[-1] for text in links]


def test_every_page_is_served_from_this_machine(served):
    off_host, requested, icons = OffHost(), [], {}
    with chromium() as browser:
        context = new_context(browser, off_host, width=1440)
        page = context.new_page()
        page.on("request", lambda request: requested.append(request.url))
        with shot_on_failure(page, "pages"):
            page.goto(served)
            settle(page)
            page.get_by_role("textbox", name="Username").wait_for()
            icons["Sign in"] = _icon(page)
            sign_in(page, served, "admin", ACCOUNTS["admin"][1])
            for spec in PAGES:
                open_page(page, spec.title)
                page.get_by_role("heading", name=spec.title).first.wait_for()
                charts_drawn(page)
                assert not page.locator("[data-testid=stException]").count(), spec.title
                icons[spec.title] = _icon(page)
    assert off_host.blocked == []
    assert [u for u in requested if urlsplit(u).scheme in ("http", "https", "ws", "wss")
            and urlsplit(u).hostname != "127.0.0.1"] == []
    assert {title: icon[:5] for title, icon in icons.items()} == {title: "data:" for title in icons}


@pytest.mark.parametrize("who", ["eve", "ana", "vic"])
def test_each_role_sees_its_pages(served, who):
    off_host = OffHost()
    with chromium() as browser:
        page = new_context(browser, off_host, width=1440).new_page()
        with shot_on_failure(page, "pages"):
            sign_in(page, served, who, ACCOUNTS[who][1])
            assert _sidebar_links(page) == [p.title for p in pages_for(ACCOUNTS[who][0])]
    assert off_host.blocked == []
