"""Browser test (Debian chromium): an analyst has the Leaderboard, Pick a generator or Judge alignment open; experts
save gold labels (through core.review.gold, as the Label responses page does); the open page shows them without a
reload (it watches the gold-label version). One app server for the module: the three pages are open side
by side when the labels are saved. Screenshots go to test-artifacts/gold_freshness/."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from playwright.sync_api import expect

from core.review.gold import draw_gold_sample, record_adjudication, record_gold_label
from tests.e2e.harness import chromium, new_context, serve, settle, shot, sign_in
from tests.test_alignment import _labels, store
from tests.workspace_factories import PASSWORDS, principal, seeded_db

pytestmark = pytest.mark.browser

CASES = [
    pytest.param("leaderboard", "No gold labels on these runs yet", "gold label values so far", id="leaderboard"),
    pytest.param("pick_generator", "", "expert gold label values so far", id="pick-generator"),
    pytest.param("judge_alignment", "0 responses with a gold label", "4 responses with a gold label",
                 id="judge-alignment"),
]


def _label(seeded, rids: list[int]) -> None:
    for i, rid in enumerate(rids):
        label = _labels(1, i % 2, **({"valid_refusal": 1} if i >= 2 else {}))
        record_gold_label(seeded.engine, principal("alice"), rid, label, f"browser-a{i}")
        record_gold_label(seeded.engine, principal("bob"), rid, label, f"browser-b{i}")
    record_adjudication(seeded.engine, principal("admin"), rids[0], _labels(1, 1), "browser-adj")


@dataclass
class Opened:
    """One page open in its own signed-in browser context before the labels were saved, and what it showed then."""

    page: object
    showed_before: bool
    showed_after_early: bool
    navigations: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def opened(tmp_path_factory) -> Iterator[dict[str, Opened]]:
    """One app server for the module: every page of CASES open side by side as an analyst, then the experts' gold
    labels are saved once; each test reads its own page."""
    seeded = seeded_db(tmp_path_factory.mktemp("gold_freshness"))
    rids = [seeded.responses[k] for k in [("model-a", "E-noisy"), ("model-b", "E-noisy"), ("model-a", "E-gap"),
                                          ("model-b", "E-gap")]]
    store(seeded.engine, "llm:j1", {**{(r, c): 1 for r in rids for c in ("c1", "c2")},
                                    **{(r, "rejection"): 1 for r in rids[2:]}})
    draw_gold_sample(seeded.engine, principal("admin"), seeded.run_id, n=8, experts=["alice", "bob"])
    with serve(seeded.url) as app, chromium() as browser:
        pages: dict[str, Opened] = {}
        for case in CASES:
            page_name, before, after = case.values
            page = new_context(browser).new_page()
            sign_in(page, f"{app.url}/{page_name}", "ana", PASSWORDS["ana"])
            settle(page)  # the first run has ended: its own address updates (filters kept in the URL) come before
            if before:
                page.get_by_text(before).first.wait_for(timeout=30_000)
            body = page.locator("[data-testid=stMain]").inner_text()
            pages[page_name] = Opened(page, not before or before in body, after in body)
            page.on("framenavigated", lambda frame, seen=pages[page_name].navigations: seen.append(frame.url))
        _label(seeded, rids)
        yield pages


@pytest.mark.parametrize(("page_name", "before", "after"), CASES)
def test_saved_labels_show_on_the_open_page_without_a_reload(opened, page_name: str, before: str, after: str) -> None:
    shown = opened[page_name]
    assert shown.showed_before and not shown.showed_after_early
    body = shown.page.locator("[data-testid=stMain]")
    expect(body).to_contain_text(after, timeout=40_000)
    shot(shown.page, "gold_freshness", page_name)
    assert not before or before not in body.inner_text()
    assert shown.navigations == [], "the page was reloaded"
    assert not shown.page.locator("[data-testid=stException]").count()
