"""docs/enterprise_rag.md, "Reproducing Table 2": its bash block run command by command (in-process, on a fresh
database of the test's backend, the `fabricator` endpoint served by the loopback fake server), then the table checked
for the paper's shape and the calibration values of its three models."""

from __future__ import annotations

import csv
import io
import json
import shlex
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from typer.testing import CliRunner

from core.cli import app
from core.config import REPO_ROOT
from core.protocols.paper import STATES_ROW
from core.testing.fake_server import FakeLLMServer, ScriptRule
from tests.docs_blocks import bash_commands

DOC = REPO_ROOT / "docs" / "enterprise_rag.md"
INVENTED = "The Zorblax quantum flux inverter was retired on Mars in 1642 by Captain Quillibert."
TABLE8_ROWS = ("Conflict Recog.", "Strict IAS", "Loose IAS", "Answer Cov.", "Faithfulness")
TABLE8_COLUMNS = ("Metric", "Natural", "Synth.", "Diff.", "p-val (paired t)", "t", "Cohen's d", "TOST p (±0.2)",
                  "Equivalent (±0.2)")
TABLE2_COLUMNS = ("Model", "Inference Paradigm", "Faithfulness", "Answer Coverage", "Loose IAS", "Strict IAS",
                  "Loose IAS: Persona Definition", "Loose IAS: Output Constraints",
                  "Loose IAS: Knowledge Interaction Protocol")


def docs_commands() -> list[list[str]]:
    """The `gauntlet` commands of the bash block under "Reproducing Table 2", as argument lists (`export` lines out)."""
    lines = bash_commands(DOC, "Reproducing Table 2")
    assert all(line.startswith(("gauntlet ", "export ")) for line in lines), lines
    return [shlex.split(line)[1:] for line in lines if line.startswith("gauntlet ")]


@dataclass(frozen=True)
class Reproduced:
    outputs: dict[str, str]  # the command line -> what it printed
    csv_rows: dict[tuple[str, str], dict[str, str]]  # (row, column) -> the long CSV line of Table 2
    latex: str


def output_of(reproduced: Reproduced, table: str) -> str:
    """What the docs' `reproduce ... --table N` line (Markdown) printed."""
    return next(text for line, text in reproduced.outputs.items()
                if line.startswith("reproduce") and f"--table {table}" in line and "--format" not in line)


@pytest.fixture(scope="module")
def reproduced(session_url_factory, tmp_path_factory) -> Iterator[Reproduced]:
    """Every command of the docs' block, in order, each required to exit 0; then Table 2 again as CSV."""
    commands = docs_commands()
    workdir = tmp_path_factory.mktemp("enterprise_rag")
    server = FakeLLMServer(script=[ScriptRule(match="", reply=INVENTED)]).start()
    patch = pytest.MonkeyPatch()
    try:
        patch.chdir(workdir)
        patch.setenv("GAUNTLET_DATABASE_URL", session_url_factory())
        patch.setenv("FABRICATOR_URL", server.base_url + "/v1")
        patch.setenv("FABRICATOR_KEY", "test-key")
        outputs = {}
        for args in commands:
            result = CliRunner().invoke(app, args)
            assert result.exit_code == 0, (args, result.output, result.exception)
            outputs[" ".join(args)] = result.output
        reproduce = next(a for a in commands if a[0] == "reproduce" and "--format" not in a)
        table = CliRunner().invoke(app, [*reproduce, "--format", "csv"])
        assert table.exit_code == 0, table.output
        rows = {(r["row"], r["column"]): r for r in csv.DictReader(io.StringIO(table.output))}
        yield Reproduced(outputs, rows, (workdir / "table2.tex").read_text(encoding="utf-8"))
    finally:
        server.stop()
        patch.undo()


def test_docs_block_covers_every_step() -> None:
    steps = [args[0] for args in docs_commands()]
    assert steps[:1] == ["init-db"] and {"build", "import", "run", "score", "reproduce"} <= set(steps)


def test_table2_has_the_papers_shape(reproduced: Reproduced) -> None:
    markdown = output_of(reproduced, "2")
    assert "| " + " | ".join(TABLE2_COLUMNS) + " |" in markdown
    cells = [key for key in reproduced.csv_rows if key[0] != STATES_ROW]
    assert {row for row, _ in cells} == {"baseline:always-refuse", "baseline:extractive", "fabricator"}
    assert {column for _, column in cells} == set(TABLE2_COLUMNS[1:])
    assert "noisy subset" in markdown and "Judge: heuristic" in markdown
    assert r"\begin{tabular}{lrrrrrrrr}" in reproduced.latex


def test_table8_has_the_papers_rows_and_counts(reproduced: Reproduced) -> None:
    markdown = output_of(reproduced, "8")
    assert "| " + " | ".join(TABLE8_COLUMNS) + " |" in markdown
    rows = {line.split(" | ")[0].lstrip("| "): line for line in markdown.splitlines() if line.startswith("| ")}
    assert set(TABLE8_ROWS) <= set(rows)
    loose = rows["Loose IAS"].split(" | ")
    assert loose[1].endswith("(n = 3)") and loose[2].endswith("(n = 21)")  # 3 models x 1 natural / 7 augmented
    assert "paired t-test over the models" in markdown and "10,000 resamples" in markdown


REPORT_SUBSETS = [
    pytest.param("1", ["--mode", "noisy"], {"baseline:extractive": 1.0, "fabricator": 0.0}, id="noisy-run-noisy"),
    pytest.param("2", ["--mode", "noisy"], {"baseline:extractive": None, "fabricator": None}, id="conflict-run-noisy"),
    pytest.param("2", ["--mode", "gap", "--mode", "conflict"], {"fabricator": 0.0}, id="conflict-run-two-modes"),
]


@pytest.mark.parametrize(("run", "modes", "faithfulness"), REPORT_SUBSETS)
def test_report_narrows_to_a_subset(reproduced: Reproduced, run: str, modes: list[str],
                                    faithfulness: dict[str, float | None]) -> None:
    result = CliRunner().invoke(app, ["report", run, "--judge", "heuristic", "--format", "json", *modes])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    cells = {m["model"]: m["metrics"].get("faithfulness", {}).get("value") for m in doc["models"]}
    assert {model: cells.get(model) for model in faithfulness} == faithfulness
    assert doc["note"] == "EnterpriseRAG subset: " + ", ".join(modes[1::2])


def test_report_and_table2_are_one_computation(reproduced: Reproduced) -> None:
    doc = json.loads(CliRunner().invoke(app, ["report", "1", "--judge", "heuristic", "--format", "json",
                                              "--mode", "noisy"]).output)
    for model in doc["models"]:
        cell, row = model["metrics"]["coverage"], reproduced.csv_rows[(model["model"], "Answer Coverage")]
        assert (f"{cell['value'] * 100:.1f}", f"{cell['ci_high'] * 100:.1f}", str(cell["n"])) == \
            (row["value"], row["high"], row["n"])


def test_report_refuses_an_unknown_subset(reproduced: Reproduced) -> None:
    result = CliRunner().invoke(app, ["report", "1", "--judge", "heuristic", "--mode", "nosy"])
    assert result.exit_code == 2 and "unknown subset 'nosy'" in result.output


CALIBRATION = [
    pytest.param("baseline:extractive", "Faithfulness", "100.0", "scored", id="extractive-faithful"),
    pytest.param("fabricator", "Faithfulness", "0.0", "scored", id="fabricator-unfaithful"),
    pytest.param("fabricator", "Answer Coverage", "0.0", "scored", id="fabricator-covers-nothing"),
    pytest.param("baseline:always-refuse", "Answer Coverage", "0.0", "scored", id="refusal-covers-nothing"),
    pytest.param("baseline:always-refuse", "Faithfulness", "", "12 not applicable", id="refusal-makes-no-claim"),
    pytest.param("fabricator", "Strict IAS", "", "12 unjudged", id="offline-judge-leaves-strict-unjudged"),
    pytest.param("fabricator", "Inference Paradigm", "Standard", "label", id="paradigm-label"),
    pytest.param("baseline:extractive", "Inference Paradigm", "Baseline", "label", id="baseline-label"),
]


@pytest.mark.parametrize(("model", "column", "value", "state"), CALIBRATION)
def test_table2_calibration(reproduced: Reproduced, model: str, column: str, value: str, state: str) -> None:
    cell = reproduced.csv_rows[(model, column)]
    assert (cell["value"], cell["state"]) == (value, state)


@pytest.mark.parametrize("column", TABLE2_COLUMNS[2:], ids=lambda c: c.replace(" ", "-").lower())
def test_every_scored_cell_has_its_interval_and_n(reproduced: Reproduced, column: str) -> None:
    for (row, col), cell in reproduced.csv_rows.items():
        if col == column and cell["state"] == "scored":
            low, value, high = (float(cell[k]) for k in ("low", "value", "high"))
            assert 0.0 <= low <= value <= high <= 100.0 and 1 <= int(cell["n"]) <= 12, (row, cell)


def test_docs_name_the_full_scale_and_the_differences() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "At full scale" in text and text.rstrip().splitlines()[-1].startswith("|")
    assert "### Paper versus product" in text



@pytest.mark.parametrize(("state", "count"), [
    pytest.param("scored", 154, id="scored"),
    pytest.param("not_applicable", 14, id="refusal-faithfulness-not-applicable"),
    pytest.param("unjudged", 84, id="offline-judge-leaves-ias-unjudged"),
    pytest.param("judge_error", 0, id="no-judge-error"),
])
def test_table2_states_behind_the_table(reproduced: Reproduced, state: str, count: int) -> None:
    states = {column: int(cell["value"]) for (row, column), cell in reproduced.csv_rows.items() if row == STATES_ROW}
    assert states[state] == count and sum(states.values()) == 3 * 7 * 12  # 3 models x 7 metrics x 12 instances
    assert ("- States behind the table (summed over its cells): 154 scored · 14 not applicable · 0 unparseable · "
            "0 judge errors · 84 unjudged · 0 skipped.") in output_of(reproduced, "2")
