"""`gauntlet import --format NAME FILE` end to end through the Typer app."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from core.cli import app
from tests.importers.conftest import FIXTURES, shared

runner = CliRunner()


@pytest.mark.parametrize(
    ("fmt", "path", "expected"),
    [
        pytest.param("crag", lambda: FIXTURES / "crag.jsonl", "imported 3 new", id="crag"),
        pytest.param("followrag", lambda: FIXTURES / "followrag.json", "imported 3 new", id="followrag"),
        pytest.param("medqa", lambda: shared("datasets/medqa-mcmle-pulse150/medqa_mcmle_test_sample150_5opt.jsonl"),
                     "imported 150 new", id="medqa"),
    ],
)
def test_import_with_a_format(db_url, fmt, path, expected) -> None:
    result = runner.invoke(app, ["import", "--format", fmt, str(path())])
    assert result.exit_code == 0, result.output
    assert expected in result.output
    again = runner.invoke(app, ["import", "--format", fmt, str(path()), "--new-version"])
    assert again.exit_code == 0 and "0 new, 0 new versions" in again.output


def test_a_corrupt_record_names_line_and_field_and_imports_nothing(db_url, tmp_path) -> None:
    lines = shared("datasets/lit-ragbench/en.jsonl").read_text(encoding="utf-8").splitlines()[:5]
    broken = json.loads(lines[2])
    del broken["answer"]
    bad = tmp_path / "en.jsonl"
    bad.write_text("\n".join([*lines[:2], json.dumps(broken), *lines[3:]]) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["import", "--format", "lit-ragbench", str(bad)])
    assert result.exit_code == 1
    assert f"{bad}:3: answer: missing" in result.output and "nothing imported" in result.output
    stats = runner.invoke(app, ["stats"])
    assert "LIT-RAGBench" not in stats.output


def test_an_unknown_format_lists_the_known_ones(db_url) -> None:
    result = runner.invoke(app, ["import", "--format", "squad", str(FIXTURES / "crag.jsonl")])
    assert result.exit_code == 2
    assert "unknown import format 'squad'; known: crag, domainrag, followrag, hotpotqa, ifeval, jsonl" in result.output
