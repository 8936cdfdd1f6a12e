"""The walk-through of docs/architecture.md ("How to add a protocol"), followed by a toy protocol package that lives
in tests/toy_protocol/ and nowhere else: it registers with its own metric (declared and computed in the package),
validates, imports, runs on the loopback fake server, scores, reports (its own command, and `gauntlet report` with the
count of each state) and renders on the generic Protocol views page."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from core.cli import app
from core.config import REPO_ROOT
from core.ingest.io import validate_lines
from core.metrics import STATES
from core.protocols import PROTOCOLS, register_package, unregister_package
from core.protocols.index import docs_index
from core.store.db import make_engine
from core.testing.fake_server import ScriptRule
from tests.factories import imported_scored_run
from tests.pages.signin import sign_in
from tests.toy_protocol import ECHO_MATCH

PACKAGE = "tests.toy_protocol"
QUESTIONS = {"What colour is the sky on a clear day?": "blue", "How many legs has a spider?": "eight",
             "Which metal is liquid at room temperature?": "mercury"}
RECORDS = [{"id": f"toy-{n}", "domain": "Toy", "query": q, "protocol": "toy_echo",
            "documents": [{"doc_id": f"d{n}", "text": f"The answer is {a}.", "role": "supporting"}],
            "reference": {"answers": [{"text": a}]}} for n, (q, a) in enumerate(QUESTIONS.items(), start=1)]
MODELS = {"echo-right": [ScriptRule(match=q, reply=f"It is {a}.") for q, a in QUESTIONS.items()],
          "echo-wrong": [ScriptRule(match="", reply="Nobody knows.")],
          "echo-silent": [ScriptRule(match="", reply="...")]}


@dataclass(frozen=True)
class World:
    url: str
    run_id: int


@pytest.fixture(scope="module")
def toy() -> Iterator[None]:
    register_package(PACKAGE)
    yield
    unregister_package(PACKAGE)


@pytest.fixture(scope="module")
def world(toy, session_url_factory, tmp_path_factory) -> World:
    """The toy instances imported from a file, answered by two scripted models, scored by the heuristic judge."""
    url, path = session_url_factory(), tmp_path_factory.mktemp("toy") / "toy.jsonl"
    run_id = imported_scored_run(url, path, RECORDS, MODELS, "Toy")
    return World(url, run_id)


VALIDATION = [
    pytest.param(RECORDS[0], [], id="valid"),
    pytest.param({**RECORDS[0], "reference": None}, [("reference", "a toy_echo instance needs a short reference")],
                 id="field-requirement"),
    pytest.param({**RECORDS[0], "protocol": "toy_ech"}, [("protocol", "did you mean: toy_echo")], id="close-match"),
]


@pytest.mark.parametrize(("record", "errors"), VALIDATION)
def test_validates(toy, record: dict, errors: list[tuple[str, str]]) -> None:
    report = validate_lines((json.dumps(record) + "\n").encode())
    assert [(e.field, m) for e in report.errors for f, m in errors if f == e.field and m in e.message] == \
           [(f, m) for f, m in errors]
    assert report.ok is (not errors)


def test_registers_from_its_package_only(toy) -> None:
    protocol = PROTOCOLS.get("toy_echo")
    assert protocol.metrics == (ECHO_MATCH,) and protocol.condition_names() == ("",)
    assert "| `toy_echo` | Toy echo | `tests.toy_protocol` | 1 | `toy_echo.echo_match` | `gauntlet toy-echo` |" in \
           docs_index()


def test_runs_and_scores(world) -> None:
    from tests.toy_protocol.analysis import accuracy

    table = accuracy(make_engine(world.url), [world.run_id], "heuristic").set_index("model")
    assert table.loc["echo-right", "echo_match"] == 1.0 and table.loc["echo-wrong", "echo_match"] == 0.0
    assert table.loc["echo-silent"].isna()["echo_match"] and table["unjudged"].sum() == 0
    assert table["n"].tolist() == [3, 0, 3] and table["ok"].tolist() == [3, 0, 3]
    assert table["unparseable"].tolist() == [0, 3, 0]


REPORTS = [
    pytest.param(["toy-echo", "report", "{run}"], ["echo-right", "echo-wrong", "unjudged"], id="own-command"),
    pytest.param(["--help"], ["toy-echo", "Toy echo: echo match per model"], id="listed-in-help"),
    pytest.param(["report", "{run}"], ["Toy echo (toy_echo)", ECHO_MATCH, "n_unparseable", "echo-silent"],
                 id="gauntlet-report"),
]


@pytest.mark.parametrize(("args", "expected"), REPORTS)
def test_reports(world, monkeypatch, args: list[str], expected: list[str]) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    result = CliRunner().invoke(app, [a.format(run=world.run_id) for a in args])
    assert result.exit_code == 0, result.output
    assert all(text in result.stdout for text in expected), result.stdout


STATE_COUNTS = [  # model -> (mean, n, the count of each state: scored, n/a, unparseable, judge error, unjudged, skipped)
    pytest.param("echo-right", 1.0, 3, [3, 0, 0, 0, 0, 0], id="right"),
    pytest.param("echo-wrong", 0.0, 3, [3, 0, 0, 0, 0, 0], id="wrong"),
    pytest.param("echo-silent", None, 0, [0, 0, 3, 0, 0, 0], id="unparseable-left-out"),
]


@pytest.mark.parametrize(("model", "mean", "n", "states"), STATE_COUNTS)
def test_gauntlet_report_shows_its_metric_with_state_counts(world, monkeypatch, model, mean, n, states) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    result = CliRunner().invoke(app, ["report", str(world.run_id), "--format", "json"])
    assert result.exit_code == 0, result.output
    section = json.loads(result.stdout)["protocols"]["toy_echo"]
    row = next(r for r in section["metrics"] if r["model"] == model)
    assert (section["title"], row["metric"], row["value"], row["n"]) == ("Toy echo", ECHO_MATCH, mean, n)
    assert [row[f"n_{state}"] for state in STATES] == states


def test_renders_its_page(world, monkeypatch) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    page = Path(REPO_ROOT, "pages", "protocol_views.py")
    at = sign_in(AppTest.from_file(str(page), default_timeout=60), "analyst").run()
    at.selectbox(key="pv_protocol").set_value("toy_echo").run()
    assert not at.exception, at.exception
    assert [s.value for s in at.subheader] == ["Echo match per model"]
    table = at.dataframe[0].value.set_index("model")
    assert table.loc["echo-right", "echo_match"] == 1.0 and table.loc["echo-wrong", "n"] == 3
    assert table.loc["echo-silent", "unparseable"] == 3
    assert len(at.get("plotly_chart")) == 1 and any("each state's count" in c.value for c in at.caption)


def test_is_offered_on_pick_a_generator(world, monkeypatch) -> None:
    """Its one headline metric is weighed on Pick a generator from its declaration alone (no edit outside its
    package): a weight input, the metric with its protocol in the evidence, and the recommendation it decides."""
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    page = Path(REPO_ROOT, "pages", "pick_generator.py")
    at = sign_in(AppTest.from_file(str(page), default_timeout=60), "analyst").run()
    at.multiselect(key="results_runs_w").set_value([world.run_id]).run()
    assert not at.exception, at.exception
    key = f"toy_echo:{ECHO_MATCH}"
    assert at.number_input(key=f"pk_w_{key}").value == 1.0
    evidence = pd.concat([d.value for d in at.dataframe if "label" in d.value.columns])
    row = evidence[(evidence["label"] == "Echo match (Toy echo)") & (evidence["model"] == "echo-right")].iloc[0]
    assert (row["value"], row["n"]) == (1.0, 3)
    assert [s.value for s in at.success] == ["Recommended generator: echo-right."]


DRILL_DOWNS = [  # model -> the echo_match values of the responses behind its cell (unparseable ones are not counted)
    pytest.param("echo-right", [1.0, 1.0, 1.0], id="right"),
    pytest.param("echo-wrong", [0.0, 0.0, 0.0], id="wrong"),
    pytest.param("echo-silent", [], id="unparseable-not-behind-the-mean"),
]


@pytest.mark.parametrize(("model", "values"), DRILL_DOWNS)
def test_its_view_drills_down_to_the_responses(world, monkeypatch, model, values) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    page = Path(REPO_ROOT, "pages", "protocol_views.py")
    at = sign_in(AppTest.from_file(str(page), default_timeout=60), "analyst").run()
    at.selectbox(key="pv_protocol").set_value("toy_echo").run()
    at.selectbox(key="pv_drill_0_model").set_value(model).run()
    assert not at.exception, at.exception
    assert at.selectbox(key="pv_drill_0_metric").value == ECHO_MATCH
    if not values:
        assert any("No responses behind this selection" in c.value for c in at.caption)
        return
    rows = at.dataframe[1].value
    assert set(rows["model"]) == {model} and sorted(rows[ECHO_MATCH]) == values
    assert at.selectbox(key="pv_drill_0_pick").value in set(rows["response_id"])
    assert any(m.value.startswith(f"**{model}** on") for m in at.markdown), [m.value for m in at.markdown]


ARCHITECTURE = Path(REPO_ROOT, "docs", "architecture.md")
NAMED_PATHS = sorted(set(re.findall(r"`((?:core|tests|pages|ui|docs)/[\w/.]*\w)`", ARCHITECTURE.read_text("utf-8"))))


@pytest.mark.parametrize("path", NAMED_PATHS, ids=NAMED_PATHS)
def test_architecture_doc_names_files_that_exist(path: str) -> None:
    assert Path(REPO_ROOT, path.replace("<id>", "kb_corruption")).exists(), f"docs/architecture.md names {path}"


def test_walkthrough_names_the_toy_package_and_its_test() -> None:
    text = ARCHITECTURE.read_text("utf-8")
    assert "`tests/toy_protocol/`" in text and "`tests/test_toy_protocol.py`" in text
    assert {p.name for p in Path(REPO_ROOT, "tests", "toy_protocol").glob("*.py")} == \
           {"__init__.py", "metrics.py", "analysis.py", "views.py", "command.py", "builder.py"}


PAIRS = [{"question": q, "answer": a} for q, a in QUESTIONS.items()] + [{"question": "Who knows?", "answer": ""}]


def test_its_builder_gets_a_build_benchmark_tab_that_builds_and_imports(toy, tmp_path, monkeypatch) -> None:
    """Build benchmark shows the toy's tab from its declared builder (no edit outside the package): the build runs
    with its progress, says what it skipped and why, and imports as a named set of toy instances."""
    from sqlmodel import Session, select

    from core.store.models import Instance
    from tests.workspace_factories import principal, seeded_db

    seeded = seeded_db(tmp_path)
    source = tmp_path / "pairs.jsonl"
    source.write_text("".join(json.dumps(p) + "\n" for p in PAIRS))
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", seeded.url)
    monkeypatch.setenv("GAUNTLET_BUILD_DIR", str(tmp_path / "built"))
    monkeypatch.setenv("GAUNTLET_IMPORT_ROOTS", str(tmp_path))
    at = AppTest.from_file(str(Path(REPO_ROOT, "pages", "build_benchmark.py")), default_timeout=60)
    at.session_state["gauntlet_principal"] = principal("admin")
    at.run()
    assert "Toy echo" in [t.label for t in at.tabs]
    assert not [t for t in at.text_input if t.key == "build_toy_echo_source"]  # its form is drawn once it is chosen
    at.session_state["build_tab"] = "Toy echo"
    at.run()
    at.text_input(key="build_toy_echo_source").set_value(str(source))
    at.number_input(key="build_toy_echo_limit").set_value(0)
    next(b for b in at.button if b.proto.form_id == "build_toy_echo").click().run()
    assert not at.exception, at.exception
    assert [s.value for s in at.success if s.value.startswith("Built ")][0].startswith("Built 3 toy_echo instances")
    assert any(p.proto.text == "Built 3 instances." for p in at.get("progress"))
    at.button(key="build_toy_echo_import").click().run()
    assert not at.exception, at.exception
    with Session(seeded.engine) as session:
        rows = session.exec(select(Instance.uid).where(Instance.protocol == "toy_echo")).all()
    assert sorted(rows) == ["toy_echo-1", "toy_echo-2", "toy_echo-3"]
