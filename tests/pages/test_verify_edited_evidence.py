"""Issue 43.4: every built item enters expert verification with the original and the edited evidence side by side
(the edit highlighted, untrusted text escaped) and the automatic checks' verdicts and reasons beside them; the
decision buttons keep their shortcuts and the panel stays a fragment."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from sqlmodel import Session, select
from streamlit.testing.v1 import AppTest

from core.ingest.io import import_file
from core.review.evidence_edits import automatic_checks, evidence_pair
from core.store.models import Annotation, Document, Domain, Instance
from tests.generated_items import SOURCE, generated_stress_item, write_specs
from tests.workspace_factories import T0, principal, seeded_db

ROOT = Path(__file__).resolve().parents[2]
UID = "misleading_evidence/mill-1"
FORBIDDEN = ("<script", "onerror", "<b>in stone")


@pytest.fixture
def queued(tmp_path, monkeypatch):
    """The seeded database with one model-written misleading-evidence item first in alice's queue; its source text
    carries markup that must reach the page escaped."""
    s = seeded_db(tmp_path)
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", s.url)
    monkeypatch.setenv("GAUNTLET_VERIFY_OVERLAP", "0")
    monkeypatch.setitem(SOURCE["documents"][0], "text", SOURCE["documents"][0]["text"] + " <script>alert(1)</script>")
    assert import_file(s.engine, write_specs([generated_stress_item()], tmp_path / "stress.jsonl")).ok
    with Session(s.engine) as session:
        stress = session.exec(select(Instance).where(Instance.uid == UID)).one()
        stress.domain_id = session.exec(select(Domain).where(Domain.name == "Energy")).one().id
        stress.created_at = T0 - timedelta(minutes=5)
        session.add(stress)
        session.commit()
        return s, stress.id


def test_verification_shows_original_and_edited_evidence_with_checks(queued) -> None:
    seeded, iid = queued
    at = AppTest.from_file(str(ROOT / "pages/verify_instances.py"), default_timeout=60)
    at.session_state["gauntlet_principal"] = principal("alice")
    at.run()
    assert not at.exception, at.exception
    markdown = [m.value for m in at.markdown]
    original = next(i for i, m in enumerate(markdown) if m == "**Original passage**")
    assert markdown[original + 1].startswith("The Old Mill was built in <mark>1887</mark> by the Harker family.")
    edited = next(i for i, m in enumerate(markdown) if m.startswith("**Edited passage"))
    assert "built in <mark>1891</mark> <del>1887</del> by" in markdown[edited + 1]
    assert "&lt;b&gt;in stone&lt;/b&gt;" in markdown[edited + 1]
    assert not any(bad in m for m in markdown for bad in FORBIDDEN)
    checks = next(d.value for d in at.dataframe if "verdict" in d.value.columns)
    assert list(checks["check"]) == ["states wrong", "drops gold", "gold not elsewhere", "same type"]
    assert set(checks["verdict"]) == {"passed"} and set(checks["decided by"]) == {"rule"}
    assert "'1887' stated in 0 sentences of the edited evidence" in set(checks["reason"])
    assert "4 of 4 checks passed" in [c.value for c in at.caption]
    accept = at.button(key=f"v_accept_{iid}")
    assert accept.proto.shortcut.lower() == "alt+a"  # the keyboard shortcuts stay on the decision buttons
    accept.click().run()
    assert not at.exception, at.exception
    with Session(seeded.engine) as session:
        (ann,) = session.exec(select(Annotation).where(Annotation.target_id == iid)).all()
        assert ann.payload["decision"] == "accept" and session.get(Instance, iid).status == "accepted"
    assert UID not in "\n".join(m.value for m in at.markdown if m.value.startswith("**"))  # the next item is open


def _doc(variant: dict, text: str = "The mill was built in 1887.") -> Document:
    return Document(instance_id=1, position=0, doc_uid="d", title="", text=text, role="supporting", variant=variant)


EDIT = {"start": 22, "end": 26, "before": "1887", "after": "1891"}
PAIR_CASES = [
    pytest.param([_doc({})], False, id="no-edit-recorded"),
    pytest.param([_doc({"evidence": "clean", "edit": EDIT})], False, id="clean-only"),
    pytest.param([_doc({"evidence": "clean", "edit": EDIT}), _doc({"evidence": "misleading", "edit": EDIT},
                                                                   "The mill was built in 1891.")], True, id="pair"),
    pytest.param([_doc({"evidence": "clean", "edit": {**EDIT, "end": 99}}),
                  _doc({"evidence": "misleading", "edit": EDIT})], False, id="span-outside-text"),
]


@pytest.mark.parametrize(("documents", "paired"), PAIR_CASES)
def test_evidence_pair_needs_a_clean_and_an_edited_passage(documents, paired) -> None:
    assert (evidence_pair(documents) is not None) is paired


CHECK_CASES = [
    pytest.param({}, [], id="none"),
    pytest.param({"rag_stress": {"checks": {"same_type": {"passed": False, "reason": "place vs person", "by": "judge:j"}}}},
                 [("same_type", False, "place vs person", "judge:j")], id="rag-stress"),
    pytest.param({"checks": {"contradicts": {"passed": True, "reason": "18 vs 24 months", "by": "rule"}}},
                 [("contradicts", True, "18 vs 24 months", "rule")], id="builder-own"),
]


@pytest.mark.parametrize(("meta", "expected"), CHECK_CASES)
def test_automatic_checks_are_read_from_the_item(meta, expected) -> None:
    assert [(c.name, c.passed, c.reason, c.by) for c in automatic_checks(meta)] == expected
