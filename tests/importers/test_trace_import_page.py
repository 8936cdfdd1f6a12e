"""AppTest: Build benchmark → "Import a file" imports a production trace export (otel, openinference, langfuse,
phoenix) from a server path with the CLI's report (traces read, problems with line and field) and its core function:
a named set plus the run as deployed."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import Session, select
from streamlit.testing.v1 import AppTest

from core.ingest.sets import benchmark_sets
from core.store.models import Response, Run
from tests.workspace_factories import principal, seeded_db

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "build_benchmark.py")
TRACES = ROOT / "tests" / "fixtures" / "traces"


@pytest.fixture
def seeded(tmp_path, monkeypatch):
    s = seeded_db(tmp_path)
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", s.url)
    monkeypatch.setenv("GAUNTLET_BUILD_DIR", str(tmp_path / "built"))
    monkeypatch.setenv("GAUNTLET_IMPORT_ROOTS", str(TRACES))
    return s


def open_import(fmt: str, file: str, skip: bool = False) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.session_state["gauntlet_principal"] = principal("admin")
    at.run()
    at.selectbox(key="import_format").set_value(fmt)
    at.toggle(key="import_skip_invalid").set_value(skip)
    at.text_input(key="import_path").set_value(str(TRACES / file)).run()
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize(("fmt", "file", "traces"), [
    pytest.param("otel", "otel_rag_export.json", 3, id="otel"),
    pytest.param("openinference", "openinference_rag_spans.jsonl", 2, id="openinference"),
    pytest.param("langfuse", "langfuse_rag_traces.jsonl", 2, id="langfuse"),
    pytest.param("phoenix", "phoenix_llama_index_rag_spans.jsonl", 1, id="phoenix"),
])
def test_a_trace_export_imports_as_a_set_and_a_deployed_run(seeded, fmt, file, traces):
    at = open_import(fmt, file)
    shown = f"{traces} traces read: {traces} complete, 0 incomplete left out"
    assert any(shown in m.value for m in at.markdown), [m.value for m in at.markdown]
    next(t for t in at.text_input if t.key.startswith("import_set_name_")).set_value(f"{fmt} traces").run()
    at.button(key="import_run").click().run()
    assert not at.exception, at.exception
    assert any(s.value.startswith(f"Imported set '{fmt} traces'") for s in at.success), [e.value for e in at.error]
    assert [s.instances for s in benchmark_sets(seeded.engine) if s.name == f"{fmt} traces"] == [traces]
    with Session(seeded.engine) as session:
        run = next(r for r in session.exec(select(Run)) if r.config.get("deployed", {}).get("file") == file)
        answers = session.exec(select(Response).where(Response.run_id == run.id)).all()
    assert len(answers) == traces and all(a.status == "done" and a.text for a in answers)


@pytest.mark.parametrize("skip", [pytest.param(False, id="incomplete-stops"), pytest.param(True, id="incomplete-left-out")])
def test_an_incomplete_trace_is_reported_with_line_and_field_and_nothing_imports(seeded, skip):
    at = open_import("otel", "otel_example_trace.json", skip)
    problems = at.dataframe[0].value
    assert set(problems["line"]) == {31} and {"input.value", "output.value"} <= set(problems["field"])
    assert not [b for b in at.button if b.key == "import_run"]
    assert [s for s in benchmark_sets(seeded.engine) if "otel_example_trace" in s.name] == []
