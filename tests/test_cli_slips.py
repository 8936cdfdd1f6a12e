"""Small CLI slips from issue 28: notes and help texts that say only what is true."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli import app
from core.generation.providers.prices import PRICES_AS_OF

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("prices", "note"), [
    pytest.param([], f"(defaults as of {PRICES_AS_OF})", id="both-defaults"),
    pytest.param(["--price-in", "1.5", "--price-out", "6"], None, id="both-explicit"),
    pytest.param(["--price-in", "1.5"], f"(output price default as of {PRICES_AS_OF})", id="input-explicit"),
    pytest.param(["--price-out", "6"], f"(input price default as of {PRICES_AS_OF})", id="output-explicit"),
])
def test_models_add_names_defaults_only_when_used(engine, prices, note):
    out = CliRunner().invoke(app, ["models", "add", "gpt-4.1", *prices])
    assert out.exit_code == 0, out.output
    if note is None:
        assert "default" not in out.output
    else:
        assert note in out.output


def test_models_add_help_cites_a_file_that_exists():
    text = " ".join(CliRunner().invoke(app, ["models", "add", "--help"]).output.split())
    cited = [word.strip("().,") for word in text.split() if word.strip("().,").endswith(".py")]
    assert cited, text
    assert all((ROOT / path).is_file() for path in cited), cited
