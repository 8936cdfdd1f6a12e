"""Every CLI path that imports or reads a file names a problem as `file:line: field: message` (issue 27, item 6):
labels, benchmark warnings, domains files, LIT-RAGBench files (each error its own file when several are given) and
the sources of a misleading-evidence build."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli import app
from tests.faults.test_hostile_regex import instance_with
from tests.lit_ragbench.conftest import lit_file

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def bad_labels(tmp: Path) -> tuple[list[str], Path, int, str]:
    """A label line of an unknown kind."""
    path = tmp / "labels.jsonl"
    path.write_text(json.dumps({"kind": "no-such-kind"}) + "\n", encoding="utf-8")
    return ["labels", "import", str(path)], path, 1, "kind"


def nested_quantifier_warning(tmp: Path) -> tuple[list[str], Path, int, str]:
    """A valid benchmark whose second record's regex may backtrack badly: a warning, exit 0."""
    path = tmp / "bench.jsonl"
    records = [instance_with("keywords:existence", {"keywords": ["fine"]}) | {"id": "fine"},
               instance_with("enterprise:citation_count", {"pattern": "(a+)+$"}) | {"id": "nested"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return ["validate", str(path)], path, 2, r"constraints\[\d+\]\.checker_kwargs\.pattern"


def bad_domains(tmp: Path) -> tuple[list[str], Path, int, str]:
    """A domains file whose second line has no name."""
    path = tmp / "domains.jsonl"
    path.write_text(json.dumps({"name": "finance", "description": "money"}) + "\n"
                    + json.dumps({"description": "nameless"}) + "\n", encoding="utf-8")
    return ["import", str(FIXTURES / "mini.jsonl"), "--domains", str(path)], path, 2, "name"


def bad_second_lit_file(tmp: Path) -> tuple[list[str], Path, int, str]:
    """Two LIT-RAGBench files, the second with no answer on its third line."""
    lines = lit_file("en.jsonl").read_text(encoding="utf-8").splitlines()[:3]
    first, second = tmp / "en.jsonl", tmp / "ja.jsonl"
    first.write_text("\n".join(lines) + "\n", encoding="utf-8")
    broken = {k: v for k, v in json.loads(lines[2]).items() if k != "answer"}
    second.write_text("\n".join([*lines[:2], json.dumps(broken, ensure_ascii=False)]) + "\n", encoding="utf-8")
    return ["lit-ragbench", "import", str(first), str(second)], second, 3, "answer"


def second_file_already_imported(tmp: Path) -> tuple[list[str], Path, int, str]:
    """A Japanese file imported before, then again after a shorter English one: its third record already exists."""
    english, japanese = tmp / "en.jsonl", tmp / "ja.jsonl"
    english.write_text("\n".join(lit_file("en.jsonl").read_text(encoding="utf-8").splitlines()[:2]) + "\n",
                       encoding="utf-8")
    japanese.write_text("\n".join(lit_file("ja.jsonl").read_text(encoding="utf-8").splitlines()[:3]) + "\n",
                        encoding="utf-8")
    assert CliRunner().invoke(app, ["lit-ragbench", "import", str(japanese)]).exit_code == 0
    return ["lit-ragbench", "import", str(english), str(japanese)], japanese, 3, "id"


def bad_stress_source(tmp: Path) -> tuple[list[str], Path, int, str]:
    """A HotpotQA source whose only record has no question."""
    path = tmp / "hotpot.json"
    path.write_text(json.dumps([{"_id": "q1", "answer": "yes", "supporting_facts": [], "context": []}]),
                    encoding="utf-8")
    return (["misleading-evidence", "build", str(path), "--format", "hotpotqa", "--out", str(tmp / "out.jsonl")],
            path, 1, "question")


@pytest.mark.parametrize("case", [
    pytest.param(bad_labels, id="labels-import"),
    pytest.param(nested_quantifier_warning, id="validate-warning"),
    pytest.param(bad_domains, id="import-domains-file"),
    pytest.param(bad_second_lit_file, id="lit-ragbench-import-second-file"),
    pytest.param(second_file_already_imported, id="lit-ragbench-import-conflict-in-second-file"),
    pytest.param(bad_stress_source, id="misleading-evidence-build-source"),
])
def test_a_file_problem_is_printed_as_file_line_field_message(db_url, tmp_path, case: Callable) -> None:
    args, path, line, field = case(tmp_path)
    result = CliRunner().invoke(app, args)
    assert "Traceback" not in result.output, result.output
    located = rf"^(error: |warning: )?{re.escape(str(path))}:{line}: {field}: \S"
    assert re.search(located, result.output, re.MULTILINE), result.output
