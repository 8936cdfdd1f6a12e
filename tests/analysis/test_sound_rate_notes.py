"""Issue 43.4: the build's expert sound rate, with its Wilson interval, n and "small n" when few items were verified,
in the notes of `gauntlet report` and of the signed decision report: the same computation as the Build benchmark
page's expander (core.construction.soundness.built_sound_rates); the reports also count the LLM-generated
instances the runs answered."""

from __future__ import annotations

import json

import pytest
from sqlmodel import Session, col, select
from typer.testing import CliRunner

from core.analysis import decision, decision_report, picker
from core.cli import app
from core.construction.soundness import benchmark_notes, built_sound_rates, wilson
from core.store.db import make_engine
from core.store.models import Annotation, BenchmarkSet, BenchmarkSetMember, Instance
from tests.analysis.decision_factories import decision_db
from tests.generated_items import drafted_query_meta

SPEC = picker.PickSpec(floors={"rejection": 0.2})
VERIFIED = ["accept"] * 9 + ["reject", "needs_edit", "reject"]  # 9 of 12 sound


@pytest.fixture(scope="module")
def db(session_url_factory):
    """A scored run whose first 12 instances form a built set the experts verified (9 sound), two of them on a
    drafted query; a second built set outside the run."""
    url = decision_db(session_url_factory(), n_instances=40)
    engine = make_engine(url)
    with Session(engine) as session:
        instances = session.exec(select(Instance).order_by(col(Instance.id))).all()
        built, other = BenchmarkSet(name="team build", origin="build"), BenchmarkSet(name="unused build", origin="build")
        session.add_all([built, other])
        session.flush()
        for inst, decision_ in zip(instances, VERIFIED, strict=False):
            session.add(BenchmarkSetMember(set_id=built.id, instance_id=inst.id))
            session.add(Annotation(kind="verification", target_type="instance", target_id=inst.id, author="ana",
                                   payload={"instance_uid": inst.uid, "decision": decision_}))
        for inst in instances[:2]:
            inst.meta = {**inst.meta, **drafted_query_meta("drafter-m")}
            session.add(inst)
        orphan = Instance(id=max(i.id for i in instances) + 1, uid="not-in-run",  # ids were written explicitly
                          domain_id=instances[0].domain_id, query="q", meta={})
        session.add(orphan)
        session.flush()
        session.add(BenchmarkSetMember(set_id=other.id, instance_id=orphan.id))
        session.commit()
    return url, engine


def test_the_notes_are_the_build_pages_computation(db) -> None:
    _, engine = db
    notes = benchmark_notes(engine, [1])
    page = {r.set_name: r for r in built_sound_rates(engine)}
    assert [r.set_name for r in notes.sound_rates] == ["team build"]  # the set outside the run is left out
    assert notes.sound_rates[0] == page["team build"]
    assert (page["team build"].sound, page["team build"].verified) == (9, 12)
    assert (page["team build"].low, page["team build"].high) == wilson(9, 12)


def test_the_decision_report_names_rate_n_interval_and_small_n(db) -> None:
    _, engine = db
    document = decision_report.render_html(decision.decide(engine, [1], "heuristic", SPEC))
    shown = decision_report.numbers(document)
    low, high = wilson(9, 12)
    assert {k: v for k, v in shown.items() if k.startswith("sound_rate|")} == {
        "sound_rate|team build|rate": 0.75, "sound_rate|team build|sound": 9, "sound_rate|team build|n": 12,
        "sound_rate|team build|instances": 12, "sound_rate|team build|ci_low": low,
        "sound_rate|team build|ci_high": high}
    assert "small n (&lt; 30): the interval is wide" in document
    assert shown["generated|total"] == 2 and shown["generated|instances"] == 40
    assert "LLM-generated (drafter-m)" in document


@pytest.mark.parametrize(("fmt", "expected"), [
    pytest.param("table", "note: Built set team build: expert sound rate 75% (9 of 12 verified sound; n = 12 of 12 "
                          "instances), Wilson 95% CI 47%–91%; small n (< 30): the interval is wide.", id="table"),
    pytest.param("json", "2 of 40 instances answered are marked LLM-generated or LLM-edited (enterprise_rag: 2 "
                         "LLM-generated (drafter-m)).", id="json"),
])
def test_gauntlet_report_carries_the_notes(db, monkeypatch, fmt, expected) -> None:
    url, _ = db
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", url)
    result = CliRunner().invoke(app, ["report", "1", "--judge", "heuristic", "--format", fmt])
    assert result.exit_code == 0, result.output
    if fmt == "json":
        assert expected in json.loads(result.stdout)["data_notes"]
    else:
        assert expected in result.stdout
