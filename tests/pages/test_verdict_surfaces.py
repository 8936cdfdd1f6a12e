"""The per-aspect verdicts by the rule relative to the suite's annotators, shown wherever a judge's numbers are: the
Leaderboard and Pick a generator (a table under the fitness banner), Judge alignment (the certification table) and
the decision report (a table with the baselines as rows); one computation (judge_check.certificate_rows)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bench.make_synthetic_results import make_results
from core.analysis import certify as cert
from core.analysis.judge_check import certificate_rows, fitness_of, suite_checks_of, verdict_rows
from core.services.judge_checks import save_check
from core.store.db import make_engine
from tests.fitness_cases import certificate, store_heuristic_fitness
from tests.pages.test_dashboards import page_as


def _missing_pass(kappa: float) -> dict:
    """A hard-set certificate stored while its second labelling pass was missing."""
    return {**certificate(kappa, 130), "aspect": "faithfulness", "verdict": cert.UNDETERMINED,
            "pair_row": "annotator vs annotator", "note": "second labelling pass missing (labels_pass2.jsonl)"}


def _store(engine) -> None:
    store_heuristic_fitness(engine, 0.82)  # ragchecker-meta style check: overall fit to decide
    save_check(engine, "suite", "heuristic", "heuristic", "0123456789ab", "hard_set", 216,
               {"certification": [_missing_pass(0.5)]})


@pytest.fixture(scope="module")
def db_url(session_url_factory):
    url = session_url_factory()
    make_results(url, n_models=3, n_instances=40, seed=2)
    return url


def test_verdicts_over_suites_and_the_weakest_label(db_url) -> None:
    engine = make_engine(db_url)
    _store(engine)
    checks = suite_checks_of(engine, "heuristic")
    rows = verdict_rows(engine, "heuristic")
    assert {(r["suite"], r["aspect"], r["verdict"]) for r in rows} == {
        (checks[-1].suite, "overall", cert.DECIDE), ("hard_set", "faithfulness", cert.UNDETERMINED)}
    missing = next(r for r in rows if r["suite"] == "hard_set")
    assert missing["pair_kappa"] is None and "second labelling pass missing" in missing["note"]
    fitness = fitness_of(engine, "heuristic")
    assert fitness.label == cert.UNDETERMINED  # the weakest suite decides the label; both suites are named
    assert "suite hard_set" in fitness.reason and f"suite {checks[-1].suite}" in fitness.reason
    raters = [(r["suite"], r["rater"], r["kappa"]) for r in certificate_rows(checks)]
    assert ("hard_set", "annotator vs annotator", None) in raters
    assert sum(r == "baseline: word overlap" for _, r, _ in raters) == 2


@pytest.mark.parametrize("page", ["leaderboard", "pick_generator"])
def test_the_page_shows_the_verdict_table(db_url, monkeypatch, page) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", db_url)
    _store(make_engine(db_url))
    at = page_as(page, "analyst").run()
    assert not at.exception, at.exception
    assert any(e.label.startswith("Per-aspect verdicts of heuristic") for e in at.expander)
    table = next(d.value for d in at.dataframe if "Annotators κ" in d.value.columns)
    shown = {(r["Suite"], r["Aspect"], r["Verdict"]) for r in table.to_dict("records")}
    assert ("hard_set", "faithfulness", cert.UNDETERMINED) in shown
    assert any(v == cert.DECIDE for _, _, v in shown)
    assert table.loc[table["Suite"] == "hard_set", "Annotators κ"].iloc[0].startswith("second labelling pass missing")


def test_judge_alignment_names_the_annotator_row_and_its_state(db_url) -> None:
    from ui.alignment_view import certification_table

    engine = make_engine(db_url)
    _store(engine)
    table = certification_table(suite_checks_of(engine, "heuristic"))
    hard = table[table["Suite"] == "hard_set"]
    assert list(hard["Rater"]) == ["judge", "annotator vs annotator", "baseline: word overlap"]
    assert hard.iloc[1]["κ 95% CI"].startswith("second labelling pass missing")
    assert set(table["Verdict"]) == {cert.DECIDE, cert.UNDETERMINED}


def test_the_decision_report_shows_verdicts_with_baselines_as_rows(db_url) -> None:
    from core.analysis.decision_report import _certificates

    engine = make_engine(db_url)
    _store(engine)
    from core.analysis.judge_check import certificates_of

    html = _certificates(SimpleNamespace(certificates=certificates_of(engine, ["heuristic"])))
    assert "Judges certified per aspect" in html
    assert html.count("<td>baseline: word overlap</td>") == 2 and "<td>annotator vs annotator</td>" in html
    assert "<strong>fit to decide</strong>" in html and "<strong>undetermined</strong>" in html
    assert "second labelling pass missing" in html
    empty = _certificates(SimpleNamespace(certificates=[]))
    assert "has been checked" in empty
