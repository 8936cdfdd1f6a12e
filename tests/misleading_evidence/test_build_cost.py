"""Issue 43: the misleading-evidence build's LLM cost is estimated before it starts (printed, or alone with
--estimate) and its calls are spent under --budget through the cached client (models scripted on loopback)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from core.cli import app
from core.testing.fake_server import ScriptRule
from tests.factories import scripted_models
from tests.misleading_evidence.conftest import DATA, SLICES


def test_estimate_first_then_a_budget_that_stops_the_build(tmp_path, engine):
    fmt, relative = SLICES["hotpotqa"]
    out = tmp_path / "stress.jsonl"
    args = ["misleading-evidence", "build", str(DATA / relative), "--format", fmt, "--out", str(out), "--limit", "20",
            "--llm", "writer", "--generate", "--judge", "checker"]
    with scripted_models(engine, {"writer": [ScriptRule(match="", reply="{}")],
                                  "checker": [ScriptRule(match="", reply="{}")]}, max_output_tokens=512):
        estimated = CliRunner().invoke(app, [*args, "--estimate"])
        stopped = CliRunner().invoke(app, [*args, "--budget", "0.0001"])
    assert estimated.exit_code == 0, estimated.output
    assert "estimate before the build: at most" in estimated.output and not out.exists()
    estimate = json.loads(estimated.stdout[estimated.stdout.index("{"):])
    assert set(estimate["per_role"]) == {"generator", "judge"} and estimate["max_cost_usd"] > 0
    assert estimate["per_role"]["generator"]["calls"] == 2 * 20  # every open-QA item, two written edits at most
    assert stopped.exit_code == 4 and "build stopped: the build's budget $0.0001 is spent" in stopped.output
    from sqlmodel import Session, select

    from core.store.models import Run

    with Session(engine) as session:  # the spend row, budgeted in the database as a run's is
        (row,) = session.exec(select(Run)).all()  # --estimate alone records nothing
    assert (row.name, row.status, row.budget_usd) == ("build: misleading_evidence stress.jsonl", "budget_stopped", 0.0001)
    assert row.spent_usd <= 0.0001 and row.reserved_usd == 0.0 and row.finished_at is not None


def _form_button(at, form: str):
    return next(b for b in at.button if b.proto.form_id == form)


def test_browser_build_shows_the_estimate_and_builds_only_when_confirmed(tmp_path, monkeypatch):
    """The Build benchmark page's misleading-evidence tab with a generator model: the upper-bound cost (the same
    cost.py computation `--estimate` prints) is shown first, nothing is built until the admin confirms, and the
    confirmed build's calls are spent on a recorded build run row (writer and checker scripted on loopback)."""
    from sqlmodel import Session, select
    from streamlit.testing.v1 import AppTest

    from core.config import REPO_ROOT
    from core.generation.models_admin import model_config, run_choices
    from core.generation.runs import BUILD_KIND
    from core.protocols.misleading_evidence.builder_app import estimate
    from core.services.protocol_builds import build_tabs
    from core.store.models import Run
    from tests.misleading_evidence.conftest import source_specs
    from tests.misleading_evidence.test_generative import scripts
    from tests.workspace_factories import principal, seeded_db

    seeded = seeded_db(tmp_path)
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", seeded.url)
    monkeypatch.setenv("GAUNTLET_BUILD_DIR", str(tmp_path / "built"))
    fmt, relative = SLICES["hotpotqa"]
    script, _ = scripts(source_specs("hotpotqa")[:12])
    with scripted_models(seeded.engine, script, max_output_tokens=512):
        at = AppTest.from_file(str(REPO_ROOT / "pages" / "build_benchmark.py"), default_timeout=120)
        at.session_state["gauntlet_principal"] = principal("admin")
        at.session_state["build_tab"] = build_tabs()["misleading_evidence"]
        at.run()
        at.text_input(key="build_misleading_evidence_source").set_value(str(DATA / relative))
        at.number_input(key="build_misleading_evidence_limit").set_value(12)
        at.selectbox(key="build_misleading_evidence_generator").set_value("writer")
        at.selectbox(key="build_misleading_evidence_judge").set_value("checker")
        _form_button(at, "build_misleading_evidence").click().run()
        assert not at.exception, at.exception
        assert not at.success  # nothing built before the confirm
        expected = estimate(DATA / relative, fmt=fmt, limit=12, generator=model_config(seeded.engine, "writer"),
                            judge=model_config(seeded.engine, "checker"))
        assert expected.per_role["generator"]["calls"] == 2 * 12 and expected.max_cost_usd > 0
        summary = expected.summary()
        assert summary[:1].upper() + summary[1:] + "." in [i.value for i in at.info]  # 'LLM' kept in capitals
        confirm = at.button(key="build_misleading_evidence_confirm")
        assert confirm.label == f"Confirm: build for at most ${expected.max_cost_usd:.4f}"
        confirm.click().run()
        assert not at.exception, at.exception
    assert at.success and at.success[0].value.startswith("Built ")
    summary = at.code[0].value
    assert "written by the generator: " in summary and "check states_wrong: " in summary
    with Session(seeded.engine) as session:
        build = session.exec(select(Run).where(Run.name.startswith("build: misleading_evidence"))).one()
    assert build.config["kind"] == BUILD_KIND and build.status == "done" and build.spent_usd > 0
    assert build.reserved_usd == 0.0 and f"recorded as run {build.id}" in summary
    assert "build_misleading_evidence_pending" not in at.session_state  # the confirm is used up
    listed = dict(run_choices(seeded.engine))  # listed with the runs, its spend beside theirs
    assert listed[build.id].startswith(f"run {build.id} · build: misleading_evidence ") and listed[build.id].endswith(" · build done")
