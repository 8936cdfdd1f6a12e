"""The runnable examples in docs/examples execute and print what they promise."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

EXAMPLES = [
    pytest.param("docs/examples/quickstart.py", ["imported 36 instances", "All", "conflict"], id="quickstart"),
]


@pytest.mark.parametrize(("script", "expected"), EXAMPLES)
def test_example_runs(script: str, expected: list[str]) -> None:
    result = subprocess.run([sys.executable, str(REPO / script)], cwd=REPO, capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    for text in expected:
        assert text in result.stdout
