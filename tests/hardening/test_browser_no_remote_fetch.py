"""Browser (Debian chromium): pages whose documents, responses and notes carry remote images make no request to any
host but 127.0.0.1, show the images as "[image: URL]" text, and are served with the Content-Security-Policy."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.e2e.harness import CHROMIUM, free_port, settle
from tests.e2e.test_expert_flow import _sign_in
from tests.hardening.untrusted import EXFIL, poisoned_db

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "no_remote_fetch"
PLACEHOLDER = f"[image: {EXFIL}]"
VISITS = [  # (who, page link, tab to open or None)
    ("alice", "Verify instances", None),
    ("alice", "Label responses", None),
    ("admin", "Gold labels & adjudication", "Disagreements"),
    ("admin", "Gold labels & adjudication", "Verification disagreements"),
]


@pytest.fixture
def server(tmp_path):
    seeded = poisoned_db(tmp_path)
    port = free_port()
    env = {**os.environ, "GAUNTLET_DATABASE_URL": seeded.url, "GAUNTLET_VERIFY_OVERLAP": "0"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ui.serve", "--server.port", str(port), "--server.headless", "true",
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 40
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"{url}/_stcore/health", timeout=1)
            break
        except OSError:
            time.sleep(0.3)
    else:
        proc.terminate()
        pytest.fail("streamlit did not start within 40 s")
    yield url
    proc.terminate()
    proc.wait(timeout=10)


def _images(page) -> list[str]:
    return page.evaluate("Array.from(document.images, i => i.currentSrc || i.src)")


@pytest.mark.browser
def test_untrusted_images_are_never_fetched(server):
    if not CHROMIUM.exists():
        pytest.fail("/usr/bin/chromium is missing: install it with `apt-get install -y chromium` (CI's .ci/run does)")
    from playwright.sync_api import sync_playwright

    with urllib.request.urlopen(server, timeout=5) as response:
        policy = response.headers["Content-Security-Policy"] or ""
    assert "default-src 'self'" in policy and "img-src 'self' data: blob:" in policy, policy

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    requested: list[str] = []
    blocked: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM),
                                     args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
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
                page.wait_for_timeout(500)
                page.screenshot(path=str(ARTIFACTS / f"{number}-{link.split()[0].lower()}.png"), full_page=True)
                assert [src for src in _images(page) if urlsplit(src).hostname not in (None, "127.0.0.1")] == []
        finally:
            page.screenshot(path=str(ARTIFACTS / "last.png"), full_page=True)
            browser.close()
    assert blocked == []
    assert [u for u in requested if urlsplit(u).scheme in ("http", "https", "ws", "wss")
            and urlsplit(u).hostname != "127.0.0.1"] == []
    assert any(urlsplit(u).path.endswith("/_stcore/health") or "/static/" in u for u in requested)
