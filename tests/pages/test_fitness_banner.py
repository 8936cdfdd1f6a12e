"""The judge fitness banner on the Leaderboard and Pick a generator: the statement, and a warning unless the judge
whose numbers the page shows is fit to decide (core.analysis.fitness; docs/judges.md)."""

from __future__ import annotations

import pytest

from bench.make_synthetic_results import make_results
from core.store.db import make_engine
from tests.fitness_cases import FITNESS_CASES, UNMEASURED, store_heuristic_fitness
from tests.pages.test_dashboards import page_as

PAGES = ["leaderboard", "pick_generator"]
CASES = [pytest.param(page, kappa, statement, level, id=f"{page}-{case}")
         for page in PAGES for case, kappa, statement, level in FITNESS_CASES]


@pytest.fixture(scope="module")
def db_url(session_url_factory):
    url = session_url_factory()
    make_results(url, n_models=3, n_instances=40, seed=2)
    return url


def _banners(at, level: str) -> list[str]:
    elements = {"ok": at.success, "warning": at.warning, "error": at.error}[level]
    return [e.value for e in elements if "Judge fitness" in e.value]


@pytest.mark.parametrize(("page", "kappa", "statement", "level"), CASES)
def test_the_page_states_the_judges_fitness_and_warns(db_url, monkeypatch, page, kappa, statement, level) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", db_url)
    store_heuristic_fitness(make_engine(db_url), kappa)
    at = page_as(page, "analyst").run()
    assert not at.exception, at.exception
    shown = _banners(at, level)
    assert len(shown) == 1, [e.value for e in (*at.success, *at.warning, *at.error)]
    assert f"Judge fitness, heuristic (lexical, offline): {statement}" in shown[0]
    others = [lv for lv in ("ok", "warning", "error") if lv != level]
    assert not any(_banners(at, lv) for lv in others)
    if kappa is None:
        assert UNMEASURED in shown[0]
    elif level == "error":
        assert shown[0].startswith("Not fit to decide") and f"overall not fit (κ {kappa:.2f} vs humans 0.75" in shown[0]
