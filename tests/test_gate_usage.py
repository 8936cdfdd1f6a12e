"""`gauntlet gate` usage errors exit 64, a code of their own: never 0 (pass), 1 (could not decide) or 2 (significant
regression), so a mistyped option in CI is not read as a regression; rules nested too deeply (or not YAML) are refused
with their file, line and column, never a RecursionError."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from core.analysis import gate
from core.cli import app
from core.commands.gate import USAGE_ERROR

USAGE = [
    pytest.param(["1", "2", "--rulez", "gauntlet-gate.yaml"], "No such option", id="mistyped-option"),
    pytest.param(["one", "2"], "Invalid value for 'baseline'", id="run-id-not-a-number"),
    pytest.param(["1"], "Missing argument", id="missing-candidate"),
    pytest.param(["1", "2", "--json"], "requires an argument", id="option-without-its-value"),
]


def test_the_usage_code_is_none_of_the_verdicts():
    assert USAGE_ERROR == 64
    assert USAGE_ERROR not in {gate.PASS, gate.UNDECIDED, gate.REGRESSION}


@pytest.mark.parametrize(("args", "message"), USAGE)
def test_a_usage_error_exits_with_its_own_code(args, message):
    result = CliRunner().invoke(app, ["gate", *args])
    assert result.exit_code == USAGE_ERROR, result.output
    assert message in result.output


def test_the_installed_command_exits_64_on_a_mistyped_option(tmp_path):
    done = subprocess.run([sys.executable, "-m", "core.cli", "gate", "1", "2", "--rulez", "x"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == USAGE_ERROR, done.stderr
    assert "No such option: --rulez" in done.stderr


def _nested_block(levels: int) -> str:
    return "metrics:\n" + "".join("  " * (i + 1) + "-\n" for i in range(levels))


DEEP_RULES = [
    pytest.param("metrics: " + "[" * 100_000 + "]" * 100_000, "line 1, column 109", id="flow-100000-deep"),
    pytest.param("alpha: 0.05\nmetrics: " + "[" * 150 + "]" * 150, "line 2, column 109", id="flow-150-deep"),
    pytest.param(_nested_block(3000), "line 101, column 201", id="block-3000-deep"),
    pytest.param('{"metrics": ' + "{\"a\": " * 200 + "1" + "}" * 200 + "}", "line 1, column 607", id="json-200-deep"),
]


@pytest.mark.parametrize(("text", "where"), DEEP_RULES)
def test_deeply_nested_rules_are_refused_with_file_line_and_column(tmp_path, text, where):
    rules = tmp_path / "rules.yaml"
    rules.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=f"^{where}: nested too deeply \\(more than 100 levels\\)$"):
        gate.load_rules(rules)
    result = CliRunner().invoke(app, ["gate", "1", "2", "--rules", str(rules)])
    assert result.exit_code == gate.UNDECIDED, result.output
    assert f"rules {rules}: {where}: nested too deeply" in result.output
    assert "RecursionError" not in result.output and "recursion" not in result.output


def test_rules_that_are_not_yaml_name_line_and_column(tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text("metrics: [a,\n  b: c: d", encoding="utf-8")
    with pytest.raises(ValueError, match=r"^line 2, column 7: not valid YAML: expected ',' or '\]', but got ':'$"):
        gate.load_rules(rules)
