"""The paper-table model and its renderers (core.protocols.paper): shape checks, cells with interval and n, and
Markdown / CSV / LaTeX that keep every number."""

from __future__ import annotations

import csv
import dataclasses
import io

import pytest

from core.protocols.paper import PaperCell, PaperTable, PaperTableSpec, build_table, render, table_spec

TABLE = PaperTable(
    protocol="toy", key="2", title="Accuracy by condition (%)",
    columns=("Model", "clean", "noisy"),
    rows=(("model-a", (PaperCell(0.8, 0.7, 0.9, n=40), PaperCell(0.5, 0.35, 0.65, n=40))),
          ("model_b & co", (PaperCell(None, n=0, state="no scored responses"), "n/a"))),
    notes=("Judge: rule checks; n < 30 in one cell.",))


@pytest.mark.parametrize(("fmt", "expected"), [
    pytest.param("markdown", ["| Model | clean | noisy |", "| model-a | 80.0 [70.0, 90.0] (n = 40) |",
                              "— (no scored responses; n = 0)", "- Judge: rule checks"], id="markdown"),
    pytest.param("latex", [r"Model & clean & noisy \\", r"80.0 {\scriptsize [70.0, 90.0]}", r"model\_b \& co",
                           r"\caption{Accuracy by condition (\%). Judge"], id="latex"),
    pytest.param("csv", ["2,model-a,clean,80.0,70.0,90.0,40,scored", "2,model_b & co,clean,,,,0,no scored responses",
                         "2,model_b & co,noisy,n/a,,,,label"], id="csv"),
])
def test_renderers_keep_every_value_interval_and_n(fmt, expected):
    text = render(TABLE, fmt)
    for piece in expected:
        assert piece in text


def test_csv_has_one_line_per_cell():
    rows = list(csv.DictReader(io.StringIO(render(TABLE, "csv"))))
    assert len(rows) == 4 and {r["column"] for r in rows} == {"clean", "noisy"}


@pytest.mark.parametrize(("make", "message"), [
    pytest.param(lambda: PaperCell(0.9, 0.1, 0.5, n=3), "does not hold its value", id="value-outside-interval"),
    pytest.param(lambda: PaperTable("toy", "1", "t", ("M", "a", "b"), (("m", (PaperCell(0.1),)),)), "1 cells for 2",
                 id="row-too-short"),
    pytest.param(lambda: render(TABLE, "html"), "unknown format 'html'", id="unknown-format"),
    pytest.param(lambda: TABLE.cell("model-a", "nosy"), "did you mean: noisy", id="unknown-column"),
    pytest.param(lambda: table_spec([PaperTableSpec("2", "t", lambda *a: TABLE)], "3", "toy"), "known: 2",
                 id="unknown-table"),
    pytest.param(lambda: table_spec([], None, "toy"), "declares no paper table", id="no-tables"),
    pytest.param(lambda: PaperTableSpec("2", "t", lambda *a: TABLE, {"unit": ("word", "char")}).resolve_settings(
        {"unit": "byte"}), "not one of word, char", id="bad-setting-value"),
    pytest.param(lambda: PaperTableSpec("2", "t", lambda *a: TABLE, {"unit": ("word", "char")}).resolve_settings(
        {"units": "word"}), "did you mean: unit", id="unknown-setting"),
])
def test_mistakes_are_refused_with_a_reason(make, message):
    with pytest.raises((KeyError, ValueError)) as raised:
        make()
    assert message in str(raised.value)


def test_build_passes_the_settings_with_their_defaults():
    seen = {}

    def builder(engine, run_ids, judge, settings):
        seen.update(engine=engine, run_ids=run_ids, judge=judge, settings=settings)
        return TABLE

    spec = PaperTableSpec("2", "t", builder, {"unit": ("word", "char"), "subset": ("noisy", "all")})
    assert build_table(spec, "E", (3, 4), "rule", {"subset": "all"}) is TABLE
    assert seen == {"engine": "E", "run_ids": [3, 4], "judge": "rule", "settings": {"unit": "word", "subset": "all"}}
    assert TABLE.cell("model-a", "noisy").n == 40 and TABLE.row_labels() == ["model-a", "model_b & co"]


@pytest.mark.parametrize(("args", "code", "expected"), [
    pytest.param(["domainrag", "--list"], 0, ["Table 2:", "tokenizer: jieba | char"], id="list-needs-no-run"),
    pytest.param(["kb_corruption", "--list"], 0, ["Table 1:", "Table delta:"], id="list-every-table"),
    pytest.param(["enterprise_rag"], 2, ["--run"], id="a-table-needs-runs"),
    pytest.param(["reference_qa", "--run", "1"], 2, ["declares no paper table"], id="protocol-without-tables"),
    pytest.param(["enterprise_rgb", "--run", "1"], 2, ["unknown protocol", "enterprise_rag"], id="unknown-protocol"),
    pytest.param(["enterprise_rag", "--table", "9", "--run", "1"], 2, ["known: 2, 8"], id="unknown-table"),
])
def test_reproduce_command_answers_or_says_why(args, code, expected, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from core.cli import app

    monkeypatch.setenv("GAUNTLET_DATABASE_URL", f"sqlite:///{tmp_path / 'g.db'}")
    result = CliRunner().invoke(app, ["reproduce", *args])
    assert result.exit_code == code, result.output
    for piece in expected:
        assert piece in result.output


STATES = {"scored": 80, "not_applicable": 2, "unparseable": 1, "judge_error": 0, "unjudged": 3, "skipped": 0}
LINE = ("States behind the table (summed over its cells): 80 scored · 2 not applicable · 1 unparseable · "
        "0 judge errors · 3 unjudged · 0 skipped.")


@pytest.mark.parametrize(("fmt", "expected"), [
    pytest.param("markdown", [f"- {LINE}"], id="markdown-notes-line"),
    pytest.param("latex", [LINE], id="latex-caption"),
    pytest.param("csv", ["2,states behind the table,scored,80,,,80,scored",
                         "2,states behind the table,not_applicable,2,,,2,not_applicable",
                         "2,states behind the table,unjudged,3,,,3,unjudged",
                         "2,states behind the table,skipped,0,,,0,skipped"], id="csv-state-rows"),
])
def test_renderers_show_the_states_behind_the_table(fmt, expected):
    text = render(dataclasses.replace(TABLE, states=STATES), fmt)
    for piece in expected:
        assert piece in text

