"""The results pages' domain filter lists the domains the scores have rows for, read without loading the scores."""

from __future__ import annotations

import pytest

from bench.make_synthetic_results import make_results
from core.analysis import readmodel
from core.store.db import get_engine


@pytest.fixture(scope="module")
def results_url(session_url_factory) -> str:
    url = session_url_factory()
    make_results(url, n_models=2, n_instances=30, seed=5)
    return url


@pytest.mark.parametrize("run_ids", [pytest.param([1], id="the-scored-run"), pytest.param([99], id="unknown-run"),
                                     pytest.param([1, 99], id="scored-and-unknown")])
def test_response_domains_are_the_scores_domains(results_url, run_ids) -> None:
    engine = get_engine(results_url)
    scores = readmodel.load_scores(engine, run_ids, "heuristic")
    assert readmodel.response_domains(engine, run_ids) == sorted(scores["domain"].dropna().unique())
