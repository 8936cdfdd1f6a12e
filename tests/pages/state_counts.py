"""Putting every score state into a protocol page's run, and reading the state counts a page shows.

`injected_states` turns four scored answers of one model and condition into a judge error, an unparseable answer, a
not-applicable verdict and an unjudged answer (a newer response the judge never scored), the way the scorer stores
them: a newer verdict of the same judge and metric supersedes the older one. It undoes everything afterwards, so the
session's shared calibration world is left as it was. `DownloadSpy` keeps the CSV bytes the page offers."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pandas as pd
import streamlit as st
from sqlalchemy import create_engine, delete, select
from sqlmodel import Session, col
from streamlit.testing.v1 import AppTest

from bench.make_synthetic_results import make_results
from core.store.backup import reset_sequences
from core.store.models import Instance, Model, Response, Verdict
from tests.pages.signin import sign_in

STATE_WORDS = {"scored": "scored", "not applicable": "not_applicable", "unparseable": "unparseable",
               "judge error": "judge_error", "judge errors": "judge_error", "unjudged": "unjudged",
               "skipped": "skipped"}
INJECTED = ("error", "unparseable", "not_applicable")  # stored statuses; the fourth answer is left unjudged
COUNT_COLUMNS = {"scored": "n_scored", "judge_error": "n_error", "unparseable": "n_unparseable",
                 "not_applicable": "n_not_applicable", "unjudged": "n_unscored", "skipped": "n_skipped"}
# what the four injected answers do to the counts of their cell (each was scored before)
DELTAS = {"scored": -4, "judge_error": 1, "unparseable": 1, "not_applicable": 1, "unjudged": 1, "skipped": 0}


def synthetic_results(url: str) -> str:
    """The EnterpriseRAG synthetic set (3 models, 40 instances) written to `url`, ready for injected rows; returns url."""
    make_results(url, n_models=3, n_instances=40, seed=3)
    engine = create_engine(url)
    with engine.begin() as conn:
        reset_sequences(conn)  # the synthetic set is written with explicit ids; the injected rows take the next ones
    engine.dispose()
    return url


def open_page(path: str, widgets: dict[str, str] | None = None) -> AppTest:
    """A results page opened by an analyst, with the given selectboxes set (by key)."""
    at = sign_in(AppTest.from_file(path, default_timeout=60), "analyst").run()
    for key, value in (widgets or {}).items():
        at.selectbox(key=key).set_value(value)
    at.run()
    assert not at.exception, at.exception
    return at


def caption_counts(text: str) -> dict[str, int]:
    """The state counts of an 'n = 3 scored · 1 unparseable (counted as wrong) · ...' caption."""
    body = text.split("n = ", 1)[1]
    counts = {}
    for part in body.split(" · "):
        number, words = re.match(r"([\d,]+) ([a-z ]+?)(?: \(.*\))?$", part.strip()).groups()
        counts[STATE_WORDS[words]] = int(number.replace(",", ""))
    return counts


def captions_with(at, prefix: str) -> list[str]:
    """The captions of a page run that start with `prefix` and carry state counts."""
    return [c.value for c in at.caption if c.value.startswith(prefix) and "n = " in c.value]


@dataclass
class Injected:
    """What was put into the run: the model and condition whose cell changed, and the rows to remove afterwards."""

    model: str
    condition: str
    instance_uids: list[str]
    verdict_ids: list[int] = field(default_factory=list)
    response_ids: list[int] = field(default_factory=list)
    removed: list[dict] = field(default_factory=list)


def _remove_verdicts(session: Session, response_ids: list[int], judge: str, metrics: tuple[str, ...]) -> list[dict]:
    """Delete the verdicts of `judge` on these responses and metrics; returns them as rows to put back."""
    found = session.execute(select(Verdict).where(col(Verdict.response_id).in_(response_ids),
                                                  col(Verdict.judge) == judge,
                                                  col(Verdict.metric).in_(metrics))).scalars().all()
    rows = [v.model_dump() for v in found]
    for verdict in found:
        session.delete(verdict)
    session.flush()
    return rows


def _scored_responses(session: Session, run_ids: list[int], judge: str, metric: str, model: str, condition: str,
                      protocol: str) -> list[Response]:
    rows = session.execute(
        select(Response).join(Model, col(Model.id) == Response.model_id)
        .join(Instance, col(Instance.id) == Response.instance_id)
        .join(Verdict, (col(Verdict.response_id) == Response.id) & (col(Verdict.judge) == judge)
              & (col(Verdict.metric) == metric) & (col(Verdict.status) == "ok"))
        .where(col(Response.run_id).in_(run_ids), col(Model.name) == model, col(Response.condition) == condition,
               col(Response.status) == "done", col(Instance.protocol) == protocol)
        .order_by(col(Response.id))).scalars().all()
    return list({r.id: r for r in rows}.values())


def _latest(responses: list[Response]) -> list[Response]:
    """One response per instance (the newest), as the read model keeps them."""
    newest: dict[int, Response] = {}
    for response in responses:
        newest[response.instance_id] = response
    return sorted(newest.values(), key=lambda r: r.id or 0)


@contextmanager
def injected_states(engine, *, run_ids: list[int], judge: str, metric: str, model: str, condition: str,
                    protocol: str, metrics: tuple[str, ...] = (), replace: bool = False) -> Iterator[Injected]:
    """Within the block: four scored answers of `model` under `condition` become a judge error, an unparseable answer,
    a not-applicable verdict (for `metric` and the other `metrics`) and an unjudged newer response. With `replace`
    the injected verdicts take the place of the stored ones (put back afterwards), else they are newer verdicts."""
    with Session(engine) as session:
        picked = _latest(_scored_responses(session, run_ids, judge, metric, model, condition, protocol))[:4]
        assert len(picked) == 4, f"needs 4 scored answers of {model} under {condition!r}, found {len(picked)}"
        uids = [session.get_one(Instance, r.instance_id).uid for r in picked]
        done = Injected(model, condition, uids)
        if replace:
            done.removed = _remove_verdicts(session, [int(r.id or 0) for r in picked[:3]], judge, (metric, *metrics))
        for response, status in zip(picked, INJECTED, strict=False):
            for name in (metric, *metrics):
                verdict = Verdict(response_id=response.id, run_id=response.run_id, judge=judge, metric=name,
                                  status=status, value=0.0 if status == "unparseable" else None,
                                  method="injected", reason=f"test: {status}")
                session.add(verdict)
                session.flush()
                done.verdict_ids.append(int(verdict.id or 0))
        last = picked[3]
        fresh = Response(run_id=last.run_id, model_id=last.model_id, instance_id=last.instance_id,
                         condition=last.condition, repeat=last.repeat + 100, status="done", text=last.text,
                         prompt_meta=last.prompt_meta, latency_ms=last.latency_ms)
        session.add(fresh)
        session.flush()
        done.response_ids.append(int(fresh.id or 0))
        session.commit()
    try:
        yield done
    finally:
        with Session(engine) as session:
            session.execute(delete(Verdict).where(col(Verdict.id).in_(done.verdict_ids)))
            session.execute(delete(Response).where(col(Response.id).in_(done.response_ids)))
            session.add_all([Verdict(**row) for row in done.removed])
            session.commit()
        st.cache_data.clear()


class DownloadSpy:
    """Wraps st.download_button: keeps each download's file name and its bytes (calling deferred data)."""

    def __init__(self, monkeypatch) -> None:
        self.files: dict[str, bytes] = {}
        original = st.download_button

        def spy(label, data, *args, **kwargs):
            name = kwargs.get("file_name") or label
            self.files[name] = data() if callable(data) else data
            return original(label, data, *args, **kwargs)

        monkeypatch.setattr(st, "download_button", spy)

    def frame(self, name: str) -> pd.DataFrame:
        """The CSV download called `name` as a frame."""
        from io import BytesIO

        return pd.read_csv(BytesIO(self.files[name]))
