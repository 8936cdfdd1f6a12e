"""Datasets shared by the aggregate golden tests (test_enterprise_aggregates, test_robustness_aggregates,
test_data_quality_items), built once per pass on the active backend (tests/analysis/summary_datasets.py):
- `sample_summaries`: the bundled sample after the first-start job (baselines + heuristic judge);
- `paper_summaries`: the paper-scale synthetic set (a copy of the session template `paper_scale_results`);
- `dataset`: either, as the test parameter "sample" / "paper".
Each is a stored and a stale copy, read only. The modules using them share the xdist group "paper-scale", so one
worker builds them (and paper_scale_results) once per pass."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from core import first_start
from core.commands.data import SAMPLE_DOMAINS, SAMPLE_FILE
from core.ingest.io import import_file
from core.store.db import make_engine
from tests.analysis.summary_datasets import Dataset, summary_copies


@pytest.fixture(scope="session")
def sample_summaries(session_url_factory) -> Iterator[Dataset]:
    """The bundled sample after the first-start job, stored and stale."""
    url = session_url_factory()
    engine = make_engine(url)
    assert import_file(engine, SAMPLE_FILE, domains_path=SAMPLE_DOMAINS, author="sample").ok
    run_id = first_start.ensure_first_start_run(engine)
    assert run_id is not None
    engine.dispose()
    dataset = summary_copies(session_url_factory, url, "sample", [run_id], first_start.JUDGE)
    yield dataset
    dataset.dispose()


@pytest.fixture(scope="session")
def paper_summaries(session_url_factory, paper_scale_results) -> Iterator[Dataset]:
    """The paper-scale synthetic set (13 models and 2 baselines x 983 instances, one run), stored and stale."""
    dataset = summary_copies(session_url_factory, paper_scale_results, "paper", [1], "heuristic")
    yield dataset
    dataset.dispose()


@pytest.fixture(params=["sample", "paper"])
def dataset(request) -> Dataset:
    """The sample or the paper-scale set (the test's parameter)."""
    return request.getfixturevalue(f"{request.param}_summaries")
