"""AppTest: a production item sampled from a deployed run shows up in the expert's labelling page with the question
whether the answer is faithful, and the label saves it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlmodel import Session, select
from streamlit.testing.v1 import AppTest

from core.ingest.deployed import import_traces
from core.review.auth import Principal, create_user
from core.review.traces import sample_traces
from core.store.models import Annotation
from tests.conftest import FIXTURES

ROOT = Path(__file__).resolve().parents[2]


def _principal(name: str, role: str) -> Principal:
    now = datetime.now(UTC)
    return Principal(name, role, ("support-bot",) if role == "expert" else (), now, now)


@pytest.mark.parametrize("answer", [pytest.param("1", id="faithful"), pytest.param("0", id="unfaithful")])
def test_a_sampled_production_answer_is_labelled_for_faithfulness(engine, answer) -> None:
    report = import_traces(engine, FIXTURES / "traces" / "otel_rag_export.json", "otel", redact=True)
    for name, role in (("admin", "admin"), ("alice", "expert"), ("bob", "expert")):
        create_user(engine, name, role, password=f"{name}-pass-123", domains=["support-bot"] if role == "expert" else [])
    sample_traces(engine, _principal("admin", "admin"), report.run_id, n=1, seed=4)
    at = AppTest.from_file(str(ROOT / "pages/label_responses.py"), default_timeout=30)
    at.session_state["gauntlet_principal"] = _principal("alice", "expert")
    at.run()
    assert not at.exception, at.exception
    rid = next(int(b.key.split("_")[-1]) for b in at.button if b.key and b.key.startswith("l_submit_"))
    radio = next(r for r in at.radio if r.key and r.key.endswith("_faithful"))
    assert radio.label.startswith("Faithful")
    radio.set_value(answer)
    at.button(key=f"l_submit_{rid}").click().run()
    assert not at.exception
    with Session(engine) as session:
        saved = session.exec(select(Annotation).where(Annotation.author == "alice", Annotation.target_id == rid)).one()
    assert saved.payload["faithful"] == int(answer)
