"""Browser test: on first start (the bundled sample, the baselines, the offline heuristic judge) Pick a generator, with
its defaults, ends in a recommendation or in 'No recommendation' naming one reason (never the generic 'relax a floor'
while a default floor is unmeasured), and its filters and choice are on screen at 1280x800.

Needs /usr/bin/chromium (CI installs it; never `playwright install`)."""

from __future__ import annotations

import pytest

from core import first_start
from core.commands.data import SAMPLE_DOMAINS, SAMPLE_FILE
from core.ingest.io import import_file
from core.review.auth import create_user
from core.store.db import make_engine
from tests.e2e.harness import chromium, new_context, serve, settle, submit_sign_in

pytestmark = pytest.mark.browser
USER, PASSWORD = "ana", "ana-pass-123"


def _sign_in(page, url: str) -> None:
    """harness.sign_in with a longer first wait (the app's first script run reads every protocol's scores)."""
    page.goto(url)
    settle(page, 120_000)
    submit_sign_in(page, USER, PASSWORD)
    page.get_by_text(f"Signed in as {USER}").wait_for(timeout=120_000)


@pytest.fixture(scope="module")
def first_start_url(session_url_factory):
    """A fresh database with the bundled sample after the first-start job (baselines + heuristic judge)."""
    url = session_url_factory()
    engine = make_engine(url)
    assert import_file(engine, SAMPLE_FILE, domains_path=SAMPLE_DOMAINS, author="sample").ok
    assert first_start.ensure_first_start_run(engine) is not None
    create_user(engine, USER, "analyst", password=PASSWORD)
    engine.dispose()
    return url


def test_the_default_offline_path_recommends_or_names_one_reason(first_start_url):
    with serve(first_start_url) as served, chromium() as browser:
        page = new_context(browser, width=1280, height=800).new_page()
        _sign_in(page, f"{served.url}/pick_generator")
        settle(page, 90_000)
        alerts = page.locator("[data-testid=stAlert]").all_inner_texts()
        lines = [t for t in alerts if "Recommended generator" in t or "No recommendation" in t]
        assert len(lines) == 1, alerts
        assert "relax a floor" not in lines[0] and "Strict IAS (EnterpriseRAG): not measured" not in lines[0], lines[0]
        assert not page.locator("[data-testid=stException]").count()
        for label in ("Runs", "Judge"):
            box = page.locator("[data-testid=stSidebar]").get_by_text(label, exact=True).first.bounding_box()
            assert box is not None and box["y"] + box["height"] <= 800, (label, box)
        box = page.get_by_text("Start from", exact=True).first.bounding_box()
        assert box is not None and box["x"] + box["width"] <= 1280, box
