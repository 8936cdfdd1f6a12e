"""A run's spend: generation and judging apart and together, from one computation (core.generation.run_progress),
shown by the Run evaluation page's watch panel."""

from __future__ import annotations

import json

import pytest
from sqlmodel import Session
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from core.cli import app
from core.generation.run_progress import RunSpend, run_spend, spend_text
from core.store.models import Run, Verdict
from tests.pages import test_workspace_flows as flows

seeded = flows.seeded  # the seeded workspace database (fixture)


def _pay(seeded, generation: float, judge_costs: list[tuple[str, float]]) -> None:
    """Set the seeded run's paid generation and store one verdict per (judge, cost) on its first response."""
    rid = seeded.responses[("model-a", "E-noisy")]
    with Session(seeded.engine) as session:
        run = session.get_one(Run, seeded.run_id)
        run.spent_usd = generation
        session.add(run)
        for judge, cost in judge_costs:
            session.add(Verdict(response_id=rid, run_id=seeded.run_id, judge=judge, metric="rejection", passed=True,
                                value=1.0, calls=1, cost_usd=cost))
        session.commit()


@pytest.mark.parametrize(("generation", "judge_costs", "expected"), [
    pytest.param(0.0, [], RunSpend(0.0, 0.0), id="nothing-spent"),
    pytest.param(0.25, [], RunSpend(0.25, 0.0), id="generation-only"),
    pytest.param(0.25, [("llm:judge", 0.125), ("llm:judge", 0.0625)], RunSpend(0.25, 0.1875), id="one-judge-two-calls"),
    pytest.param(0.5, [("llm:a", 0.125), ("llm:b", 0.25), ("rule", 0.0)], RunSpend(0.5, 0.375), id="every-judge"),
])
def test_run_spend_counts_generation_and_judging(seeded, generation, judge_costs, expected):
    _pay(seeded, generation, judge_costs)
    spend = run_spend(seeded.engine, seeded.run_id)
    assert spend == expected
    assert spend.total_usd == pytest.approx(expected.generation_usd + expected.judging_usd, abs=1e-12)


def test_a_judged_run_of_another_run_is_not_counted(seeded):
    _pay(seeded, 0.25, [("llm:judge", 0.125)])
    with Session(seeded.engine) as session:
        other = Run(name="other", status="done")
        session.add(other)
        session.commit()
        other_id = int(other.id or 0)
    assert run_spend(seeded.engine, other_id) == RunSpend(0.0, 0.0)


def watch(run_id: int) -> None:
    """AppTest script: the Run evaluation page's watch panel for one run, as the admin."""
    from tests.workspace_factories import principal
    from ui.run_admin import watch_panel

    watch_panel(principal("admin"), run_id)


@pytest.mark.parametrize(("generation", "judge_costs", "shown"), [
    pytest.param(0.25, [], {"Generation spent": "$0.2500", "Judging spent": "$0.0000", "Spent (total)": "$0.2500"},
                 id="unjudged-run"),
    pytest.param(0.25, [("llm:judge", 0.125), ("llm:other", 0.5)],
                 {"Generation spent": "$0.2500", "Judging spent": "$0.6250", "Spent (total)": "$0.8750"},
                 id="judged-run-counts-the-judges"),
])
def test_watch_panel_shows_generation_judging_and_total(seeded, generation, judge_costs, shown):
    _pay(seeded, generation, judge_costs)
    at = AppTest.from_function(watch, args=(seeded.run_id,), default_timeout=30).run()
    assert not at.exception, at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert {k: metrics.get(k) for k in shown} == shown


@pytest.mark.parametrize(("spend", "text"), [
    pytest.param(RunSpend(0.25, 0.125), "$0.3750 (generation $0.2500, judging $0.1250)", id="both"),
    pytest.param(RunSpend(0.0, 0.0), "$0.0000 (generation $0.0000, judging $0.0000)", id="none"),
])
def test_spend_text(spend, text):
    assert spend_text(spend) == text


@pytest.mark.parametrize(("fmt", "shown"), [
    pytest.param("table", "spent $0.3750 (generation $0.2500, judging $0.1250)", id="table-line"),
    pytest.param("json", {"generation_usd": 0.25, "judging_usd": 0.125, "total_usd": 0.375}, id="json-field"),
])
def test_gauntlet_report_shows_the_runs_spend(seeded, fmt, shown):
    _pay(seeded, 0.25, [("llm:judge", 0.125)])
    result = CliRunner().invoke(app, ["report", str(seeded.run_id), "--judge", "llm:judge", "--format", fmt])
    assert result.exit_code == 0, result.output
    if fmt == "json":
        assert json.loads(result.output)["spend"] == shown
    else:
        assert shown in result.output
