"""Importing any supported layout as a named set, as the app does: records read, rejects with line and field, the
set created with the valid records; server paths only under the import folders. Both backends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.ingest.format_sets import (
    IMPORT_ROOTS_ENV,
    import_format_set,
    import_formats,
    preview_format_file,
    server_path,
)
from core.ingest.sets import benchmark_sets
from tests.importers.conftest import FIXTURES, shared

ROOT = Path(__file__).resolve().parents[2]
# format -> (source file, records taken from its head (JSONL/CSV lines; 0 = the whole file), records expected)
SOURCES = {
    "jsonl": (lambda: ROOT / "tests" / "fixtures" / "mini.jsonl", 0, 4),
    "crag": (lambda: FIXTURES / "crag.jsonl", 0, 3),
    "followrag": (lambda: FIXTURES / "followrag.json", 0, 3),
    "ramdocs": (lambda: FIXTURES / "ramdocs.jsonl", 0, 3),
    "rgb": (lambda: FIXTURES / "rgb_en.json", 0, 3),
    "domainrag": (lambda: shared("datasets/domainrag/faithful_qa.jsonl"), 3, 3),
    "lit-ragbench": (lambda: shared("datasets/lit-ragbench/en.jsonl"), 3, 3),
    "hotpotqa": (lambda: shared("datasets/hotpotqa-dev-distractor/hotpotqa_dev_distractor_500.jsonl"), 3, 3),
    "medqa": (lambda: shared("datasets/medqa-usmle-4opt/medqa_us_4opt_test_first500.jsonl"), 3, 3),
    "mmlu": (lambda: shared("datasets/mmlu/test/anatomy_test.csv"), 3, 3),
    "ifeval": (lambda: shared("ifeval/input_data.jsonl"), 3, 3),
}


def head(fmt: str, folder: Path) -> Path:
    """A copy under `folder` of the format's source (its first `lines` lines, or all of it): tests may edit it."""
    source, lines, _ = SOURCES[fmt]
    path = source()
    out = folder / path.name
    if not lines:
        out.write_bytes(path.read_bytes())
        return out
    with path.open(encoding="utf-8") as handle:
        out.write_text("".join(next(handle) for _ in range(lines)), encoding="utf-8")
    return out


def test_every_import_format_has_a_case():
    assert set(import_formats()) == set(SOURCES)


@pytest.mark.parametrize("fmt", list(SOURCES), ids=list(SOURCES))
def test_a_file_of_each_format_imports_as_a_named_set(engine, tmp_path, fmt):
    path = head(fmt, tmp_path)
    preview, report = import_format_set(engine, path, fmt, f"{fmt} slice", author="admin")
    assert report.ok, report.errors
    assert preview.records == SOURCES[fmt][2] == len(report.created) and not preview.problems()
    (info,) = benchmark_sets(engine)
    assert (info.name, info.instances, info.source) == (f"{fmt} slice", SOURCES[fmt][2], f"{fmt}:{path.name}")


@pytest.mark.parametrize(("skip_invalid", "records", "imported"), [
    pytest.param(False, 0, 0, id="a-bad-record-imports-nothing"),
    pytest.param(True, 4, 3, id="skip-invalid-imports-the-others"),
])
def test_rejects_are_reported_with_line_and_field(engine, tmp_path, skip_invalid, records, imported):
    rows = [json.loads(line) for line in head("ramdocs", tmp_path).read_text(encoding="utf-8").splitlines()]
    del rows[1]["question"]
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [*rows, rows[0] | {"question": "Another?"}]),
                    encoding="utf-8")
    preview, report = import_format_set(engine, path, "ramdocs", "bad", skip_invalid=skip_invalid)
    problems = preview.problems()
    assert [(p.line, p.field) for p in problems] == [(2, "question")]
    assert preview.records == records
    assert len(report.created) == imported and report.ok == skip_invalid


def test_a_changed_instance_needs_the_explicit_choice(engine, tmp_path):
    path = head("ramdocs", tmp_path)
    import_format_set(engine, path, "ramdocs", "first")
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    records[0]["question"] += " (edited)"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert len(preview_format_file(engine, path, "ramdocs", False).changed) == 1
    _, refused = import_format_set(engine, path, "ramdocs", "second")
    assert [e.field for e in refused.errors] == ["on_changed"]
    _, renamed = import_format_set(engine, path, "ramdocs", "second", on_changed="rename")
    assert renamed.ok and len(renamed.renamed) == 1


@pytest.mark.parametrize(("relative", "error"), [
    pytest.param("inside/data.jsonl", None, id="inside"),
    pytest.param("inside/../outside.jsonl", "outside the import folders", id="dot-dot-escape"),
    pytest.param("outside.jsonl", "outside the import folders", id="outside"),
    pytest.param("inside/missing.jsonl", "is not a file", id="missing"),
])
def test_a_server_path_is_read_only_under_the_import_folders(tmp_path, monkeypatch, relative, error):
    (tmp_path / "inside").mkdir()
    (tmp_path / "inside" / "data.jsonl").write_text("{}\n")
    (tmp_path / "outside.jsonl").write_text("{}\n")
    monkeypatch.setenv(IMPORT_ROOTS_ENV, str(tmp_path / "inside"))
    if error is None:
        assert server_path(str(tmp_path / relative)) == (tmp_path / relative).resolve()
    else:
        with pytest.raises(ValueError, match=error):
            server_path(str(tmp_path / relative))


@pytest.mark.parametrize(("protocol", "expected"), [
    pytest.param(None, "reference_qa", id="the-importers-own"),
    pytest.param("lit_ragbench", "lit_ragbench", id="as-lit-ragbench"),
])
def test_a_layout_imports_under_the_protocol_chosen(engine, tmp_path, protocol, expected):
    from sqlmodel import Session, select

    from core.store.models import Instance

    _, report = import_format_set(engine, head("lit-ragbench", tmp_path), "lit-ragbench", "lit", protocol=protocol)
    assert report.ok, report.errors
    with Session(engine) as session:
        assert set(session.exec(select(Instance.protocol)).all()) == {expected}


def test_a_protocol_the_layout_cannot_become_is_refused(engine, tmp_path):
    with pytest.raises(ValueError, match="cannot be imported as lit_ragbench"):
        preview_format_file(engine, head("ramdocs", tmp_path), "ramdocs", False, "lit_ragbench")
