"""AppTest: the Build benchmark page builds a small benchmark, previews it and imports it."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import Session, col, select
from streamlit.testing.v1 import AppTest

from core.services.protocol_builds import build_tabs
from core.store.models import Instance
from tests.workspace_factories import principal, seeded_db

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "build_benchmark.py")


@pytest.fixture
def seeded(tmp_path, monkeypatch):
    s = seeded_db(tmp_path)
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", s.url)
    monkeypatch.setenv("GAUNTLET_BUILD_DIR", str(tmp_path / "built"))
    return s


def page_as(who: str, tab: str | None = "enterprise_rag") -> AppTest:
    """The page as `who`, on `tab`'s build tab (only the chosen tab's form is drawn); None: the page's first tab."""
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["gauntlet_principal"] = principal(who)
    if tab is not None:
        at.session_state["build_tab"] = build_tabs()[tab]
    return at.run()


@pytest.mark.parametrize("who, allowed", [("admin", True), ("alice", False), ("ana", False)])
def test_page_guard(seeded, who, allowed):
    at = page_as(who)
    assert not at.exception, at.exception
    assert ([t.value for t in at.title] == ["Build benchmark"]) is allowed


def test_build_preview_and_import(seeded):
    at = page_as("admin")
    at.multiselect(key="build_domains").set_value(["legal"])
    at.number_input(key="build_per_domain").set_value(4)
    at.toggle(key="build_dense").set_value(False)
    at.button[0].click().run()
    assert not at.exception, at.exception
    assert at.success and at.success[0].value.startswith("Built ")
    preview = at.dataframe[-1].value  # after the mode, origin and domain summaries
    assert len(preview) > 0 and set(preview["mode"]) <= {"noisy", "gap", "conflict"}
    assert set(preview["domain"]) == {"Legal"}
    assert set(preview["generated"]) == {""}  # the team's real questions, no LLM step: no instance is marked
    at.button(key="build_import").click().run()
    assert not at.exception, at.exception
    assert any(s.value.startswith("Imported:") for s in at.success), [e.value for e in at.error]
    with Session(seeded.engine) as session:
        uids = set(session.exec(select(Instance.uid)).all())
    assert set(preview["id"]) <= uids


@pytest.mark.parametrize(("name", "decisions", "expected"), [
    ("none verified", [], ("0", "0", "not verified yet", "—")),
    ("3 of 4 sound", ["accept", "accept", "reject", "accept"], ("4", "3", "75%", "30%–95%")),
    ("needs edit is unsound", ["accept", "needs_edit"], ("2", "1", "50%", "9%–91%")),
])
def test_build_page_shows_the_expert_sound_rate(seeded, name, decisions, expected):
    from core.construction.soundness import wilson
    from core.store.db import make_engine
    from core.store.models import Annotation, BenchmarkSet, BenchmarkSetMember

    engine = make_engine(seeded.url)
    with Session(engine) as session:
        instances = session.exec(select(Instance).order_by(Instance.id)).all()[:6]
        for inst, decision in zip(instances, decisions, strict=False):
            session.add(Annotation(kind="verification", target_type="instance", target_id=inst.id, author="ana",
                                   payload={"instance_uid": inst.uid, "decision": decision}))
        built = BenchmarkSet(name="built set", origin="build")
        session.add(built)
        session.flush()
        session.add_all([BenchmarkSetMember(set_id=built.id, instance_id=inst.id) for inst in instances])
        session.commit()
    at = page_as("admin")
    assert not at.exception, at.exception
    frame = next(d.value for d in at.dataframe if "Sound rate" in d.value.columns)
    row = frame[frame["Set"] == "built set"].iloc[0]
    assert (str(row["Verified"]), str(row["Sound"]), row["Sound rate"], row["95% CI (Wilson)"]) == expected, name
    low, high = wilson(3, 4)
    assert (round(low, 2), round(high, 2)) == (0.30, 0.95)  # Wilson 95% of 3/4: 0.301-0.954


def test_llm_build_shows_its_estimate_before_the_confirmed_build(seeded):
    """Issue 43: with a generator model chosen, the build's LLM cost is estimated and shown first; the build starts
    only when the admin confirms it (the generator and judge scripted on the loopback fake server)."""
    import json

    from core.testing.fake_server import ScriptRule
    from tests.factories import scripted_models

    judge = [ScriptRule(match="knowledge-gap item", reply=json.dumps({"answers": False, "documents": [],
                                                                       "reason": "scripted"})),
             ScriptRule(match="", reply=json.dumps({"contradicts": True, "same_type": True, "reason": "scripted"}))]
    with scripted_models(seeded.engine, {"writer": judge}, max_output_tokens=256):
        at = page_as("admin")
        at.multiselect(key="build_domains").set_value(["legal"])
        at.number_input(key="build_per_domain").set_value(4)
        at.toggle(key="build_dense").set_value(False)
        at.selectbox(key="build_generator").set_value("writer")
        at.button[0].click().run()
        assert not at.exception, at.exception
        assert not at.success  # nothing built yet
        assert [i.value for i in at.info if i.value.startswith("Estimate before the build: at most ")]
        confirm = at.button(key="build_confirm")
        assert confirm.label.startswith("Confirm: build for at most $")
        confirm.click().run()
        assert not at.exception, at.exception
    assert at.success and at.success[0].value.startswith("Built ")
    assert any(c.value.startswith("Conflicts and gaps checked:") for c in at.caption)
    from core.store.models import Run

    with Session(seeded.engine) as session:  # the build's LLM spend, recorded where a run's is
        row = session.exec(select(Run).where(col(Run.name).startswith("build: enterprise_rag"))).one()
    assert row.config["kind"] == "build" and row.status == "done" and row.spent_usd > 0
