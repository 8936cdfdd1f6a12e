"""Verification queues and decisions, gold sampling, the label write path, adjudication, export/import."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import Session, select

from core.review.annotations import export_annotations
from core.review.auth import PermissionDenied, SessionExpired
from core.review.gold import (
    _allocate,
    draw_gold_sample,
    gold_queue,
    label_disagreements,
    record_adjudication,
    record_gold_label,
)
from core.review.label_import import import_annotations
from core.review.verification import (
    PermissionDenied_,
    record_verification,
    record_verification_adjudication,
    verification_disagreements,
    verification_queue,
)
from core.store.labels import gold_labels
from core.store.models import Annotation, Assignment, Constraint, Document, Instance
from tests.workspace_factories import principal, seeded_db

ALL_YES = {"constraints": {"c1": True, "c2": True}}


@pytest.fixture
def seeded(tmp_path):
    return seeded_db(tmp_path)


def _verify(seeded, who, uid, decision="accept", token=None, **kw):
    return record_verification(
        seeded.engine, principal(who), seeded.instances[uid], consistency="consistent", context_valid=True,
        decision=decision, client_token=token or f"{who}-{uid}-{decision}", overlap=0.0, **kw,
    )


# --------------------------------------------------------------------------- verification


@pytest.mark.parametrize(
    "name, who, expected",
    [
        ("expert sees own domain oldest first", "alice", ["E-noisy", "E-gap", "E-conflict"]),
        ("other domain expert", "carol", ["M-noisy"]),
        ("admin sees every domain", "admin", ["M-noisy", "E-noisy", "E-gap", "E-conflict"]),
    ],
)
def test_queue_by_domain_oldest_first(seeded, name, who, expected):
    q = verification_queue(seeded.engine, principal(who), overlap=0.0)
    by_id = {v: k for k, v in seeded.instances.items()}
    assert [by_id[i] for i in q.instance_ids] == expected, name


@pytest.mark.parametrize("name, overlap, in_bobs_queue", [("single decision", 0.0, False), ("double-checked", 1.0, True)])
def test_overlap_decides_how_many_decisions(seeded, name, overlap, in_bobs_queue):
    record_verification(seeded.engine, principal("alice"), seeded.instances["E-gap"], consistency="consistent",
                        context_valid=True, decision="accept", client_token="t1", overlap=overlap)
    bob = verification_queue(seeded.engine, principal("bob"), overlap=overlap)
    alice = verification_queue(seeded.engine, principal("alice"), overlap=overlap)
    assert (seeded.instances["E-gap"] in bob.instance_ids) is in_bobs_queue, name
    assert seeded.instances["E-gap"] not in alice.instance_ids and alice.decided == 1


def test_decision_without_edit_sets_status(seeded):
    result = _verify(seeded, "alice", "E-gap", "reject", consistency_note="query unanswerable by design")
    assert result.status == "rejected" and result.new_instance_id is None
    with Session(seeded.engine) as s:
        assert s.get(Instance, seeded.instances["E-gap"]).status == "rejected"


def test_edit_creates_new_version_and_keeps_old(seeded):
    iid = seeded.instances["E-noisy"]
    result = _verify(seeded, "alice", "E-noisy", "needs_edit", role_corrections={"E-noisy-d2": "partial"},
                     constraint_edits={"c1": "Use a numbered list of at most 5 items."})
    with Session(seeded.engine) as s:
        versions = s.exec(select(Instance).where(Instance.uid == "E-noisy").order_by(Instance.version)).all()
        assert [(v.version, v.is_latest) for v in versions] == [(1, False), (2, True)]
        assert versions[1].id == result.new_instance_id and versions[1].status == "unverified"
        new_roles = {d.doc_uid: d.role for d in s.exec(select(Document).where(Document.instance_id == result.new_instance_id))}
        old_roles = {d.doc_uid: d.role for d in s.exec(select(Document).where(Document.instance_id == iid))}
        new_c1 = s.exec(select(Constraint).where(Constraint.instance_id == result.new_instance_id, Constraint.cid == "c1")).one()
    assert new_roles["E-noisy-d2"] == "partial" and old_roles["E-noisy-d2"] == "noise"
    assert new_c1.text.endswith("at most 5 items.")
    # the edited version returns to the queue of the other expert
    assert result.new_instance_id in verification_queue(seeded.engine, principal("bob"), overlap=0.0).instance_ids


@pytest.mark.parametrize(
    "name, who, uid, kwargs, error",
    [
        ("other domain", "carol", "E-gap", {}, PermissionDenied_),
        ("viewer", "vic", "E-gap", {}, PermissionDenied),
        ("unknown clash id", "alice", "E-gap", {"clashing_constraints": ["c9"]}, ValueError),
        ("bad role", "alice", "E-gap", {"role_corrections": {"E-gap-d1": "gold"}}, ValueError),
        ("edit breaks the mode", "alice", "E-gap", {"decision": "needs_edit", "role_corrections": {"E-gap-d1": "supporting"}}, ValueError),
    ],
)
def test_verification_refusals(seeded, name, who, uid, kwargs, error):
    decision = kwargs.pop("decision", "accept")
    with pytest.raises(error):
        _verify(seeded, who, uid, decision, **kwargs)
    with Session(seeded.engine) as s:
        assert s.exec(select(Annotation)).all() == [], name


def test_reject_keeps_corrections_without_new_version(seeded):
    result = _verify(seeded, "alice", "E-gap", "reject", role_corrections={"E-gap-d2": "supporting"})
    assert result.new_instance_id is None and result.status == "rejected"
    with Session(seeded.engine) as s:
        (ann,) = s.exec(select(Annotation)).all()
        assert ann.payload["role_corrections"] == {"E-gap-d2": "supporting"}
        assert len(s.exec(select(Instance).where(Instance.uid == "E-gap")).all()) == 1


def test_double_submit_is_idempotent(seeded):
    first = _verify(seeded, "alice", "E-gap", token="same")
    again = _verify(seeded, "alice", "E-gap", token="same")
    assert first.created and not again.created and first.annotation_id == again.annotation_id


def test_expired_session_cannot_write(seeded):
    old = principal("alice", datetime.now(UTC) - timedelta(hours=9))
    with pytest.raises(SessionExpired):
        record_verification(seeded.engine, old, seeded.instances["E-gap"], consistency="consistent",
                            context_valid=True, decision="accept", client_token="late")
    r = seeded.responses[("model-a", "E-gap")]
    with pytest.raises(SessionExpired):
        record_gold_label(seeded.engine, old, r, {**ALL_YES, "valid_refusal": 1}, "late2")


# --------------------------------------------------------------------------- verification disagreements


def _double(seeded, uid, decisions):
    """Two independent decisions on a double-checked instance: {author: decision}."""
    for who, decision in decisions.items():
        record_verification(seeded.engine, principal(who), seeded.instances[uid], consistency="consistent",
                            context_valid=True, decision=decision, client_token=f"{who}-{uid}", overlap=1.0)


def _count(seeded, kind):
    with Session(seeded.engine) as s:
        return len(s.exec(select(Annotation).where(Annotation.kind == kind)).all())


def test_verification_disagreement_is_settled_by_admin_once(seeded):
    _double(seeded, "E-gap", {"alice": "accept", "bob": "reject"})
    _double(seeded, "E-noisy", {"alice": "accept", "bob": "accept"})
    iid = seeded.instances["E-gap"]
    (d,) = verification_disagreements(seeded.engine)
    assert d.instance_id == iid and {a: p["decision"] for a, p in d.decisions.items()} == {"alice": "accept", "bob": "reject"}
    first = record_verification_adjudication(seeded.engine, principal("admin"), iid, "reject", " unanswerable ", "adj-1")
    again = record_verification_adjudication(seeded.engine, principal("admin"), iid, "accept", "", "adj-1")
    assert first.created and first.status == "rejected"
    assert not again.created and again.annotation_id == first.annotation_id and again.status == "rejected"
    with Session(seeded.engine) as s:
        assert s.get(Instance, iid).status == "rejected"
        (adj,) = s.exec(select(Annotation).where(Annotation.kind == "adjudication")).all()
    assert (adj.target_type, adj.target_id, adj.author) == ("instance", iid, "admin")
    assert adj.payload["note"] == "unanswerable" and adj.payload["expert_decisions"] == {"alice": "accept", "bob": "reject"}
    assert verification_disagreements(seeded.engine) == [] and _count(seeded, "verification") == 4
    with pytest.raises(ValueError, match="no open verification disagreement"):
        record_verification_adjudication(seeded.engine, principal("admin"), iid, "accept", "", "adj-2")


def test_instance_adjudication_is_not_a_response_gold_label(seeded):
    _double(seeded, "E-gap", {"alice": "accept", "bob": "needs_edit"})
    iid = seeded.instances["E-gap"]
    record_verification_adjudication(seeded.engine, principal("admin"), iid, "needs_edit", "", "adj")
    with Session(seeded.engine) as s:
        assert s.get(Instance, iid).status == "needs_edit"
    assert iid not in gold_labels(seeded.engine)  # response ids and instance ids overlap in the seeded db


@pytest.mark.parametrize(
    "name, who, uid, decision, error",
    [
        ("expert may not adjudicate", "alice", "E-gap", "accept", PermissionDenied),
        ("analyst may not adjudicate", "ana", "E-gap", "accept", PermissionDenied),
        ("unknown decision", "admin", "E-gap", "maybe", ValueError),
        ("experts agreed", "admin", "E-noisy", "reject", ValueError),
        ("only one decision", "admin", "E-conflict", "reject", ValueError),
    ],
)
def test_verification_adjudication_refusals(seeded, name, who, uid, decision, error):
    _double(seeded, "E-gap", {"alice": "accept", "bob": "reject"})
    _double(seeded, "E-noisy", {"alice": "accept", "bob": "accept"})
    _double(seeded, "E-conflict", {"alice": "accept"})
    with pytest.raises(error):
        record_verification_adjudication(seeded.engine, principal(who), seeded.instances[uid], decision, "", "t")
    assert _count(seeded, "adjudication") == 0, name
    assert [d.instance_id for d in verification_disagreements(seeded.engine)] == [seeded.instances["E-gap"]], name


# --------------------------------------------------------------------------- gold labels


@pytest.mark.parametrize(
    "name, sizes, n, expected",
    [
        ("proportional", {"a": 6, "b": 3, "c": 1}, 5, {"a": 2, "b": 2, "c": 1}),
        ("all when n exceeds", {"a": 2, "b": 1}, 10, {"a": 2, "b": 1}),
        ("fewer than strata", {"a": 5, "b": 5, "c": 5}, 2, {"a": 1, "b": 1, "c": 0}),
    ],
)
def test_allocate(name, sizes, n, expected):
    got = _allocate(sizes, n)
    assert sum(got.values()) == min(n, sum(sizes.values())), name
    assert got == expected, name


def test_sample_assigns_each_response_to_two_experts_of_its_domain(seeded):
    report = draw_gold_sample(seeded.engine, principal("admin"), seeded.run_id, n=6)
    assert report.sampled == 6 and report.assignments == 12
    with Session(seeded.engine) as s:
        rows = s.exec(select(Assignment)).all()
    by_response: dict[int, set[str]] = {}
    for a in rows:
        by_response.setdefault(a.target_id, set()).add(a.assignee)
    assert all(len(v) == 2 for v in by_response.values())
    energy = {seeded.responses[(m, u)] for m in ("model-a", "model-b") for u in ("E-noisy", "E-gap", "E-conflict")}
    assert all(v == {"alice", "bob"} for r, v in by_response.items() if r in energy)
    with pytest.raises(PermissionDenied):
        draw_gold_sample(seeded.engine, principal("alice"), seeded.run_id)


@pytest.mark.parametrize("modes", [pytest.param("all", id="every-instance-without-a-mode"),
                                   pytest.param("one", id="modes-mixed-with-none")])
def test_sample_draws_instances_without_a_mode(seeded, modes):
    """IFEval, FollowRAG and production instances have no EnterpriseRAG mode: they are drawn under mode 'none'."""
    with Session(seeded.engine) as s:
        rows = s.exec(select(Instance)).all()
        for inst in rows if modes == "all" else rows[:1]:
            inst.mode = None
            s.add(inst)
        s.commit()
    report = draw_gold_sample(seeded.engine, principal("admin"), seeded.run_id, n=6)
    assert report.sampled == 6 and report.assignments == 12
    assert any("/none/" in stratum for stratum in report.strata), report.strata


def _sample_two(seeded):
    draw_gold_sample(seeded.engine, principal("admin"), seeded.run_id, n=8, experts=["alice", "bob"])


@pytest.mark.parametrize(
    "name, uid, payload, message",
    [
        ("missing constraint", "E-noisy", {"constraints": {"c1": True}}, "missing"),
        ("unknown constraint", "E-noisy", {"constraints": {"c1": True, "c2": True, "c3": False}}, "unknown"),
        ("gap needs refusal", "E-gap", ALL_YES, "valid_refusal"),
        ("conflict needs recognition", "E-conflict", ALL_YES, "conflict_recognized"),
        ("refusal only on gap", "E-noisy", {**ALL_YES, "valid_refusal": 1}, "only applies"),
        ("not binary", "E-gap", {**ALL_YES, "valid_refusal": 2}, "0/1"),
    ],
)
def test_gold_label_validation(seeded, name, uid, payload, message):
    _sample_two(seeded)
    with pytest.raises(ValueError, match=message):
        record_gold_label(seeded.engine, principal("alice"), seeded.responses[("model-a", uid)], payload, "x")


def test_label_requires_assignment(seeded):
    with pytest.raises(PermissionDenied_):
        record_gold_label(seeded.engine, principal("alice"), seeded.responses[("model-a", "E-noisy")], ALL_YES, "x")


def test_later_label_supersedes_but_both_rows_stay(seeded):
    _sample_two(seeded)
    r = seeded.responses[("model-a", "E-noisy")]
    record_gold_label(seeded.engine, principal("alice"), r, {"constraints": {"c1": True, "c2": False}}, "a1")
    record_gold_label(seeded.engine, principal("alice"), r, {"constraints": {"c1": True, "c2": True}}, "a2")
    record_gold_label(seeded.engine, principal("bob"), r, ALL_YES, "b1")
    with Session(seeded.engine) as s:
        assert len(s.exec(select(Annotation).where(Annotation.target_id == r, Annotation.kind == "gold_label")).all()) == 3
    assert gold_labels(seeded.engine)[r]["constraints"] == {"c1": True, "c2": True}
    assert r not in [d.response_id for d in label_disagreements(seeded.engine)]
    assert r not in gold_queue(seeded.engine, principal("alice")).instance_ids


def test_disagreement_then_adjudication_becomes_gold(seeded):
    _sample_two(seeded)
    r = seeded.responses[("model-b", "E-conflict")]
    record_gold_label(seeded.engine, principal("alice"), r, {**ALL_YES, "conflict_recognized": 1}, "a")
    record_gold_label(seeded.engine, principal("bob"), r, {"constraints": {"c1": True, "c2": False}, "conflict_recognized": 0}, "b")
    (d,) = label_disagreements(seeded.engine)
    assert d.response_id == r and d.differing == ["conflict_recognized", "constraint:c2"] and not d.adjudicated
    assert r not in gold_labels(seeded.engine)
    with pytest.raises(PermissionDenied):
        record_adjudication(seeded.engine, principal("alice"), r, ALL_YES, "adj-x")
    record_adjudication(seeded.engine, principal("admin"), r, {"constraints": {"c1": True, "c2": False}, "conflict_recognized": 1}, "adj")
    assert gold_labels(seeded.engine)[r] == {"constraints": {"c1": True, "c2": False}, "conflict_recognized": 1, "note": ""}
    assert label_disagreements(seeded.engine)[0].adjudicated


def test_two_experts_writing_concurrently_lose_nothing(seeded):
    _sample_two(seeded)
    targets = [seeded.responses[("model-a", "E-noisy")], seeded.responses[("model-b", "E-noisy")]]
    errors: list[BaseException] = []

    def work(who: str) -> None:
        try:
            for i in range(15):
                for r in targets:
                    record_gold_label(seeded.engine, principal(who), r, ALL_YES, f"{who}-{r}-{i}")
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in ("alice", "bob")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with Session(seeded.engine) as s:
        assert len(s.exec(select(Annotation).where(Annotation.kind == "gold_label")).all()) == 2 * 15 * 2


# --------------------------------------------------------------------------- export / import


def test_export_then_import_into_fresh_db_round_trips(seeded, tmp_path):
    _sample_two(seeded)
    r = seeded.responses[("model-a", "E-gap")]
    record_gold_label(seeded.engine, principal("alice"), r, {**ALL_YES, "valid_refusal": 1}, "g1")
    _verify(seeded, "alice", "E-conflict")
    out = tmp_path / "labels.jsonl"
    assert export_annotations(seeded.engine, out) == 2
    (tmp_path / "other").mkdir()
    other = seeded_db(tmp_path / "other")
    report = import_annotations(other.engine, out, cli=True)
    assert report.ok and report.imported == 2
    again = import_annotations(other.engine, out, cli=True)
    assert again.imported == 0 and again.skipped == 2


@pytest.mark.parametrize(
    "name, line, field",
    [
        ("not json", "{oops", "(line)"),
        ("bad kind", {"kind": "vote", "target_type": "response", "target_id": 1, "author": "a", "payload": {}}, "kind"),
        ("missing author", {"kind": "gold_label", "target_type": "response", "target_id": 1, "payload": {}}, "author"),
        ("unknown response", {"kind": "gold_label", "target_type": "response", "target_id": 999, "author": "a", "payload": {}}, "target_id"),
        ("bad date", {"kind": "gold_label", "target_type": "response", "target_id": 1, "author": "a", "payload": {}, "created_at": "soon"}, "created_at"),
    ],
)
def test_import_is_atomic_and_reports_line_and_field(seeded, tmp_path, name, line, field):
    good = {"kind": "gold_label", "target_type": "response", "target_id": 1, "author": "a", "payload": ALL_YES, "client_token": "ok1"}
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(good) + "\n" + (line if isinstance(line, str) else json.dumps(line)) + "\n")
    report = import_annotations(seeded.engine, path, cli=True)
    assert [(e.line, e.field) for e in report.errors] == [(2, field)], name
    with Session(seeded.engine) as s:
        assert s.exec(select(Annotation)).all() == []


def test_import_from_app_needs_admin(seeded, tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    with pytest.raises(PermissionDenied):
        import_annotations(seeded.engine, path, principal("alice"))
