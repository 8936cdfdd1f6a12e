"""Small CLI slips from issue 28: notes and help texts that say only what is true."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli import app
from core.generation.fake_server import FAULT_KINDS, ScriptRule
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


def test_fake_server_help_names_every_script_rule_field():
    text = " ".join(CliRunner().invoke(app, ["fake-server", "--help"]).output.split())
    missing = [name for name in [*ScriptRule.model_fields, *FAULT_KINDS] if name not in text]
    assert not missing, text


@pytest.mark.parametrize(("name", "body"), [
    pytest.param("unknown.json", '[{"match": "x", "answer": "y"}]', id="unknown-field"),
    pytest.param("fault.yaml", "- fault: 418\n", id="bad-fault"),
    pytest.param("mapping.yaml", "match: x\nreply: y\n", id="not-a-list"),
    pytest.param("broken.json", '[{"match": ', id="not-json"),
])
def test_fake_server_bad_script_names_every_rule_field(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    out = CliRunner().invoke(app, ["fake-server", "--port", "0", "--script", str(path)])
    assert out.exit_code == 2, out.output
    assert all(f"{field}:" in out.output for field in ScriptRule.model_fields), out.output
