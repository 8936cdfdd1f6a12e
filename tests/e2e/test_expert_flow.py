"""Browser end to end (Debian chromium): an expert signs in, verifies an instance with the keyboard and labels a
response; an admin then adjudicates the disagreement. Screenshots go to test-artifacts/."""

from __future__ import annotations

import pytest
from sqlmodel import Session, select

from core.review.gold import draw_gold_sample, load_response, record_gold_label
from core.store.models import Annotation, Assignment
from tests.e2e.harness import ROOT, chromium, serve, settle, sign_in, wait_until
from tests.workspace_factories import PASSWORDS, principal, seeded_db

ARTIFACTS = ROOT / "test-artifacts" / "expert_flow"


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
    with serve(seeded.url) as served:
        yield served.url, seeded, rid


def _annotations(seeded, kind: str, author: str) -> list[Annotation]:
    with Session(seeded.engine) as s:
        return list(s.exec(select(Annotation).where(Annotation.kind == kind, Annotation.author == author)).all())


def _sign_in(page, url: str, who: str) -> None:
    sign_in(page, url, who, PASSWORDS[who])


@pytest.mark.browser
def test_expert_verifies_and_labels_then_admin_adjudicates(server):
    url, seeded, rid = server
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(30_000)
        try:
            _sign_in(page, url, "alice")
            page.get_by_role("link", name="Verify instances").click()
            # press Alt+A as soon as the page's title is drawn, as a quick user does: the Accept button may not be
            # drawn yet, and the press must be kept until it is (ui/shortcut_buffer.js), not lost
            page.get_by_role("heading", name="Verify instances").click()  # focus the page, not an input
            page.keyboard.press("Alt+A")
            wait_until(lambda: _annotations(seeded, "verification", "alice"), "the keyboard verification", timeout=60)
            page.screenshot(path=str(ARTIFACTS / "1-verify.png"), full_page=True)
            assert _annotations(seeded, "verification", "alice")[0].payload["decision"] == "accept"
            settle(page)
            page.get_by_text("E-gap").first.wait_for()  # the next instance was loaded

            page.get_by_role("link", name="Label responses").click()
            settle(page)
            # count the label form's radios only once it is drawn (under load the previous page can still be showing)
            page.get_by_role("button", name="Submit label").wait_for(timeout=30_000)
            settle(page)
            radios = page.locator("[data-testid=stRadio]")
            for i in range(radios.count()):
                group = radios.nth(i)
                option = group.get_by_text("no", exact=True)
                (option if option.count() else group.get_by_text("0", exact=True)).click()
            page.screenshot(path=str(ARTIFACTS / "2-label.png"), full_page=True)
            page.get_by_role("button", name="Submit label").click()
            wait_until(lambda: _annotations(seeded, "gold_label", "alice"), "alice's label")
            settle(page)
            page.get_by_text("No responses are waiting for your label.").wait_for()
            page.get_by_role("button", name="Sign out").click()
            settle(page)
            page.get_by_role("textbox", name="Username").wait_for()  # signed out: an address opened before this
            # came back still signed in as alice (3 of 4 runs), and once aborted (net::ERR_ABORTED)

            _sign_in(page, url, "admin")
            page.get_by_role("link", name="Gold labels & adjudication").click()
            settle(page)
            page.get_by_role("tab", name="Disagreements", exact=True).click()
            page.get_by_text("1 disagreements wait for a decision.").wait_for()
            page.screenshot(path=str(ARTIFACTS / "3-adjudicate.png"), full_page=True)
            page.get_by_role("button", name="Save gold label").click()
            wait_until(lambda: _annotations(seeded, "adjudication", "admin"), "the adjudication")
            settle(page)
            page.screenshot(path=str(ARTIFACTS / "4-adjudicated.png"), full_page=True)
        finally:
            page.screenshot(path=str(ARTIFACTS / "last.png"), full_page=True)
    (adj,) = _annotations(seeded, "adjudication", "admin")
    assert adj.target_id == rid and not any(adj.payload["constraints"].values())  # alice's answers, kept by the admin
