"""Benchmarks as named sets: a build is its own set, superseding needs an explicit choice after a preview, results
can be narrowed to a set and to accepted instances."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import Session, select

from core.ingest.io import import_file, validate_file
from core.ingest.sets import benchmark_sets, import_set_file, plan_import, scoped_response_ids, set_instance_ids
from core.store.models import Instance, Model, Response, Run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MINI = FIXTURES / "mini.jsonl"


def _changed_copy(tmp_path: Path) -> Path:
    """mini.jsonl with one query reworded, one constraint dropped and one new instance."""
    rows = [json.loads(line) for line in MINI.read_text().splitlines() if line.strip()]
    rows[0]["query"] += " (revised)"
    rows[1]["constraints"] = rows[1]["constraints"][:-1]
    extra = {**rows[3], "id": "legal-noisy-t2"}
    out = tmp_path / "built.jsonl"
    out.write_text("\n".join(json.dumps(r) for r in [*rows, extra]) + "\n")
    return out


def _latest(engine) -> dict[str, tuple[int, bool]]:
    with Session(engine) as s:
        return {(i.uid, i.version): i.is_latest for i in s.exec(select(Instance)).all()}


def test_preview_says_what_changes(engine, tmp_path):
    assert import_file(engine, MINI).ok
    plan = {p.uid: p for p in plan_import(engine, validate_file(_changed_copy(tmp_path)).instances)}
    assert {uid: p.action for uid, p in plan.items()} == {
        "energy-noisy-t1": "changed", "energy-gap-t1": "changed", "energy-conflict-t1": "unchanged",
        "legal-noisy-t1": "unchanged", "legal-noisy-t2": "new"}
    assert plan["energy-noisy-t1"].changes == ("query changed",)
    assert plan["energy-gap-t1"].changes == ("constraint c4 removed",)
    assert plan["energy-noisy-t1"].current_version == 1


@pytest.mark.parametrize(
    ("choice", "outcome", "versions"),
    [
        pytest.param(None, "refused", {("energy-noisy-t1", 1): True}, id="no-choice-imports-nothing"),
        pytest.param("skip", "2 left out", {("energy-noisy-t1", 1): True, ("legal-noisy-t2", 1): True}, id="skip"),
        pytest.param("rename", "2 renamed", {("energy-noisy-t1", 1): True, ("build-7/energy-noisy-t1", 1): True},
                     id="rename-keeps-existing"),
        pytest.param("supersede", "2 superseded", {("energy-noisy-t1", 1): False, ("energy-noisy-t1", 2): True},
                     id="supersede-is-explicit"),
    ],
)
def test_changed_instances_need_an_explicit_choice(engine, tmp_path, choice, outcome, versions):
    assert import_file(engine, MINI).ok
    report = import_set_file(engine, _changed_copy(tmp_path), "build 7", on_changed=choice, origin="build")
    latest = _latest(engine)
    assert {k: latest.get(k) for k in versions} == versions
    sets = benchmark_sets(engine)
    if choice is None:
        assert not report.ok and "choose rename, supersede, skip" in str(report.errors[0]) and sets == []
        return
    assert report.ok, report.errors
    (made,) = sets
    assert (made.name, made.origin) == ("build 7", "build")
    members = {len(report.unchanged), len(report.created), len(report.renamed), len(report.superseded)}
    assert made.instances == len(report.unchanged) + len(report.created) + len(report.renamed) + len(report.superseded)
    assert members and report.created == ["legal-noisy-t2"] and len(report.unchanged) == 2
    count, what = outcome.split(" ", 1)
    got = {"left out": report.skipped, "renamed": report.renamed, "superseded": report.superseded}[what]
    assert len(got) == int(count)


def test_a_set_name_is_used_once(engine):
    assert import_set_file(engine, MINI, "sample").ok
    again = import_set_file(engine, MINI, "sample")
    assert not again.ok and "already exists" in str(again.errors[0])


def test_results_narrow_to_a_set_and_to_accepted_instances(engine, tmp_path):
    assert import_set_file(engine, MINI, "first").ok
    assert import_set_file(engine, _changed_copy(tmp_path), "second", on_changed="rename").ok
    first, second = sorted(benchmark_sets(engine), key=lambda s: s.name)
    with Session(engine) as s:
        model, run = Model(name="m", provider="baseline"), Run(name="r", status="done")
        s.add_all([model, run])
        s.flush()
        instances = s.exec(select(Instance)).all()
        for inst in instances:
            s.add(Response(run_id=run.id, model_id=model.id, instance_id=inst.id, status="done", text="x"))
        accepted = next(i for i in instances if i.uid == "energy-conflict-t1")
        accepted.status = "accepted"
        s.add(accepted)
        s.commit()
        by_instance = {r.instance_id: r.id for r in s.exec(select(Response)).all()}
        run_id, accepted_id = run.id, accepted.id
    assert scoped_response_ids(engine, [run_id]) == set(by_instance.values())
    assert scoped_response_ids(engine, [run_id], first.id) == {by_instance[i] for i in set_instance_ids(engine, first.id)}
    assert len(scoped_response_ids(engine, [run_id], second.id)) == 5  # 2 shared, 2 under its own ids, 1 new
    assert scoped_response_ids(engine, [run_id], second.id, accepted_only=True) == {by_instance[accepted_id]}
