"""Many annotators at once, on both backends: 20 experts saving labels concurrently through the Label page's save path
(`record_gold_label`) lose none and store none twice; a double submit racing itself in 20 threads is stored once."""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest
from sqlmodel import Session, func, select

from bench.bench_labelling_load import audit, label_payload, run_experts, seed_experts
from bench.make_synthetic_results import make_results
from core.review.annotations import new_client_token
from core.review.auth import Principal
from core.review.gold import load_response, record_gold_label
from core.store.db import make_engine
from core.store.models import Annotation, Assignment

EXPERTS = 20
BACKENDS = [pytest.param("sqlite_url_factory", id="sqlite"), pytest.param("postgres_url_factory", id="postgresql")]


@pytest.fixture(params=BACKENDS)
def labelling(request):
    """A database on the backend with a small scored run and 20 experts, each assigned every response."""
    url = request.getfixturevalue(request.param)()
    make_results(url, n_models=2, n_instances=8, seed=11, with_baselines=False)
    engine = make_engine(url)
    names = seed_experts(engine, EXPERTS)
    yield url, engine, names
    engine.dispose()


def test_twenty_concurrent_experts_lose_and_duplicate_nothing(labelling):
    url, engine, names = labelling
    logs = run_experts(url, names, seconds=3, seed=5, double_submit=0.2)
    result = audit(engine, logs)
    assert [e for log in logs for e in log.errors] == []
    assert all(log.saves for log in logs), [len(log.saves) for log in logs]
    assert (result.lost, result.duplicated, result.phantom) == (0, 0, 0)
    assert sum(log.resubmits for log in logs) > 0
    assert sum(log.resubmits_mismatched for log in logs) == 0
    with Session(engine) as session:
        assert session.exec(select(func.count()).select_from(Annotation)).one() == result.intended


def test_one_double_submit_racing_in_twenty_threads_is_stored_once(labelling):
    _, engine, names = labelling
    with Session(engine) as session:
        target = session.exec(select(Assignment.target_id).where(Assignment.assignee == names[0])).first()
    now = datetime.now(UTC)
    principal = Principal(names[0], "expert", (), now, now)
    payload = label_payload(load_response(engine, target).bundle, random.Random(1))
    token, start = new_client_token(), threading.Barrier(EXPERTS)

    def submit(_):
        start.wait()
        return record_gold_label(engine, principal, target, payload, token)

    with ThreadPoolExecutor(EXPERTS) as pool:
        outcomes = list(pool.map(submit, range(EXPERTS)))
    assert len({stored for stored, _ in outcomes}) == 1
    assert sum(created for _, created in outcomes) == 1
    with Session(engine) as session:
        assert session.exec(select(func.count()).select_from(Annotation).where(Annotation.client_token == token)).one() == 1
