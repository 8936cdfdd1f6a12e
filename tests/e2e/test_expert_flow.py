"""Browser end to end (Debian chromium): an expert signs in, verifies an instance with the keyboard and labels a
response; an admin then adjudicates the disagreement. Screenshots go to test-artifacts/."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from sqlmodel import Session, select

from core.review.gold import draw_gold_sample, load_response, record_gold_label
from core.store.models import Annotation, Assignment
from tests.workspace_factories import PASSWORDS, principal, seeded_db

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "expert_flow"
CHROMIUM = Path("/usr/bin/chromium")
READY = "[data-testid=stApp][data-test-script-state=notRunning]"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    seeded = seeded_db(tmp_path)
    draw_gold_sample(seeded.engine, principal("admin"), seeded.run_id, n=1, experts=["alice", "bob"])
    with Session(seeded.engine) as s:
        rid = s.exec(select(Assignment.target_id)).first()
    ctx = load_response(seeded.engine, rid)
    bob = {"constraints": {c.cid: True for c in ctx.bundle.constraints}}
    bob.update({"valid_refusal": 1} if ctx.bundle.instance.mode == "gap" else {})
    bob.update({"conflict_recognized": 1} if ctx.bundle.instance.mode == "conflict" else {})
    record_gold_label(seeded.engine, principal("bob"), rid, bob, "bob-e2e")
    port = _free_port()
    env = {**os.environ, "GAUNTLET_DATABASE_URL": seeded.url, "GAUNTLET_VERIFY_OVERLAP": "0"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ui.serve", "--server.port", str(port), "--server.headless", "true",
         "--browser.gatherUsageStats", "false"],
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
    yield url, seeded, rid
    proc.terminate()
    proc.wait(timeout=10)


def _annotations(seeded, kind: str, author: str) -> list[Annotation]:
    with Session(seeded.engine) as s:
        return list(s.exec(select(Annotation).where(Annotation.kind == kind, Annotation.author == author)).all())


def _settle(page) -> None:
    page.wait_for_timeout(300)
    page.wait_for_selector(READY, timeout=20_000)


def _sign_in(page, url: str, who: str) -> None:
    page.goto(url)
    _settle(page)
    page.get_by_role("textbox", name="Username").fill(who)
    page.get_by_role("textbox", name="Password").fill(PASSWORDS[who])
    page.get_by_role("button", name="Sign in").click()
    _settle(page)
    page.get_by_text(f"Signed in as {who}").wait_for(timeout=20_000)


def _wait_for(check, what: str, timeout: float = 15) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if check():
            return
        time.sleep(0.25)
    pytest.fail(f"timed out waiting for {what}")


@pytest.mark.browser
def test_expert_verifies_and_labels_then_admin_adjudicates(server):
    if not CHROMIUM.exists():
        pytest.fail("/usr/bin/chromium is missing: install it with `apt-get install -y chromium` (CI's .ci/run does)")
    from playwright.sync_api import sync_playwright

    url, seeded, rid = server
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM),
                                     args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(20_000)
        try:
            _sign_in(page, url, "alice")
            page.get_by_role("link", name="Verify instances").click()
            _settle(page)
            page.get_by_text("E-noisy").first.wait_for()
            page.screenshot(path=str(ARTIFACTS / "1-verify.png"), full_page=True)
            page.get_by_role("heading", name="Verify instances").click()  # focus the page, not an input
            page.keyboard.press("Alt+A")
            _wait_for(lambda: _annotations(seeded, "verification", "alice"), "the keyboard verification")
            assert _annotations(seeded, "verification", "alice")[0].payload["decision"] == "accept"
            _settle(page)
            page.get_by_text("E-gap").first.wait_for()  # the next instance was loaded

            page.get_by_role("link", name="Label responses").click()
            _settle(page)
            # count the label form's radios only once it is drawn (under load the previous page can still be showing)
            page.get_by_role("button", name="Submit label").wait_for(timeout=30_000)
            _settle(page)
            radios = page.locator("[data-testid=stRadio]")
            for i in range(radios.count()):
                group = radios.nth(i)
                option = group.get_by_text("no", exact=True)
                (option if option.count() else group.get_by_text("0", exact=True)).click()
            page.screenshot(path=str(ARTIFACTS / "2-label.png"), full_page=True)
            page.get_by_role("button", name="Submit label").click()
            _wait_for(lambda: _annotations(seeded, "gold_label", "alice"), "alice's label")
            _settle(page)
            page.get_by_text("No responses are waiting for your label.").wait_for()
            page.get_by_role("button", name="Sign out").click()
            _settle(page)

            _sign_in(page, url, "admin")
            page.get_by_role("link", name="Gold labels & adjudication").click()
            _settle(page)
            page.get_by_role("tab", name="Disagreements", exact=True).click()
            page.get_by_text("1 disagreements wait for a decision.").wait_for()
            page.screenshot(path=str(ARTIFACTS / "3-adjudicate.png"), full_page=True)
            page.get_by_role("button", name="Save gold label").click()
            _wait_for(lambda: _annotations(seeded, "adjudication", "admin"), "the adjudication")
            _settle(page)
            page.screenshot(path=str(ARTIFACTS / "4-adjudicated.png"), full_page=True)
        finally:
            page.screenshot(path=str(ARTIFACTS / "last.png"), full_page=True)
            browser.close()
    (adj,) = _annotations(seeded, "adjudication", "admin")
    assert adj.target_id == rid and not any(adj.payload["constraints"].values())  # alice's answers, kept by the admin
