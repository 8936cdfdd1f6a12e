"""docs/architecture.md "How to add a protocol", step 0, done as written: a copy of the tree gets
`core/protocols/<id>/` copied from `tests/toy_protocol/` with `NAME` and `COMMAND` set as the step says and nothing
else changed. In that copy the import-graph test, mypy and ruff pass over the new package; then the package is
discovered inside core/protocols (no register_package), a fixture file is imported, a scripted model answers through
the real openai SDK from the loopback fake server, and `gauntlet report` and the package's own command show it.
Step 10 as written: the copy's expert label kind (declared in its package only) is asked on Label responses with its
keyboard buttons, checked against its scale when recorded and when imported, read back as stored, and compared with
the judge's verdicts (agreement and n), with no edit outside the package."""

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


def step_ten(text: str) -> str:
    """Step 10 of the walk-through as the doc states it (expert labels and judge checks)."""
    return text.split("## How to add a protocol", 1)[1].split("\n10. ", 1)[1].split("\n11. ", 1)[0]


def test_step_ten_declares_the_label_kind_in_the_package(discovered) -> None:
    step = step_ten(ARCHITECTURE.read_text("utf-8"))
    assert "labels=(LabelKind(" in step and 'f"{NAME}_echo"' in step and "judge_suites=(JudgeSuite(" in step
    (kind,) = PROTOCOLS.get(NEW_ID).labels  # the toy's, its name built from NAME as step 0 set it
    assert kind.name == f"{NEW_ID}_echo" and kind in core.protocols.label_kinds()


def _expert_on(engine, response_ids: list[int], name: str = "dp-expert"):
    from datetime import UTC, datetime

    from sqlmodel import Session

    from core.review.auth import Principal, create_user
    from core.store.models import Assignment

    create_user(engine, name, "expert", password=f"{name}-pass-1", domains=["DocsPath"])
    with Session(engine) as session:
        session.add_all(Assignment(kind="gold_label", target_id=r, assignee=name, queue_position=n)
                        for n, r in enumerate(response_ids))
        session.commit()
    now = datetime.now(UTC)
    return Principal(name, "expert", ("DocsPath",), now, now)


def _responses(engine, run_id: int) -> dict[tuple[str, str], int]:
    from sqlmodel import Session, select

    from core.store.models import Instance, Model, Response

    with Session(engine) as session:
        rows = session.exec(select(Response.id, Model.name, Instance.uid).where(
            Response.run_id == run_id, Response.model_id == Model.id, Response.instance_id == Instance.id)).all()
    return {(model, uid.rsplit("/", 1)[-1]): rid for rid, model, uid in rows if rid is not None}


BAD_LABELS = [  # a value of the copy's label kind that does not fit -> the message
    pytest.param({"1": "maybe"}, "must be one of right, wrong", id="off-the-scale"),
    pytest.param({"1": "right", "2": "right"}, "one label per answer 1..1", id="more-units-than-the-answer"),
    pytest.param(None, "required for a a_docs_path response", id="missing"),
]


@pytest.fixture(scope="module")
def labelled(run_url):
    """Each of the four responses labelled by an expert through the write path: right for dp-right's, wrong for
    dp-wrong's except one (the expert disagrees with the judge there)."""
    from core.review.gold import record_gold_label
    from core.store.db import make_engine

    url, run_id = run_url
    engine = make_engine(url)
    responses = _responses(engine, run_id)
    expert = _expert_on(engine, sorted(responses.values()))
    kind = PROTOCOLS.get(NEW_ID).labels[0]
    values = {("dp-right", "dp-1"): "right", ("dp-right", "dp-2"): "right", ("dp-wrong", "dp-1"): "wrong",
              ("dp-wrong", "dp-2"): "right"}
    for key, value in values.items():
        record_gold_label(engine, expert, responses[key], {"constraints": {}, kind.name: {"1": value}}, f"dp-{key}")
    return engine, run_id, expert, responses, kind


@pytest.mark.parametrize(("value", "message"), BAD_LABELS)
def test_a_label_of_the_new_kind_that_does_not_fit_is_refused(labelled, value, message) -> None:
    from core.review.gold import record_gold_label

    engine, _, expert, responses, kind = labelled
    payload = {"constraints": {}, **({} if value is None else {kind.name: value})}
    with pytest.raises(ValueError, match=message):
        record_gold_label(engine, expert, responses[("dp-right", "dp-1")], payload, f"bad-{message}")


def test_another_protocols_label_kind_is_refused_on_its_responses(labelled) -> None:
    from core.review.gold import record_gold_label

    engine, _, expert, responses, kind = labelled
    payload = {"constraints": {}, kind.name: {"1": "right"}, "citation_support": {"1": "supported"}}
    with pytest.raises(ValueError, match=f"citation_support: not a label a {NEW_ID} response takes "
                                         rf"\(its label kinds: {kind.name}\)"):
        record_gold_label(engine, expert, responses[("dp-right", "dp-1")], payload, "dp-other-kind")


def test_its_labels_are_stored_as_given_and_the_judge_is_checked_against_them(labelled) -> None:
    from core.analysis.label_kinds import label_kind_agreement, label_kind_table
    from core.store.labels import effective_annotations

    engine, run_id, _, responses, kind = labelled
    stored = effective_annotations(engine, "gold_label", list(responses.values()), "response")
    assert stored[responses[("dp-wrong", "dp-2")]]["dp-expert"].payload == {
        "constraints": {}, kind.name: {"1": "right"}, "note": ""}
    agreement = label_kind_agreement(engine, [run_id], "heuristic", kind)  # echo_match's verdicts: 1, 1, 0, 0
    assert (agreement.n, agreement.agreement, agreement.undecided) == (4, 0.75, 0)
    row = label_kind_table(engine, kind).set_index("Judge").loc["heuristic"]
    assert (row["Agreement %"], row["n answers"]) == (75.0, 4)


def test_its_labels_leave_and_come_back_through_label_export_and_import(labelled, tmp_path) -> None:
    from core.review.annotations import export_annotations
    from core.review.label_import import import_annotations

    engine, _, _, _, kind = labelled
    out = tmp_path / "labels.jsonl"
    export_annotations(engine, out, ["gold_label"])
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(line["payload"][kind.name]["1"] for line in lines) == ["right", "right", "right", "wrong"]
    again = import_annotations(engine, out, cli=True)
    assert (again.imported, again.skipped, again.errors) == (0, 4, [])  # append-only: stored tokens are skipped
    bad = dict(lines[0], client_token="dp-import-bad", payload={**lines[0]["payload"], kind.name: {"1": "maybe"}})
    out.write_text(json.dumps(bad) + "\n")
    report = import_annotations(engine, out, cli=True)
    assert report.imported == 0 and [(e.line, e.field) for e in report.errors] == [(1, f"payload.{kind.name}")]


def test_label_responses_asks_it_with_its_keyboard_buttons(labelled, run_url, monkeypatch) -> None:
    from streamlit.testing.v1 import AppTest

    engine, _, _, responses, kind = labelled
    second = _expert_on(engine, [responses[("dp-right", "dp-1")]], "dp-second")  # one response still to label
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", run_url[0])
    at = AppTest.from_file(str(REPO_ROOT / "pages" / "label_responses.py"), default_timeout=30)
    at.session_state["gauntlet_principal"] = second
    at.run()
    assert not at.exception, at.exception
    assert {"Right (Alt+1)", "Wrong (Alt+2)", "Previous answer (Alt+B)"} <= {b.label for b in at.button}
    assert any(r.label.startswith("Answer 1: ") for r in at.radio)
    assert "echo: Alt+1 right, Alt+2 wrong, Alt+B previous answer" in at.caption[0].value
    at.button(key=next(b.key for b in at.button if b.label == "Wrong (Alt+2)")).click().run()
    assert [r.value for r in at.radio if r.label.startswith("Answer 1: ")] == ["wrong"]


def test_judge_alignment_shows_the_judge_against_its_labels(labelled, run_url, monkeypatch) -> None:
    from datetime import UTC, datetime

    from streamlit.testing.v1 import AppTest

    from core.review.auth import Principal, create_user

    engine, _, _, _, kind = labelled
    create_user(engine, "dp-analyst", "analyst", password="dp-analyst-pass-1")
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", run_url[0])
    at = AppTest.from_file(str(REPO_ROOT / "pages" / "judge_alignment.py"), default_timeout=60)
    now = datetime.now(UTC)
    at.session_state["gauntlet_principal"] = Principal("dp-analyst", "analyst", (), now, now)
    at.run()
    assert not at.exception, at.exception
    heading = next(m.value for m in at.markdown if m.value.startswith(f"**{kind.title} against the experts' labels**"))
    assert "(each answer labelled; right = 1, wrong = 0;" in heading and f"`{kind.checks}`" in heading
    tables = [d.value for d in at.dataframe if "n answers" in d.value.columns]
    assert [t.set_index("Judge").loc["heuristic", "Agreement %"] for t in tables] == [75.0]
