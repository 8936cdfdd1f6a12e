"""LIT-RAGBench files into lit_ragbench instances: no field lost, identical round trip through export, atomic
rejection naming the line and field, conversion of earlier reference_qa imports, and the CLI (import, report)."""

from __future__ import annotations

import json

import pytest
from sqlmodel import Session, func, select
from typer.testing import CliRunner

from core.cli import app
from core.ingest.importers import get_importer, import_source, source_record
from core.ingest.io import export_instances, import_file, validate_file
from core.protocols.lit_ragbench import ASPECTS, categories_of, conversion_errors
from core.protocols.lit_ragbench.command import import_lit
from core.store.db import make_engine
from core.store.models import Instance
from tests.lit_ragbench.conftest import lit_file


def _records(name: str) -> list[dict]:
    return [json.loads(line) for line in lit_file(name).read_text(encoding="utf-8").splitlines() if line.strip()]


def _count(engine, **where) -> int:
    query = select(func.count()).select_from(Instance)
    for key, value in where.items():
        query = query.where(getattr(Instance, key) == value)
    with Session(engine) as session:
        return session.exec(query).one()


def test_every_record_round_trips_through_export_unchanged(engine, tmp_path, backend_url_factory) -> None:
    records = {"en": _records("en.jsonl"), "ja": _records("ja.jsonl")}
    report = import_lit(engine, [lit_file("en.jsonl"), lit_file("ja.jsonl")])
    assert report.ok and len(report.created) == 228
    assert _count(engine, protocol="lit_ragbench") == 228
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    export_instances(engine, first)
    checked = validate_file(first)
    assert checked.ok, checked.errors[:3]
    other = make_engine(backend_url_factory())
    assert import_file(other, first).ok
    export_instances(other, second)
    assert first.read_bytes() == second.read_bytes()
    for _, spec in validate_file(second).instances:
        language, index = spec.id.split("/")[1:]
        assert source_record(spec) == records[language][int(index)], spec.id
        assert spec.protocol == "lit_ragbench" and spec.language == language
        assert spec.attributes.categories == categories_of(spec.attributes.aspects)
        assert set(spec.attributes.aspects) <= set(ASPECTS)


@pytest.mark.parametrize(
    ("corrupt", "field", "message"),
    [
        pytest.param(lambda r: r | {"qa_type": ["X_unknown"]}, "qa_type", "unknown aspect code", id="unknown-category"),
        pytest.param(lambda r: r | {"qa_type": ["T_pivot"]}, "attributes.aspects", "unknown aspect code(s) ['T_pivot']",
                     id="unknown-aspect-of-a-known-category"),
        pytest.param(lambda r: {k: v for k, v in r.items() if k != "answer"}, "answer", "missing", id="no-answer"),
    ],
)
def test_a_bad_record_imports_nothing_and_names_line_and_field(engine, tmp_path, corrupt, field, message) -> None:
    lines = lit_file("en.jsonl").read_text(encoding="utf-8").splitlines()[:5]
    lines[3] = json.dumps(corrupt(json.loads(lines[3])), ensure_ascii=False)
    path = tmp_path / "en.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = import_lit(engine, [path])
    assert not report.ok and _count(engine) == 0
    assert [(e.line, e.field) for e in report.errors] == [(4, field)], report.errors
    assert message in report.errors[0].message


def test_an_abstention_aspect_needs_an_unanswerable_reference() -> None:
    spec = get_importer("lit-ragbench").parse(lit_file("ja.jsonl")).instances[0][1]
    flipped = spec.model_copy(update={"attributes": spec.attributes.model_copy(update={"aspects": ["A_conflicted"]})})
    message = "abstention aspects and an 'unanswerable' reference go together (both or neither)"
    assert conversion_errors(flipped) == [("reference.answer_type", message)]
    assert conversion_errors(spec.model_copy(update={"metadata": {}}))[0][0] == "metadata.format"


def test_cli_converts_an_earlier_reference_qa_import_as_new_versions(engine, db_url, tmp_path) -> None:
    path = tmp_path / "ja.jsonl"
    path.write_text("\n".join(lit_file("ja.jsonl").read_text(encoding="utf-8").splitlines()[:6]) + "\n", "utf-8")
    assert import_source(engine, path, fmt="lit-ragbench").ok
    refused = CliRunner().invoke(app, ["lit-ragbench", "import", str(path)])
    assert refused.exit_code == 1 and "nothing imported" in refused.output
    done = CliRunner().invoke(app, ["lit-ragbench", "import", str(path), "--new-version"])
    assert done.exit_code == 0, done.output
    assert "0 new, 6 new versions" in done.output
    assert _count(engine, protocol="lit_ragbench", is_latest=True) == 6
    assert _count(engine, protocol="reference_qa", is_latest=False) == 6
