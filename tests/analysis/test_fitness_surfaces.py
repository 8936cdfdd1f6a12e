"""The judge fitness statement where a command or a report names a judge: the decision report (HTML, and so its PDF),
the picker's Markdown and HTML summaries, `gauntlet decide` and `gauntlet report`; one computation
(core.analysis.fitness.notice over judge_check.fitness_of) behind all of them."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from core.analysis import decision, decision_report, picker, readmodel
from core.analysis.fitness import Fitness, judge_fitness, notice, unmeasured
from core.store.db import make_engine
from tests.analysis.decision_factories import decision_db
from tests.fitness_cases import FITNESS_CASES, UNMEASURED, store_heuristic_fitness

SPEC = picker.PickSpec(floors={"rejection": 0.2, "strict_ias": 0.05})
CASES = [pytest.param(kappa, statement, level, id=case) for case, kappa, statement, level in FITNESS_CASES]


@pytest.fixture(scope="module")
def db(session_url_factory):
    url = decision_db(session_url_factory(), n_instances=60, share=0.5)
    return url, make_engine(url)


def _fitness(kappa: float | None) -> Fitness:
    return unmeasured("heuristic") if kappa is None else judge_fitness(kappa, 500)


NOTICE_CASES = [
    ("fit-to-decide-no-warning", Fitness("fit to decide", "kappa 0.82"), "ok", None),
    ("explore-warns", Fitness("fit to explore", "kappa 0.55"), "warning", "Fit to explore only: these numbers come"),
    ("not-fit-is-an-error", Fitness("not fit", "kappa 0.23"), "error", "Not fit to decide: these numbers come"),
    ("too-few-labels-warns", Fitness("undetermined", "needs kappa on at least 30 human labels (have 4)"), "warning",
     "Judge heuristic (lexical, offline): needs kappa on at least 30"),
    ("never-checked-says-how", unmeasured("heuristic"), "warning", f"Judge heuristic (lexical, offline): {UNMEASURED}"),
]


@pytest.mark.parametrize(("fitness", "level", "warning"), [c[1:] for c in NOTICE_CASES],
                         ids=[c[0] for c in NOTICE_CASES])
def test_notice_warns_unless_fit_to_decide(fitness, level, warning) -> None:
    shown = notice("heuristic", fitness)
    assert shown.level == level
    assert shown.statement == f"Judge fitness, heuristic (lexical, offline): {fitness.label.upper()} ({fitness.reason})"
    assert (shown.warning is None) if warning is None else shown.warning.startswith(warning)


@pytest.mark.parametrize(("kappa", "statement", "level"), CASES)
def test_decision_report_states_fitness_and_warns(db, kappa, statement, level) -> None:
    _, engine = db
    store_heuristic_fitness(engine, kappa)
    document = decision_report.render_html(decision.decide(engine, [1], "heuristic", SPEC))
    head = document[:document.index("<section>")]
    assert f"Judge fitness, heuristic (lexical, offline): {statement}" in head
    assert ("<p class='flag red'>" in head) is (level != "ok")
    if kappa is None:
        assert UNMEASURED in head


@pytest.mark.parametrize(("kappa", "statement", "level"), CASES)
def test_picker_summaries_state_fitness_and_warn(db, kappa, statement, level) -> None:
    _, engine = db
    result = picker.rank(readmodel.load_scores(engine, [1], "heuristic"), readmodel.model_catalog(engine), SPEC)
    shown = notice("heuristic", _fitness(kappa))
    markdown = picker.summary_markdown(result, "heuristic", "#1", shown)
    page = picker.summary_html(result, "heuristic", "#1", shown)
    for text in (markdown, page):
        assert f"Judge fitness, heuristic (lexical, offline): {statement}" in text
        assert ("Warning: " in text) is (level != "ok")


@pytest.mark.parametrize(("kappa", "statement", "level"), CASES)
def test_report_and_decide_commands_state_fitness(db, tmp_path, monkeypatch, kappa, statement, level) -> None:
    from core.cli import app

    url, engine = db
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", url)
    store_heuristic_fitness(engine, kappa)
    runner = CliRunner()
    report = runner.invoke(app, ["report", "1"])
    decide = runner.invoke(app, ["decide", "1", "--out", str(tmp_path / "d.html")])
    for result in (report, decide):
        assert result.exit_code == 0, result.output
        assert f"Judge fitness, heuristic (lexical, offline): {statement}" in result.output
        assert ("WARNING: " in result.output) is (level != "ok")
    if kappa is None:
        assert UNMEASURED in report.output


def test_report_json_carries_the_fitness(db, monkeypatch) -> None:
    import json

    from core.cli import app

    url, engine = db
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", url)
    store_heuristic_fitness(engine, 0.23)
    result = CliRunner().invoke(app, ["report", "1", "--format", "json"])
    assert result.exit_code == 0, result.output
    fitness = json.loads(result.output)["fitness"]
    assert fitness["fitness"] == "not fit" and fitness["warning"].startswith("Not fit to decide")
