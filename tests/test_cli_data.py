"""The data commands end to end through the Typer app: validate, import, export, stats, init-db."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli import app

FIXTURES = Path(__file__).resolve().parent / "fixtures"
runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args))


def test_validate_reports_every_bad_line_and_exits_1(tmp_path) -> None:
    bad = tmp_path / "bad.jsonl"
    lines = FIXTURES.joinpath("mini.jsonl").read_text().splitlines()
    broken = json.loads(lines[1])
    broken["constraints"][1]["checker_id"] = "detectable_format:bullets"
    bad.write_text("\n".join([lines[0], json.dumps(broken), "{", lines[2]]) + "\n")
    result = invoke("validate", str(bad))
    assert result.exit_code == 1
    assert f"{bad}:2: constraints[1].checker_id: unknown checker 'detectable_format:bullets'" in result.output
    assert f"{bad}:3: malformed JSON" in result.output
    assert "2 problem(s)" in result.output


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(("validate", str(FIXTURES / "mini.jsonl")), "4 valid instances", id="validate-ok"),
        pytest.param(("import", str(FIXTURES / "mini.jsonl")), "imported 4 new", id="import"),
    ],
)
def test_data_commands(db_url, args, expected) -> None:
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert expected in result.output


def test_import_twice_fails_and_leaves_database_unchanged(db_url) -> None:
    assert invoke("import", str(FIXTURES / "mini.jsonl")).exit_code == 0
    result = invoke("import", str(FIXTURES / "mini.jsonl"))
    assert result.exit_code == 1 and "already exists" in result.output and "unchanged" in result.output


def test_export_then_stats(db_url, tmp_path) -> None:
    invoke("import", str(FIXTURES / "mini.jsonl"))
    out = tmp_path / "out.jsonl"
    assert invoke("export", "--out", str(out), "--domain", "Energy").exit_code == 0
    assert len(out.read_text().splitlines()) == 3
    stats = invoke("stats")
    assert stats.exit_code == 0
    assert "Energy" in stats.output and "conflict" in stats.output and "All" in stats.output


def test_init_db_loads_the_bundled_sample_once(db_url) -> None:
    first = invoke("init-db")
    assert first.exit_code == 0, first.output
    assert "loaded" in first.output
    second = invoke("init-db")
    assert second.exit_code == 0 and "loaded" not in second.output
