"""Blind labelling (issue 28, item 4): a gold-label sample hides the model from its experts until they save a label,
each expert's queue follows a seeded shuffle across models (the seed recorded on the assignments), and an admin can
turn blinding off or on per sample, re-checked server-side against the setting they read. Both backends."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import Session, col, select
from streamlit.testing.v1 import AppTest

from core.review.auth import PermissionDenied
from core.review.gold import (
    HIDDEN_MODEL,
    draw_gold_sample,
    gold_queue,
    labelling_context,
    load_response,
    record_gold_label,
    sample_batches,
    set_sample_blinding,
    shuffle_queues,
)
from core.store.models import Assignment
from tests.workspace_factories import principal, seeded_db

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("model-a", "model-b")


@pytest.fixture
def seeded(tmp_path, monkeypatch):
    s = seeded_db(tmp_path)
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", s.url)
    return s


def _draw(seeded, seed: int = 0):
    return draw_gold_sample(seeded.engine, principal("admin"), seeded.run_id, n=8, experts=["alice", "bob"], seed=seed)


def _assignments(seeded) -> list[Assignment]:
    with Session(seeded.engine) as s:
        return list(s.exec(select(Assignment).where(Assignment.kind == "gold_label").order_by(col(Assignment.id))).all())


def _full_label(ctx, value: bool = True) -> dict:
    payload: dict = {"constraints": {c.cid: value for c in ctx.bundle.constraints}}
    if ctx.bundle.instance.mode == "gap":
        payload["valid_refusal"] = int(value)
    if ctx.bundle.instance.mode == "conflict":
        payload["conflict_recognized"] = int(value)
    return payload


def test_queue_follows_the_recorded_seeded_shuffle(seeded):
    _draw(seeded, seed=7)
    rows = _assignments(seeded)
    assert {a.queue_seed for a in rows} == {7}
    assert sorted(a.queue_position for a in rows) == list(range(len(rows)))  # a permutation
    replay = shuffle_queues([Assignment(kind="gold_label", target_id=a.target_id, assignee=a.assignee) for a in rows], 7)
    assert [a.queue_position for a in replay] == [a.queue_position for a in rows]  # the recorded seed reproduces it
    for who in ("alice", "bob"):
        mine = sorted((a for a in rows if a.assignee == who), key=lambda a: a.queue_position)
        assert gold_queue(seeded.engine, principal(who)).instance_ids == [a.target_id for a in mine]
    in_draw_order = [a.target_id for a in rows if a.assignee == "alice"]
    assert gold_queue(seeded.engine, principal("alice")).instance_ids != in_draw_order  # not the strata's order


@pytest.mark.parametrize("seed", [pytest.param(s, id=f"seed-{s}") for s in (1, 2, 3)])
def test_different_seeds_give_different_orders(seeded, seed):
    base = list(range(16))
    one = shuffle_queues([Assignment(kind="gold_label", target_id=t, assignee="x") for t in base], seed)
    other = shuffle_queues([Assignment(kind="gold_label", target_id=t, assignee="x") for t in base], seed + 100)
    assert [a.queue_position for a in one] != [a.queue_position for a in other]


@pytest.mark.parametrize(("who", "hidden"), [
    pytest.param("alice", True, id="assigned-expert-sees-no-model"),
    pytest.param("admin", False, id="admin-not-assigned-sees-the-model"),
])
def test_model_hidden_until_the_expert_saves(seeded, who, hidden):
    _draw(seeded)
    rid = gold_queue(seeded.engine, principal("alice")).instance_ids[0]
    real = load_response(seeded.engine, rid).model
    ctx = labelling_context(seeded.engine, principal(who), rid)
    assert (ctx.model == HIDDEN_MODEL) is hidden and real in MODELS
    if who == "alice":
        record_gold_label(seeded.engine, principal("alice"), rid, _full_label(ctx), "blind-1")
        assert labelling_context(seeded.engine, principal("alice"), rid).model == real  # revealed once saved
        other = gold_queue(seeded.engine, principal("alice")).instance_ids[0]
        assert labelling_context(seeded.engine, principal("alice"), other).model == HIDDEN_MODEL


def test_admin_turns_blinding_off_and_on_per_sample(seeded):
    report = _draw(seeded)
    (sample,) = sample_batches(seeded.engine)
    assert (sample.batch, sample.blind, sample.queue_seed, sample.responses) == (report.batch, True, 0, report.sampled)
    rid = gold_queue(seeded.engine, principal("bob")).instance_ids[0]
    assert set_sample_blinding(seeded.engine, principal("admin"), report.batch, False, True) == report.assignments
    assert labelling_context(seeded.engine, principal("bob"), rid).model in MODELS
    assert not sample_batches(seeded.engine)[0].blind
    set_sample_blinding(seeded.engine, principal("admin"), report.batch, True, False)
    assert labelling_context(seeded.engine, principal("bob"), rid).model == HIDDEN_MODEL


@pytest.mark.parametrize(("who", "read_blind", "error", "match"), [
    pytest.param("alice", True, PermissionDenied, "may not", id="expert-refused"),
    pytest.param("admin", False, ValueError, "changed since you read it", id="stale-read-refused"),
])
def test_blinding_change_refusals(seeded, who, read_blind, error, match):
    report = _draw(seeded)
    with pytest.raises(error, match=match):
        set_sample_blinding(seeded.engine, principal(who), report.batch, not read_blind, read_blind)
    assert all(a.blind for a in _assignments(seeded))  # nothing changed


def test_label_page_shows_no_model_name_to_the_expert(seeded):
    _draw(seeded)
    at = AppTest.from_file(str(ROOT / "pages/label_responses.py"), default_timeout=30)
    at.session_state["gauntlet_principal"] = principal("bob")
    at.run()
    assert not at.exception, at.exception
    shown = "\n".join([m.value for m in at.markdown] + [str(c.value) for c in at.caption])
    assert HIDDEN_MODEL in shown and not any(m in shown for m in MODELS)
