"""Annotation basics in core: undo (append-only retractions), re-labelling with history, the needs-edit follow-up
queue, per-expert progress, auto-satisfied conditional constraints, expert domains checked and kept in gold samples."""

from __future__ import annotations

import json

import pytest
from sqlmodel import Session, select

from core.ingest.sets import check_domains
from core.review.annotations import export_annotations, label_history
from core.review.gold import (
    draw_gold_sample,
    expert_progress,
    gold_queue,
    label_history_of,
    load_response,
    my_label,
    my_labels,
    record_gold_label,
    undo_last_label,
)
from core.review.label_import import import_annotations
from core.review.verification import (
    my_verifications,
    needs_edit_queue,
    record_verification,
    record_verification_adjudication,
    undo_last_verification,
    verification_history,
    verification_queue,
)
from core.services.accounts import change_account, create_account
from core.store.labels import gold_labels
from core.store.models import Annotation, Assignment, Constraint, Instance
from tests.workspace_factories import principal, seeded_db

YES = {"constraints": {"c1": True, "c2": True}}


@pytest.fixture
def seeded(tmp_path, monkeypatch):
    monkeypatch.setenv("GAUNTLET_VERIFY_OVERLAP", "0")
    return seeded_db(tmp_path)


def _verify(seeded, who, uid, decision, token, **kw):
    return record_verification(seeded.engine, principal(who), seeded.instances[uid], consistency="consistent",
                               context_valid=True, decision=decision, client_token=token, overlap=0.0, **kw)


def _status(seeded, uid) -> str:
    with Session(seeded.engine) as s:
        return s.get(Instance, seeded.instances[uid]).status


def test_undo_verification_restores_status_and_queue_and_keeps_the_row(seeded):
    _verify(seeded, "alice", "E-noisy", "reject", "t1")
    assert _status(seeded, "E-noisy") == "rejected"
    undone = undo_last_verification(seeded.engine, principal("alice"), "u1")
    assert undone.status == "unverified" and "E-noisy v1: reject" in undone.what
    assert _status(seeded, "E-noisy") == "unverified"
    assert seeded.instances["E-noisy"] in verification_queue(seeded.engine, principal("alice"), 0.0).instance_ids
    with Session(seeded.engine) as s:
        kinds = [a.kind for a in s.exec(select(Annotation).order_by(Annotation.id)).all()]
    assert kinds == ["verification", "retraction"]  # append-only: the decision stays, marked undone
    (version, entry), = verification_history(seeded.engine, seeded.instances["E-noisy"])
    assert version == 1 and entry.undone
    assert undo_last_verification(seeded.engine, principal("alice"), "u1").what == "already undone"  # double click
    with pytest.raises(ValueError, match="no verification decision to undo"):
        undo_last_verification(seeded.engine, principal("alice"), "u2")


@pytest.mark.parametrize(
    ("name", "setup", "message"),
    [
        pytest.param("edit", lambda s: _verify(s, "alice", "E-gap", "accept", "t", constraint_edits={"c1": "Use bullets."}),
                     "saved a new version", id="decision-that-saved-a-version"),
        pytest.param("adjudicated", None, "admin already settled", id="settled-by-an-admin"),
    ],
)
def test_undo_refusals(seeded, monkeypatch, name, setup, message):
    if setup:
        setup(seeded)
    else:
        monkeypatch.setenv("GAUNTLET_VERIFY_OVERLAP", "1")
        for who, decision in (("bob", "reject"), ("alice", "accept")):
            record_verification(seeded.engine, principal(who), seeded.instances["E-gap"], consistency="consistent",
                                context_valid=True, decision=decision, client_token=f"{who}-x", overlap=1.0)
        record_verification_adjudication(seeded.engine, principal("admin"), seeded.instances["E-gap"], "accept", "", "adj")
    with pytest.raises(ValueError, match=message):
        undo_last_verification(seeded.engine, principal("alice"), "u")


def test_revisit_relabel_latest_counts_and_history_is_kept(seeded):
    draw_gold_sample(seeded.engine, principal("admin"), seeded.run_id, n=6, experts=["alice", "bob"])
    rid = seeded.responses[("model-a", "E-noisy")]
    record_gold_label(seeded.engine, principal("alice"), rid, {"constraints": {"c1": True, "c2": False}}, "a1")
    record_gold_label(seeded.engine, principal("alice"), rid, YES, "a2")
    record_gold_label(seeded.engine, principal("bob"), rid, YES, "b1")
    assert my_label(seeded.engine, principal("alice"), rid)["constraints"] == {"c1": True, "c2": True}
    assert gold_labels(seeded.engine)[rid]["constraints"] == {"c1": True, "c2": True}
    assert [e.payload["constraints"]["c2"] for e in label_history_of(seeded.engine, rid, "alice")] == [False, True]
    undo_last_label(seeded.engine, principal("alice"), "undo-a2")  # the earlier label counts again
    assert my_label(seeded.engine, principal("alice"), rid)["constraints"]["c2"] is False
    assert rid not in gold_labels(seeded.engine)  # alice and bob disagree again
    assert [e.undone for e in label_history_of(seeded.engine, rid, "alice")] == [False, True]
    undo_last_label(seeded.engine, principal("alice"), "undo-a1")
    assert rid in gold_queue(seeded.engine, principal("alice")).instance_ids  # back in the queue
    assert rid not in dict(my_labels(seeded.engine, principal("alice")))


def test_needs_edit_follow_up_queue_and_my_decisions(seeded):
    _verify(seeded, "alice", "E-gap", "needs_edit", "t1")
    assert needs_edit_queue(seeded.engine, principal("bob")) == [seeded.instances["E-gap"]]
    assert needs_edit_queue(seeded.engine, principal("carol")) == []  # another domain
    result = _verify(seeded, "bob", "E-gap", "accept", "t2", constraint_edits={"c2": "Cite every figure's source."})
    assert result.new_instance_id and needs_edit_queue(seeded.engine, principal("bob")) == []
    (mine,) = my_verifications(seeded.engine, principal("alice"))
    assert (mine.uid, mine.decision, mine.latest_id) == ("E-gap", "needs_edit", result.new_instance_id)


def test_expert_progress_for_admins(seeded):
    draw_gold_sample(seeded.engine, principal("admin"), seeded.run_id, n=6, experts=["alice", "bob"])
    _verify(seeded, "alice", "E-noisy", "accept", "t1")
    record_gold_label(seeded.engine, principal("alice"), seeded.responses[("model-a", "E-noisy")], YES, "l1")
    rows = {p.expert: p for p in expert_progress(seeded.engine, 0.0)}
    assert (rows["alice"].verified, rows["alice"].to_verify, rows["alice"].labelled, rows["alice"].to_label) == (1, 2, 1, 5)
    assert (rows["carol"].verified, rows["carol"].to_verify, rows["carol"].to_label) == (0, 1, 0)
    assert rows["alice"].last_active is not None and rows["carol"].last_active is None


def _add_conditional(seeded, uid: str, precondition: str) -> None:
    with Session(seeded.engine) as s:
        s.add(Constraint(instance_id=seeded.instances[uid], position=2, cid="c3", text="Say when the documents lack it.",
                         category="knowledge_protocol", sub_dimension="boundary", judge_method="llm",
                         precondition=precondition))
        s.commit()


@pytest.mark.parametrize(
    ("name", "given", "stored", "error"),
    [
        pytest.param("not asked", {}, True, None, id="missing-is-satisfied"),
        pytest.param("yes", {"c3": True}, True, None, id="yes-accepted"),
        pytest.param("no", {"c3": False}, None, "satisfied automatically", id="no-is-an-error"),
    ],
)
def test_conditional_constraints_that_cannot_apply_are_auto_satisfied(seeded, name, given, stored, error):
    _add_conditional(seeded, "E-noisy", "gap")
    draw_gold_sample(seeded.engine, principal("admin"), seeded.run_id, n=6, experts=["alice", "bob"])
    rid = seeded.responses[("model-a", "E-noisy")]
    payload = {"constraints": {"c1": True, "c2": True, **given}}
    if error:
        with pytest.raises(ValueError, match=error):
            record_gold_label(seeded.engine, principal("alice"), rid, payload, "x")
        return
    record_gold_label(seeded.engine, principal("alice"), rid, payload, "x")
    assert my_label(seeded.engine, principal("alice"), rid)["constraints"]["c3"] is stored


def test_gold_sample_keeps_to_the_experts_domains(seeded):
    report = draw_gold_sample(seeded.engine, principal("admin"), seeded.run_id, n=8, experts=["alice", "bob", "carol"])
    assert report.uncovered == {"Medical": 2}  # carol alone covers Medical: never given to alice or bob
    with Session(seeded.engine) as s:
        rows = s.exec(select(Assignment)).all()
    for a in rows:
        domain = load_response(seeded.engine, a.target_id).bundle.domain
        assert domain == "Energy" and a.assignee in ("alice", "bob")


@pytest.mark.parametrize(
    ("name", "domains", "error"),
    [
        pytest.param("known", ["Energy"], None, id="known-domain"),
        pytest.param("typo", ["Enrgy"], "unknown domain 'Enrgy'; known: Energy, Medical", id="typo-is-an-error"),
        pytest.param("mixed", ["Energy", "Medicl"], "'Medicl'", id="one-typo-among-several"),
    ],
)
def test_expert_domains_must_exist(seeded, name, domains, error):
    if error is None:
        check_domains(seeded.engine, domains)
        create_account(seeded.engine, principal("admin"), "dora", "expert", "dora-pass-123", domains)
        change_account(seeded.engine, principal("admin"), "alice", domains=domains + ["Medical"])
        return
    with pytest.raises(ValueError, match=error):
        create_account(seeded.engine, principal("admin"), "dora", "expert", "dora-pass-123", domains)
    with pytest.raises(ValueError, match=error):
        change_account(seeded.engine, principal("admin"), "alice", domains=domains)


def test_undo_survives_export_and_import(seeded, tmp_path):
    draw_gold_sample(seeded.engine, principal("admin"), seeded.run_id, n=6, experts=["alice", "bob"])
    rid = seeded.responses[("model-a", "E-noisy")]
    record_gold_label(seeded.engine, principal("alice"), rid, YES, "a1")
    undo_last_label(seeded.engine, principal("alice"), "undo-1")
    out = tmp_path / "labels.jsonl"
    assert export_annotations(seeded.engine, out) == 2
    assert [json.loads(line)["kind"] for line in out.read_text().splitlines()] == ["gold_label", "retraction"]
    (tmp_path / "other").mkdir()
    other = seeded_db(tmp_path / "other")
    report = import_annotations(other.engine, out, cli=True)
    assert report.ok, report.errors
    assert [e.undone for e in label_history(other.engine, "response", [rid], ("gold_label",))] == [True]
