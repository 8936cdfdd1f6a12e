"""A filter change on a results page reuses the cached base frames (scores, failure counts, gold labels): it reads only
the data and gold-label versions, never the per-response scores or the labels again, and still shows the new
filter's numbers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import event
from streamlit.testing.v1 import AppTest

from bench.make_synthetic_results import make_results
from core.review.auth import Principal, now_utc
from core.store.db import get_engine
from ui.auth import SESSION_KEY

REPO = Path(__file__).resolve().parents[2]
BASE_READS = {  # a statement fragment -> what re-running it would mean
    "FROM response r JOIN instance i": "per-response scores re-read",
    "FROM failure_count": "failure counts re-read",
    "FROM failure_mode_count": "failure counts re-read",
    "FROM verdict v JOIN \"constraint\"": "constraint verdicts re-read",
    "FROM annotation WHERE": "gold labels re-read",  # the gold-label version is a lone max/count, without WHERE
}


def _subset(value: str) -> Callable[[AppTest], None]:
    return lambda at: at.selectbox(key="results_subset").set_value(value)


CASES = [
    pytest.param("leaderboard", _subset("gap"), "subset gap", id="leaderboard-subset"),
    pytest.param("domains", _subset("conflict"), "subset conflict", id="domains-subset"),
    pytest.param("data_quality", _subset("noisy"), "subset noisy", id="data-quality-subset"),
    pytest.param("robustness", lambda at: at.multiselect(key="results_domains").set_value(["Energy"]),
                 "domains Energy", id="robustness-domains"),
]


@pytest.fixture(scope="module")
def db_url(session_url_factory) -> str:
    url = session_url_factory()
    make_results(url, n_models=3, n_instances=60, seed=2)
    return url


@pytest.mark.parametrize(("page", "change", "caption"), CASES)
def test_a_filter_change_reuses_the_cached_base_frames(db_url, monkeypatch, page, change, caption) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", db_url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    at = AppTest.from_file(str(REPO / "pages" / f"{page}.py"), default_timeout=60)
    now = now_utc()
    at.session_state[SESSION_KEY] = Principal(username="analyst", role="analyst", domains=(), login_at=now,
                                              last_seen=now)
    at.run()
    assert not at.exception, at.exception
    seen: list[str] = []
    engine = get_engine(db_url)

    def record(conn, cursor, statement, *args) -> None:
        seen.append(" ".join(statement.split()))

    event.listen(engine, "before_cursor_execute", record)
    try:
        change(at)
        at.run()
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert not at.exception, at.exception
    assert any(caption in c.value for c in at.caption), "the page shows the new filter"
    assert any("FROM verdict" in s and "max(" in s.lower() for s in seen), "the data version is checked"
    assert any("FROM annotation" in s and "max(" in s.lower() for s in seen), "the gold-label version is checked"
    reread = [why for fragment, why in BASE_READS.items() if any(fragment in s for s in seen)]
    assert reread == []
