"""`gauntlet gate` usage errors exit 64, a code of their own: never 0 (pass), 1 (could not decide) or 2 (significant
regression), so a mistyped option in CI is not read as a regression."""

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
