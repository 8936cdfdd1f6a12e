"""Browser test: after runs of three protocols (EnterpriseRAG, RAGStress, DomainRAG; tests/analysis/decision_world.py)
every results page opens on the newest run holding its own protocol, with its run filter on screen at 1280x800.

Needs /usr/bin/chromium (CI installs it; never `playwright install`)."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from core.review.auth import create_user
from core.store.db import make_engine
from tests.analysis.decision_world import three_protocol_runs
from tests.e2e.harness import chromium, new_context, serve, settle, submit_sign_in

pytestmark = pytest.mark.browser
USER, PASSWORD = "ana", "ana-pass-123"


def _sign_in(page, url: str) -> None:
    """harness.sign_in with a longer first wait (the app's first script run reads every protocol's scores)."""
    page.goto(url)
    settle(page, 120_000)
    submit_sign_in(page, USER, PASSWORD)
    page.get_by_text(f"Signed in as {USER}").wait_for(timeout=120_000)
PAGES = [  # page slug -> index of the run of its protocol (0 EnterpriseRAG, 1 RAGStress, 2 DomainRAG)
    ("leaderboard", 0), ("domains", 0), ("constraint_errors", 0), ("robustness", 0), ("model_pairs", 0),
    ("data_quality", 0), ("pick_generator", 0), ("stress_tests", 1), ("domain_abilities", 2),
]


@pytest.fixture(scope="module")
def world(tmp_path_factory, session_url_factory) -> tuple[str, tuple[int, int, int]]:
    url = session_url_factory()
    runs = three_protocol_runs(url, tmp_path_factory.mktemp("protocol_pages"))
    engine = make_engine(url)
    create_user(engine, USER, "analyst", password=PASSWORD)
    engine.dispose()
    return url, runs


def test_every_results_page_opens_on_its_own_protocols_run(world):
    url, runs = world
    assert runs[2] == max(runs)  # the newest run holds DomainRAG: pages of the others must not open on it
    with serve(url) as served, chromium() as browser:
        page = new_context(browser, width=1280, height=800).new_page()
        _sign_in(page, f"{served.url}/leaderboard")
        for slug, index in PAGES:
            if urlsplit(page.url).path.rstrip("/") != f"/{slug}":  # the sign-in left it on the Leaderboard: no reload
                page.goto(f"{served.url}/{slug}")
            settle(page, 90_000)
            assert not page.locator("[data-testid=stException]").count(), slug
            sidebar = page.locator("[data-testid=stSidebar]")
            runs_box = sidebar.locator("[data-testid=stMultiSelect]").filter(has_text="Runs").first
            chosen = runs_box.inner_text()
            assert f"#{runs[index]} " in chosen and all(f"#{r} " not in chosen for r in runs if r != runs[index]), (
                slug, chosen)
            box = runs_box.bounding_box()
            assert box is not None and box["y"] + box["height"] <= 800 and box["x"] + box["width"] <= 1280, (slug, box)
