"""What `validate` accepts, every backend stores: the issue's PostgreSQL import crashes (escaped NUL, Infinity / NaN
in metadata, a version beyond 32 bits, a million-character id) are line errors naming the field, and the largest
values validation accepts import and export unchanged. Runs on the active backend (GAUNTLET_TEST_BACKEND)."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func
from sqlmodel import Session, select

from core.config import REPO_ROOT
from core.ingest.io import export_instances, import_file, validate_lines
from core.store.models import Instance
from core.store.schema import ID_MAX_CHARS, INT64, VERSION_MAX

SAMPLE = (REPO_ROOT / "data" / "sample" / "enterprise_rag_sample.jsonl").read_text(encoding="utf-8").splitlines()
WIDE = "\U0001f600"  # four bytes in UTF-8: the widest character an index key holds


def record(**changes) -> dict:
    """The sample's first instance with top-level fields replaced."""
    return json.loads(SAMPLE[0]) | changes


def with_metadata(literal: str) -> str:
    """The first sample line with `metadata` written verbatim (JSON that json.dumps would never produce)."""
    return json.dumps(record(metadata={})).replace('"metadata": {}', f'"metadata": {literal}')


def with_document_text(escaped: str) -> str:
    """The first sample line whose first document's text is the raw JSON string body `escaped`."""
    line = record()
    line["documents"][0]["text"] = "@@TEXT@@"
    return json.dumps(line).replace("@@TEXT@@", escaped)


REJECTED = [
    pytest.param(with_document_text("before\\u0000after"), "documents[0].text", "NUL character",
                 id="escaped-nul-in-document-text"),
    pytest.param(with_metadata('{"score": Infinity}'), "metadata.score", "Infinity is not valid JSON",
                 id="infinity-in-metadata"),
    pytest.param(with_metadata('{"score": -Infinity}'), "metadata.score", "-Infinity is not valid JSON",
                 id="minus-infinity-in-metadata"),
    pytest.param(with_metadata('{"a": [1, NaN]}'), "metadata.a[1]", "NaN is not valid JSON", id="nan-in-metadata"),
    pytest.param(with_metadata('{"big": 1e999}'), "metadata.big", "1e999 is out of range", id="overflow-in-metadata"),
    pytest.param(json.dumps(record(version=VERSION_MAX + 1)), "version", f"less than or equal to {VERSION_MAX}",
                 id="version-beyond-32-bits"),
    pytest.param(json.dumps(record(id="x" * 1_000_000)), "id", f"at most {ID_MAX_CHARS} characters",
                 id="million-character-id"),
    pytest.param(json.dumps(record(language="x" * 1_000_000)), "language", f"at most {ID_MAX_CHARS} characters",
                 id="million-character-language"),
]


def instance_count(engine) -> int:
    with Session(engine) as session:
        return session.exec(select(func.count()).select_from(Instance)).one()


@pytest.mark.parametrize("line, field, message", REJECTED)
def test_unstorable_values_are_line_errors_and_import_nothing(engine, tmp_path, line, field, message):
    path = tmp_path / "in.jsonl"
    path.write_text(SAMPLE[1] + "\n" + line + "\n", encoding="utf-8")
    errors = validate_lines(path.read_bytes()).errors
    assert [(e.line, e.field) for e in errors] == [(2, field)], [str(e) for e in errors]
    assert message in errors[0].message
    report = import_file(engine, path)
    assert not report.ok and instance_count(engine) == 0


def widest(prefix: str) -> str:
    """An id of ID_MAX_CHARS characters, nearly all four-byte ones."""
    return prefix + WIDE * (ID_MAX_CHARS - len(prefix))


ACCEPTED = [
    pytest.param({"version": VERSION_MAX}, id="largest-version"),
    pytest.param({"id": widest("i")}, id="longest-id-in-four-byte-characters"),
    pytest.param({"domain": widest("d"), "language": widest("l")}, id="longest-domain-and-language"),
    pytest.param({"metadata": {"max": INT64, "min": -INT64, "tiny": 5e-324, "huge": 1.7976931348623157e308}},
                 id="extreme-numbers-in-metadata"),
    pytest.param({"query": "Control \u0001\u001f\u007f, astral \U00010348, RTL \u202e and BOM \ufeff?"},
                 id="control-and-astral-characters"),
]


@pytest.mark.parametrize("changes", ACCEPTED)
def test_largest_accepted_values_are_stored_and_exported_unchanged(engine, tmp_path, changes):
    line = record(**changes)
    line["documents"][0]["doc_id"] = widest("doc")
    line["constraints"][0]["id"] = widest("c")
    path, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    assert validate_lines(path.read_bytes()).ok
    assert import_file(engine, path).ok, "validate accepted what this backend cannot store"
    export_instances(engine, out)
    exported = json.loads(out.read_text(encoding="utf-8"))
    for key, value in changes.items():
        assert exported[key] == value, key
    assert exported["documents"][0]["doc_id"] == line["documents"][0]["doc_id"]
    assert exported["constraints"][0]["id"] == line["constraints"][0]["id"]

