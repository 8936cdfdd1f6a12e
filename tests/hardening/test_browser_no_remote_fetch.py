"""Browser (Debian chromium): pages whose documents, responses and notes carry remote images make no request to any
host but 127.0.0.1, show the images as "[image: URL]" text, and are served with the Content-Security-Policy."""

from __future__ import annotations

import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.e2e.harness import CHROMIUM, chromium, one_browser_per_module, serve, settle
from tests.e2e.test_expert_flow import _sign_in
from tests.hardening.untrusted import EXFIL, poisoned_db

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "no_remote_fetch"
PLACEHOLDER = f"[image: {EXFIL}]"
__all__ = ["one_browser_per_module"]  # autouse here: the module's chromium is closed when it ends
VISITS = [  # (who, page link, tab to open or None)
    ("alice", "Verify instances", None),
    ("alice", "Label responses", None),
    ("admin", "Gold labels & adjudication", "Disagreements"),
    ("admin", "Gold labels & adjudication", "Verification disagreements"),
]


@pytest.fixture
def server(tmp_path):
    seeded = poisoned_db(tmp_path)
    with serve(seeded.url) as served:
        yield served.url


IMAGES_SETTLED = "() => Array.from(document.images).every(i => i.complete)"


def _images(page) -> list[str]:
    return page.evaluate("Array.from(document.images, i => i.currentSrc || i.src)")


@pytest.mark.browser
def test_untrusted_images_are_never_fetched(server):
    if not CHROMIUM.exists():
        pytest.fail("/usr/bin/chromium is missing: install it with `apt-get install -y chromium` (CI's .ci/run does)")
    with urllib.request.urlopen(server, timeout=5) as response:
        policy = response.headers["Content-Security-Policy"] or ""
    assert "default-src 'self'" in policy and "img-src 'self' data: blob:" in policy, policy

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    requested: list[str] = []
    blocked: list[str] = []
    with chromium() as browser:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})

        def route(r):
            if urlsplit(r.request.url).hostname == "127.0.0.1":
                r.continue_()
            else:
                blocked.append(r.request.url)
                r.abort()

        context.route("**/*", route)
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.on("request", lambda request: requested.append(request.url))
        signed_in = None
        try:
            for number, (who, link, tab) in enumerate(VISITS, start=1):
                if who != signed_in:
                    if signed_in:
                        page.get_by_role("button", name="Sign out").click()
                        # signing out reloads the page: wait for its sign-in form, so the next goto does not race it
                        page.get_by_role("textbox", name="Username").wait_for()
                        settle(page)
                    _sign_in(page, server, who)
                    signed_in = who
                page.get_by_role("link", name=link).click()
                settle(page)
                if tab:
                    page.get_by_role("tab", name=tab, exact=True).click()
                page.get_by_text(PLACEHOLDER).filter(visible=True).first.wait_for()
                settle(page)  # the run has ended: everything the page draws is drawn
                page.wait_for_function(IMAGES_SETTLED)  # and every image it drew has loaded or failed
                page.screenshot(path=str(ARTIFACTS / f"{number}-{link.split()[0].lower()}.png"), full_page=True)
                assert [src for src in _images(page) if urlsplit(src).hostname not in (None, "127.0.0.1")] == []
        finally:
            page.screenshot(path=str(ARTIFACTS / "last.png"), full_page=True)
    assert blocked == []
    assert [u for u in requested if urlsplit(u).scheme in ("http", "https", "ws", "wss")
            and urlsplit(u).hostname != "127.0.0.1"] == []
    assert any(urlsplit(u).path.endswith("/_stcore/health") or "/static/" in u for u in requested)
