"""docs/kb_corruption.md, "Reproducing Table 1", run as written: its one bash block (build from the shared MMLU slices
with a two-subject knowledge base, import, run, score, reproduce every table) through the CLI against a fresh
database, the models being scripted ones on the loopback fake server: `gold` always answers the key, `wrong` always
another letter. Table 1 has the model rows and the 15 condition columns; gold scores 100 and wrong 0 in every one."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli import app
from core.config import REPO_ROOT
from core.protocols.kb_corruption import CONDITION_NAMES, CORRUPTED_CONDITIONS, NUMERIC_ANSWER
from core.protocols.kb_corruption.paper import CONDITION_HEADERS
from core.store.db import make_engine
from core.testing.fake_server import ScriptRule
from tests.docs_blocks import bash_commands
from tests.factories import scripted_models

DOC = REPO_ROOT / "docs" / "kb_corruption.md"
SHARED = REPO_ROOT.parent / "shared"
SECTION = "Reproducing Table 1"
MODELS = ("gold", "wrong")
BUILT = Path("var") / "ragstress" / "instances.jsonl"


def answer_rules(instances: list[dict], pick) -> list[ScriptRule]:
    """One rule per question (its own 'Question:' block, the one followed by the options) replying `pick(reference)`."""
    return [ScriptRule(match=r"Question: " + re.escape(i["query"].strip()) + r"\n\nOptions:\n",
                       reply=f"Answer: {pick(i['reference'])}") for i in instances]


def scripts(instances: list[dict]) -> dict[str, list[ScriptRule]]:
    """gold answers the key; wrong the first other letter."""
    return {"gold": answer_rules(instances, lambda ref: ref["answer_key"]),
            "wrong": answer_rules(instances, lambda ref: next(k for k in ref["choices"] if k != ref["answer_key"]))}


@dataclass(frozen=True)
class Reproduced:
    tables: dict[str, str]  # --table value -> printed Markdown
    instances: list[dict]


def run_docs(url: str, workdir: Path) -> Reproduced:
    """Run the docs' commands in `workdir` (../shared beside it) against `url`."""
    variables, tables, instances = {"MODELS": ",".join(MODELS)}, {}, []
    with ExitStack() as stack:
        for command in bash_commands(DOC, SECTION):
            if (assignment := re.fullmatch(r"([A-Z_]+)=(\S+)", command)):
                variables.setdefault(assignment.group(1), assignment.group(2))
                continue
            args = shlex.split(re.sub(r"\$([A-Z_]+)", lambda m: variables[m.group(1)], command))
            assert args[0] == "gauntlet", command
            if args[1] == "run":
                instances = [json.loads(x) for x in (workdir / BUILT).read_text(encoding="utf-8").splitlines()]
                stack.enter_context(scripted_models(make_engine(url), scripts(instances)))
            result = CliRunner().invoke(app, args[1:])
            assert result.exit_code == 0, (command, result.output)
            if args[1] == "run":
                variables["RUN"] = re.search(r"run (\d+) created", result.output).group(1)
            if args[1] == "reproduce":
                tables[args[args.index("--table") + 1]] = result.stdout
    return Reproduced(tables, instances)


@pytest.fixture(scope="module")
def reproduced(session_url_factory, tmp_path_factory) -> Iterator[Reproduced]:
    if not SHARED.is_dir():
        pytest.fail(f"shared datasets not found at {SHARED} (CI lays ../shared beside the repo)")
    root = tmp_path_factory.mktemp("reproduce_kb")
    (root / "shared").symlink_to(SHARED)
    workdir = root / "repo"
    workdir.mkdir()
    url = session_url_factory()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(workdir)
        patch.setenv("GAUNTLET_DATABASE_URL", url)
        yield run_docs(url, workdir)


def cells(markdown: str) -> tuple[list[str], dict[tuple[str, str], str]]:
    """The header and (row label, column) -> cell text of a printed Markdown table."""
    lines = [line for line in markdown.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in lines[0].strip().strip("|").split(" | ")]
    out = {}
    for line in lines[1:]:
        row = [c.strip() for c in line.strip().strip("|").split(" | ")]
        out.update({(row[0], column): cell for column, cell in zip(header[1:], row[1:], strict=True)})
    return header, out


def test_table_1_has_the_models_and_the_15_conditions(reproduced) -> None:
    header, table = cells(reproduced.tables["1"])
    assert header == ["Model", *(CONDITION_HEADERS[c] for c in CONDITION_NAMES)] and len(header) == 16
    assert sorted({label for label, _ in table}) == sorted(MODELS)
    assert "Judge: heuristic" in reproduced.tables["1"]


def expected_n(instances: list[dict], condition: str) -> int:
    """How many evaluated questions a condition applies to (numeric typos: entries that hold a number)."""
    numeric = sum(i["attributes"]["question_type"] == NUMERIC_ANSWER for i in instances)
    return numeric if condition.startswith("numeric") else len(instances)


CALIBRATION = [pytest.param(model, condition, value, id=f"{model}-{condition}")
               for model, value in (("gold", "100.0"), ("wrong", "0.0")) for condition in CONDITION_NAMES]


@pytest.mark.parametrize(("model", "condition", "value"), CALIBRATION)
def test_table_1_calibration(reproduced, model, condition, value) -> None:
    _, table = cells(reproduced.tables["1"])
    cell = table[(model, CONDITION_HEADERS[condition])]
    assert cell.startswith(value + " [") and cell.endswith(f"(n = {expected_n(reproduced.instances, condition)})")


@pytest.mark.parametrize("model", MODELS)
def test_delta_is_zero_for_models_the_corruption_cannot_move(reproduced, model) -> None:
    header, table = cells(reproduced.tables["delta"])
    assert header[1:] == [CONDITION_HEADERS[c] for c in CORRUPTED_CONDITIONS]
    assert all(table[(model, column)].startswith("0.0 [0.0, 0.0]") for column in header[1:])


TABLES = [
    pytest.param("gamma", "gold vs wrong", ["Models", "Factual corruption", "Numeric typo", "Relevance poisoning",
                                            "Contradiction injection"], id="gamma"),
    pytest.param("mixed", "gold", ["Model", "Mixed", "Worst condition", "Worst", "Gap", "p"], id="mixed"),
    pytest.param("severity", "wrong · factual corruption", ["Model · type", "Subtle", "Moderate", "Obvious", "Shape"],
                 id="severity"),
]


@pytest.mark.parametrize(("key", "row", "header"), TABLES)
def test_the_other_tables_have_their_shape(reproduced, key, row, header) -> None:
    got, table = cells(reproduced.tables[key])
    assert got == header and (row, header[1]) in table


def states_line(markdown: str) -> str:
    """The printed table's 'States behind the table' note."""
    return next(line for line in markdown.splitlines() if line.startswith("- States behind the table"))


@pytest.mark.parametrize("key", ["1", "delta", "gamma", "mixed", "severity"])
def test_every_table_counts_the_states_behind_it(reproduced, key) -> None:
    scored = len(MODELS) * sum(expected_n(reproduced.instances, c) for c in CONDITION_NAMES)
    assert states_line(reproduced.tables[key]) == (
        f"- States behind the table (summed over its cells): {scored:,} scored · 0 not applicable · 0 unparseable · "
        "0 judge errors · 0 unjudged · 0 skipped.")
