"""The Constraint errors page (EnterpriseRAG) with constraint verdicts in error, unparseable and not applicable: the
caption under the chart counts the verdicts behind it, the decided and failed ones and the undetermined rest."""

from __future__ import annotations

import re

import pytest
import streamlit as st
from sqlalchemy import create_engine, delete, select
from sqlmodel import Session, col

from core.store.models import Verdict
from tests.pages import state_counts as sc
from tests.pages.test_dashboards import REPO

PAGE = str(REPO / "pages" / "constraint_errors.py")
CAPTION = re.compile(r"n = ([\d,]+) constraint verdicts · ([\d,]+) decided \(([\d,]+) failed\) · ([\d,]+) undetermined")


@pytest.fixture(scope="module")
def results_url(session_url_factory):
    return sc.synthetic_results(session_url_factory())


SPLIT = re.compile(r"undetermined \(([^)]*)\) · ([\d,]+) constraints unjudged")
CSV_STATES = {"n_scored": "decided", "n_error": "judge_error", "n_unparseable": "unparseable",
              "n_not_applicable": "not_applicable", "n_skipped": "skipped", "n_unscored": "unjudged"}


def shown(widgets: dict[str, str], spy: sc.DownloadSpy | None = None) -> dict[str, int]:
    """The verdict counts of the caption under the chart, the undetermined ones by state and the constraints left
    unjudged; with `spy`, checks that the chart's CSV carries the same counts."""
    at = sc.open_page(PAGE)
    for key, value in widgets.items():
        at.radio(key=key).set_value(value).run()
    texts = [c.value for c in at.caption if c.value.startswith("Behind the chart: ")]
    numbers = [int(n.replace(",", "")) for n in CAPTION.search(texts[0]).groups()]
    counts = dict(zip(("verdicts", "decided", "failed", "undetermined"), numbers, strict=True))
    split, unjudged = SPLIT.search(texts[0]).groups()
    counts |= sc.caption_counts("n = " + split) | {"unjudged": int(unjudged.replace(",", ""))}
    if spy is not None:
        frame = spy.frame("constraint_failures.csv")
        assert {name: int(frame[column].sum()) for column, name in CSV_STATES.items()} == {
            name: counts[name] for name in CSV_STATES.values()}
    return counts


def undecide(engine, statuses: tuple[str, ...]) -> tuple[list[dict], list[int]]:
    """Passed constraint verdicts of run 1 are judged again with the given statuses (a new verdict in place of the
    old, as the scorer stores them; status '': no new verdict, the constraint is left unjudged); returns the old rows
    and the new ids."""
    with Session(engine) as session:
        found = session.execute(select(Verdict).where(col(Verdict.metric) == "constraint", col(Verdict.run_id) == 1,
                                                      col(Verdict.status) == "ok", col(Verdict.passed).is_(True))
                                .order_by(col(Verdict.id)).limit(len(statuses))).scalars().all()
        old = [v.model_dump() for v in found]
        for verdict in found:
            session.delete(verdict)
        fresh = [Verdict(**{**row, "id": None, "status": status, "passed": None, "reason": f"test: {status}"})
                 for row, status in zip(old, statuses, strict=True) if status]
        session.add_all(fresh)
        session.commit()
        return old, [int(v.id or 0) for v in fresh]


def restore(engine, old: list[dict], new_ids: list[int]) -> None:
    """Put the old verdicts back in place of the new ones."""
    with Session(engine) as session:
        session.execute(delete(Verdict).where(col(Verdict.id).in_(new_ids)))
        session.add_all([Verdict(**row) for row in old])
        session.commit()
    st.cache_data.clear()


@pytest.mark.parametrize("widgets", [
    pytest.param({}, id="category-rate"),
    pytest.param({"ce_view": "stacked"}, id="category-stacked"),
])
def test_undetermined_verdicts_are_counted_under_the_chart(results_url, monkeypatch, widgets) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", results_url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    engine = create_engine(results_url)
    spy = sc.DownloadSpy(monkeypatch)
    before = shown(widgets, spy)
    old, new_ids = undecide(engine, ("error", "unparseable", "not_applicable", "skipped", ""))
    try:
        after = shown(widgets, spy)
    finally:
        restore(engine, old, new_ids)
    assert {key: after[key] - before[key] for key in after} == {
        "verdicts": -1, "decided": -5, "failed": 0, "undetermined": 4, "judge_error": 1, "unparseable": 1,
        "not_applicable": 1, "skipped": 1, "unjudged": 1}
    assert before["verdicts"] == before["decided"] + before["undetermined"] > 0
    engine.dispose()
