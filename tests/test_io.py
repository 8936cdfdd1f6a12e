"""Validation, atomic import, versioning, round trip and composition tables of the interchange format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import Session, func, select

from core.ingest.io import export_instances, import_file, validate_lines
from core.protocols.enterprise_rag.composition import composition
from core.store.models import Constraint, Document, Domain, Instance

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MINI = FIXTURES / "mini.jsonl"


def good_line() -> dict:
    return json.loads(MINI.read_text().splitlines()[0])


def mutate(**changes) -> dict:
    line = good_line()
    for path, value in changes.items():
        target = line
        keys = path.split("__")
        for key in keys[:-1]:
            target = target[int(key)] if key.isdigit() else target[key]
        last = keys[-1]
        if value is DELETE:
            del target[int(last) if last.isdigit() else last]
        else:
            target[int(last) if last.isdigit() else last] = value
    return line


DELETE = object()

BAD_LINES = [
    pytest.param(b"{not json", "", "malformed JSON", id="malformed-json"),
    pytest.param(b"[1, 2]", "", "expected a JSON object", id="not-an-object"),
    pytest.param(json.dumps(mutate(query=DELETE)).encode(), "query", "Field required", id="missing-query"),
    pytest.param(json.dumps(mutate(mode="partial")).encode(), "mode", "Input should be", id="unknown-mode"),
    pytest.param(
        json.dumps(mutate(constraints__1__checker_id="detectable_format:bullets")).encode(),
        "constraints[1].checker_id",
        "detectable_format:bullets",
        id="unknown-checker",
    ),
    pytest.param(
        json.dumps(mutate(constraints__1__checker_id=None)).encode(),
        "constraints[1]",
        "needs a checker_id",
        id="rule-without-checker",
    ),
    pytest.param(
        json.dumps(mutate(constraints__2__precondition="outage")).encode(),
        "constraints[2].precondition",
        "Input should be",
        id="precondition-unknown-mode",
    ),
    pytest.param(json.dumps(mutate(documents=[])).encode(), "documents", "needs at least one document", id="empty-bundle"),
    pytest.param(
        json.dumps(mutate(constraints__0__sub_dimension="format")).encode(),
        "constraints[0]",
        "does not belong to category",
        id="sub-dimension-of-other-category",
    ),
    pytest.param(
        json.dumps(mutate(constraints__2__checker_kwargs={})).encode(),
        "constraints[2].checker_kwargs",
        "",
        id="checker-kwargs-missing",
    ),
    pytest.param(b'{"id": "caf\xe9"}', "", "not valid UTF-8", id="non-utf8"),
]


@pytest.mark.parametrize(("raw", "field", "message"), BAD_LINES)
def test_bad_line_is_reported_with_line_and_field(raw: bytes, field: str, message: str) -> None:
    data = MINI.read_bytes() + raw + b"\n"
    report = validate_lines(data)
    assert not report.ok
    bad_line = len(MINI.read_bytes().splitlines()) + 1
    assert [e.line for e in report.errors] == [bad_line] * len(report.errors)
    assert any(e.field.startswith(field) and message in e.message for e in report.errors), report.errors


def test_duplicate_ids_inside_a_file_name_both_lines() -> None:
    first = MINI.read_bytes().splitlines()[0]
    report = validate_lines(first + b"\n" + first + b"\n")
    assert [(e.line, e.field) for e in report.errors] == [(2, "id")]
    assert "first on line 1" in report.errors[0].message


def test_valid_file_has_no_errors() -> None:
    report = validate_lines(MINI.read_bytes())
    assert report.ok and len(report.instances) == 4


def table_counts(engine) -> tuple[int, int, int, int]:
    with Session(engine) as s:
        return tuple(s.exec(select(func.count()).select_from(t)).one() for t in (Domain, Instance, Constraint, Document))


def test_import_of_a_file_with_one_bad_line_changes_nothing(engine, tmp_path) -> None:
    import_file(engine, MINI)
    before = table_counts(engine)
    bad = tmp_path / "bad.jsonl"
    new = good_line() | {"id": "fresh-1"}
    bad.write_bytes(json.dumps(new).encode() + b"\n{oops\n")
    report = import_file(engine, bad)
    assert not report.ok and report.errors[0].line == 2
    assert table_counts(engine) == before


def test_import_creates_instances_with_ordered_bundles(engine) -> None:
    report = import_file(engine, MINI, domains_path=FIXTURES / "domains.jsonl")
    assert report.ok and len(report.created) == 4
    with Session(engine) as s:
        inst = s.exec(select(Instance).where(Instance.uid == "energy-noisy-t1")).one()
        docs = s.exec(select(Document).where(Document.instance_id == inst.id).order_by(Document.position)).all()
        assert [d.doc_uid for d in docs] == ["en-002", "en-001", "en-004"]
        assert s.exec(select(Domain).where(Domain.name == "Energy")).one().description == "Grid operations"


def test_reimport_is_rejected_without_new_version(engine) -> None:
    import_file(engine, MINI)
    before = table_counts(engine)
    report = import_file(engine, MINI)
    assert not report.ok and "already exists" in report.errors[0].message
    assert table_counts(engine) == before


def test_reimport_with_new_version_versions_changed_and_keeps_old(engine, tmp_path) -> None:
    import_file(engine, MINI)
    changed = tmp_path / "changed.jsonl"
    lines = [json.loads(x) for x in MINI.read_text().splitlines()]
    lines[0]["query"] = "A reworded query?"
    changed.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    refused = import_file(engine, changed, on_existing="new_version")  # a changed question needs a choice
    assert [e.field for e in refused.errors] == ["query"] and not refused.new_versions
    report = import_file(engine, changed, on_existing="new_version", on_changed_question="supersede")
    assert report.new_versions == ["energy-noisy-t1"] and len(report.unchanged) == 3
    with Session(engine) as s:
        versions = s.exec(select(Instance).where(Instance.uid == "energy-noisy-t1").order_by(Instance.version)).all()
        assert [(v.version, v.is_latest) for v in versions] == [(1, False), (2, True)]
        assert versions[0].query != versions[1].query


def test_import_export_import_is_lossless(engine, tmp_path, backend_url_factory) -> None:
    from core.store.db import make_engine

    import_file(engine, MINI)
    first = tmp_path / "first.jsonl"
    export_instances(engine, first)
    other = make_engine(backend_url_factory())
    assert import_file(other, first).ok
    second = tmp_path / "second.jsonl"
    export_instances(other, second)
    assert first.read_text() == second.read_text()
    original = {json.loads(x)["id"]: json.loads(x) for x in MINI.read_text().splitlines()}
    exported = {json.loads(x)["id"]: json.loads(x) for x in first.read_text().splitlines()}
    for uid, line in original.items():
        assert exported[uid]["query"] == line["query"]
        assert [d["doc_id"] for d in exported[uid]["documents"]] == [d["doc_id"] for d in line["documents"]]
        assert [c["checker_kwargs"] for c in exported[uid]["constraints"]] == [
            c.get("checker_kwargs", {}) for c in line["constraints"]
        ]


def test_export_filters_by_domain_and_mode(engine, tmp_path) -> None:
    import_file(engine, MINI)
    out = tmp_path / "e.jsonl"
    assert export_instances(engine, out, domain="Energy", mode="gap") == 1
    assert json.loads(out.read_text())["id"] == "energy-gap-t1"


def test_composition_tables(engine) -> None:
    import_file(engine, MINI)
    table5, table6 = composition(engine)
    by_domain = {r.domain: r for r in table5}
    assert by_domain["Energy"].instances == 3 and by_domain["Legal"].instances == 1
    assert by_domain["All"].instances == 4
    assert by_domain["All"].avg_constraints == 4.0
    assert (by_domain["All"].avg_persona, by_domain["All"].avg_output, by_domain["All"].avg_knowledge_protocol) == (1, 1, 2)
    by_mode = {m.mode: m for m in table6}
    assert (by_mode["noisy"].count, by_mode["noisy"].natural) == (2, 2)
    assert (by_mode["gap"].count, by_mode["gap"].augmented) == (1, 1)
    assert by_mode["conflict"].ratio == 0.25
