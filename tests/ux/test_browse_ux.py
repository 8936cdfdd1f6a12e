"""AppTest: Browse shows an instance's sets and its verification history with notes; a link (?instance=) opens it;
the set filter narrows the list; the composition tables show labels, not raw field names."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.ingest.sets import import_set_file
from core.review.verification import record_verification, undo_last_verification
from tests.workspace_factories import principal, seeded_db

ROOT = Path(__file__).resolve().parents[2]
MINI = ROOT / "tests" / "fixtures" / "mini.jsonl"


@pytest.fixture
def seeded(tmp_path, monkeypatch):
    s = seeded_db(tmp_path)
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", s.url)
    return s


def browse(who: str = "vic", instance: str | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "browse_benchmark.py"), default_timeout=30)
    at.session_state["gauntlet_principal"] = principal(who)
    if instance:
        at.query_params["instance"] = instance
    at.run()
    assert not at.exception, at.exception
    return at


def texts(at: AppTest) -> str:
    return "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption])


def test_link_opens_the_instance_with_its_history_and_notes(seeded):
    iid = seeded.instances["E-gap"]
    for who, decision, token in (("alice", "reject", "a1"), ("alice", "needs_edit", "a2")):
        record_verification(seeded.engine, principal(who), iid, consistency="inconsistent", context_valid=False,
                            decision=decision, consistency_note=f"{decision} note", context_note="doc 1 answers it",
                            clashing_constraints=["c2"], client_token=token, overlap=0.0)
    undo_last_verification(seeded.engine, principal("alice"), "undo")
    at = browse(instance="E-gap")
    assert at.selectbox(key="browse_open").value == "E-gap"
    shown = texts(at)
    assert "Consistency note: reject note" in shown and "Context note: doc 1 answers it" in shown
    assert "needs_edit note" in shown and "undone by its author, does not count" in shown
    assert "clashing: `c2`" in shown
    assert at.query_params["instance"] == "E-gap"


def test_set_filter_and_composition_labels(seeded):
    assert import_set_file(seeded.engine, MINI, "mini set").ok
    at = browse()
    assert "8 instances" in at.caption[0].value
    at.selectbox(key="browse_set").select_index(1).run()
    assert "4 instances" in at.caption[0].value
    at.selectbox(key="browse_open").set_value("legal-noisy-t1").run()
    assert "Benchmark sets: mini set" in texts(at)
    labels = {c["label"] for df in at.dataframe[:2] for c in _labels(df)}
    assert "Persona constraints per instance" in labels and "avg_persona" not in labels


def _labels(df) -> list[dict]:
    import json

    return [{"label": v.get("label", k)} for k, v in json.loads(df.proto.columns).items() if v]
