"""The Pick a generator page's decision report button gives the same file as `gauntlet decide` for the same inputs
(runs, judge, weights, floors, budget, question), and the page shows rank-sets and segment differences from gold."""

from __future__ import annotations

import pytest
from streamlit.runtime.memory_media_file_storage import _calculate_file_id
from typer.testing import CliRunner

from core.cli import app as cli
from tests.analysis.decision_factories import decision_db
from tests.pages.test_dashboards import page_as

# One xdist worker runs this module: its module-scoped database is built once per pass, not once per worker
pytestmark = pytest.mark.xdist_group("decision-button")

QUESTION = "Which model answers our support questions?"


@pytest.fixture(scope="module")
def db_url(session_url_factory):
    return decision_db(session_url_factory(), share=0.85)


def _cli_file(tmp_path, args: list[str]) -> bytes:
    out = tmp_path / "cli.html"
    result = CliRunner().invoke(cli, ["decide", "1", "--out", str(out), "--question", QUESTION, *args])
    assert result.exit_code == 0, result.output
    return out.read_bytes()


@pytest.mark.parametrize(("floor", "args"), [
    pytest.param(None, [], id="page-defaults"),
    pytest.param(10, ["--floor", "rejection=0.1", "--floor", "strict_ias=0.2"], id="rejection-floor-10"),
])
def test_the_button_gives_the_cli_file(db_url, monkeypatch, tmp_path, floor, args) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", db_url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    at = page_as("pick_generator", "analyst").run()
    assert not at.exception, at.exception
    if floor is not None:
        at.slider(key="pk_floor_rejection").set_value(floor)
    at.text_input(key="pk_question").set_value(QUESTION)
    at.button(key="pk_decide").click().run()
    assert not at.exception, at.exception
    buttons = {b.proto.label: b.proto.url for b in at.get("download_button")}
    url = buttons["Download decision report (HTML)"]
    expected = _calculate_file_id(_cli_file(tmp_path, args), "text/html", "decision_report.html")
    assert url.rsplit("/", 1)[-1].split(".")[0] == expected


def test_the_page_shows_rank_sets_and_segment_differences_with_gold(db_url, monkeypatch) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", db_url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    at = page_as("pick_generator", "analyst").run()
    assert not at.exception, at.exception
    subheaders = [h.value for h in at.subheader]
    assert "Which candidates could be first (judge-corrected rank-sets)" in subheaders
    assert any(h.startswith("Segment differences:") for h in subheaders)
    frames = [d.value for d in at.dataframe]
    assert any({"rank_low", "rank_high", "could_be_first"} <= set(f.columns) for f in frames)
    assert any({"p_value", "p_holm"} <= set(f.columns) for f in frames)


@pytest.mark.parametrize(("installed", "pdf_button"), [
    pytest.param(True, True, id="weasyprint-installed"),
    pytest.param(False, False, id="without-the-pdf-extra"),
])
def test_the_pdf_download_needs_the_pdf_extra(db_url, monkeypatch, installed, pdf_button) -> None:
    from core.analysis import decision_report

    monkeypatch.setenv("GAUNTLET_DATABASE_URL", db_url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    monkeypatch.setattr(decision_report, "pdf_available", lambda: installed)
    at = page_as("pick_generator", "analyst").run()
    at.button(key="pk_decide").click().run()
    assert not at.exception, at.exception
    labels = {b.proto.label for b in at.get("download_button")}
    assert ("Download decision report (PDF)" in labels) is pdf_button
    assert any("PDF needs the `pdf` extra" in c.value for c in at.caption) is not pdf_button
