"""docs/architecture.md "How to add a protocol", step 0, done as written: a copy of the tree gets
`core/protocols/<id>/` copied from `tests/toy_protocol/` with `NAME` and `COMMAND` set as the step says and nothing
else changed. In that copy the import-graph test, mypy and ruff pass over the new package; then the package is
discovered inside core/protocols (no register_package), a fixture file is imported, a scripted model answers through
the real openai SDK from the loopback fake server, and `gauntlet report` and the package's own command show it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

import core.protocols
from core import plugins
from core.cli import app
from core.config import REPO_ROOT
from core.protocols import PROTOCOLS, discover, unregister_package
from core.testing.fake_server import ScriptRule
from tests.factories import imported_scored_run

ARCHITECTURE = Path(REPO_ROOT, "docs", "architecture.md")
NEW_ID = "a_docs_path"  # sorts before every shipped protocol: tests assert membership, not a prefix
TREE = ("core", "docs/layers.md", "pyproject.toml", "tests/test_import_graph.py", "tests/test_layering.py")


@dataclass(frozen=True)
class Step:
    source: str  # the folder to copy
    target: str  # where, with <id>
    assignments: dict[str, tuple[str, str]]  # file -> (variable, value template)


def step_zero(text: str) -> Step:
    """Step 0 of the walk-through as the doc states it: copy what where, then which assignments in which files."""
    section = text.split("## How to add a protocol", 1)[1].split("\n0. ", 1)[1].split("\n1. ", 1)[0]
    source, target = re.search(r"Copy `([^`]+)` to `([^`]+)`", section).groups()  # type: ignore[union-attr]
    found = re.findall(r"`(\w+) = \"([^\"]+)\"`\s+in\s+its\s+`(\w+\.py)`", section)
    return Step(source, target, {file: (var, value) for var, value, file in found})


def value_for(template: str, new_id: str) -> str:
    """The doc's placeholder filled in: `<id>` or `<id with dashes>`."""
    return template.replace("<id with dashes>", new_id.replace("_", "-")).replace("<id>", new_id)


def follow_step_zero(root: Path, step: Step, new_id: str) -> Path:
    """Copy the toy into the tree at `root` and set the assignments; the new package's folder."""
    package = root / step.target.replace("<id>", new_id)
    shutil.copytree(REPO_ROOT / step.source, package, ignore=shutil.ignore_patterns("__pycache__"))
    for file, (var, template) in step.assignments.items():
        path = package / file
        code, n = re.subn(rf'^{var} = "[^"]*"$', f'{var} = "{value_for(template, new_id)}"', path.read_text(),
                          flags=re.MULTILINE)
        assert n == 1, f"{path} has no single module-level {var} = '...' to set"
        path.write_text(code)
    return package


def copy_tree(root: Path) -> None:
    """The parts of the repository the checks read: core, the layer doc, the tool config and the graph test."""
    for part in TREE:
        source, target = REPO_ROOT / part, root / part
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "toy_copy"))
        else:
            shutil.copy2(source, target)


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """A copy of the tree with step 0 done."""
    root = tmp_path_factory.mktemp("tree")
    copy_tree(root)
    follow_step_zero(root, step_zero(ARCHITECTURE.read_text("utf-8")), NEW_ID)
    return root


def test_step_zero_says_what_to_copy_and_what_to_set() -> None:
    step = step_zero(ARCHITECTURE.read_text("utf-8"))
    assert (step.source, step.target) == ("tests/toy_protocol/", "core/protocols/<id>/")
    assert step.assignments == {"__init__.py": ("NAME", "<id>"), "command.py": ("COMMAND", "<id with dashes>")}
    assert "'module:function'" in ARCHITECTURE.read_text("utf-8")  # the string-hook rule is written in the steps


def run_tool(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A tool run in the copied tree, with that tree's core first on the path."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([sys.executable, "-m", *args], cwd=root, env=env, capture_output=True, text=True,
                          timeout=600)


TOOLS = [
    pytest.param(("pytest", "-p", "no:cacheprovider", "-p", "no:gauntlet", "-n", "0", "-q",
                  "tests/test_import_graph.py"), id="import-graph"),
    pytest.param(("mypy", "--cache-dir", ".mypy_cache", f"core/protocols/{NEW_ID}"), id="mypy"),
    pytest.param(("ruff", "check", f"core/protocols/{NEW_ID}"), id="ruff"),
]


@pytest.mark.parametrize("tool", TOOLS)
def test_the_copied_package_passes_the_checks(tree: Path, tool: tuple[str, ...]) -> None:
    result = run_tool(tree, *tool)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


QUESTIONS = {"What colour is the sky on a clear day?": "blue", "How many legs has a spider?": "eight"}
RECORDS = [{"id": f"dp-{n}", "domain": "DocsPath", "query": q, "protocol": NEW_ID,
            "documents": [{"doc_id": f"d{n}", "text": f"The answer is {a}.", "role": "supporting"}],
            "reference": {"answers": [{"text": a}]}} for n, (q, a) in enumerate(QUESTIONS.items(), start=1)]
MODELS = {"dp-right": [ScriptRule(match=q, reply=f"It is {a}.") for q, a in QUESTIONS.items()],
          "dp-wrong": [ScriptRule(match="", reply="Nobody knows.")]}
PACKAGE = f"core.protocols.{NEW_ID}"


@pytest.fixture(scope="module")
def discovered(tree: Path) -> Iterator[None]:
    """The copied tree's core/protocols seen by this process: its new package is discovered, not registered."""
    patch = pytest.MonkeyPatch()
    patch.setattr(plugins, "PROTOCOLS_DIR", tree / "core" / "protocols")
    patch.setattr(core.protocols, "__path__", [*core.protocols.__path__, str(tree / "core" / "protocols")])
    try:
        discover()
        yield
    finally:
        unregister_package(PACKAGE)
        patch.undo()


@pytest.fixture(scope="module")
def run_url(discovered, session_url_factory, tmp_path_factory) -> tuple[str, int]:
    """The fixture file imported, answered by two scripted models over the real SDK, scored by the heuristic judge."""
    url, path = session_url_factory(), tmp_path_factory.mktemp("dp") / "dp.jsonl"
    run_id = imported_scored_run(url, path, RECORDS, MODELS, "DocsPath")
    return url, run_id


def test_the_copy_is_discovered_inside_core_protocols(discovered) -> None:
    protocol = PROTOCOLS.get(NEW_ID)
    assert protocol.metrics == (f"{NEW_ID}.echo_match",) and core.protocols.PACKAGE_OF[NEW_ID] == PACKAGE
    assert (NEW_ID.replace("_", "-"), f"{PACKAGE}.command") in [(c, m) for c, m, _ in plugins.protocol_commands()]


def test_gauntlet_report_shows_the_new_protocol(run_url, monkeypatch) -> None:
    url, run_id = run_url
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", url)
    result = CliRunner().invoke(app, ["report", str(run_id), "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = {r["model"]: r for r in json.loads(result.stdout)["protocols"][NEW_ID]["metrics"]}
    assert {m: (r["metric"], r["value"], r["n"]) for m, r in rows.items()} == {
        "dp-right": (f"{NEW_ID}.echo_match", 1.0, 2), "dp-wrong": (f"{NEW_ID}.echo_match", 0.0, 2)}


def test_its_own_command_reports(run_url, monkeypatch) -> None:
    url, run_id = run_url
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", url)
    result = CliRunner().invoke(app, [NEW_ID.replace("_", "-"), "report", str(run_id)])
    assert result.exit_code == 0, result.output
    assert "dp-right" in result.stdout and "dp-wrong" in result.stdout
