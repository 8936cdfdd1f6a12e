"""The instance model beyond EnterpriseRAG: references, languages, attributes, variants, protocol requirements."""

from __future__ import annotations

import json

import pytest

from core.ingest.io import export_instances, import_file, validate_lines
from core.store.db import make_engine

QA = {
    "id": "qa-1", "domain": "Open QA", "query": "Which city hosted the 1900 Olympics?", "protocol": "reference_qa",
    "reference": {"answer_type": "short", "answers": [{"text": "Paris", "aliases": ["Paris, France"]}],
                  "wrong_answers": ["London"]},
    "attributes": {"question_type": "bridge", "history": [{"role": "user", "content": "Hi"}]},
    "documents": [{"doc_id": "d1", "text": "The 1900 Summer Olympics were held in Paris.", "role": "supporting",
                   "variant": {"kind": "clean"}}],
}
MCQ = {"id": "mcq-1", "domain": "Medicine", "query": "哪种药物是一线治疗？", "protocol": "reference_qa",
       "reference": {"answer_type": "mcq", "choices": {"A": "甲", "B": "乙"}, "answer_key": "B"}}


def _lines(*payloads: dict) -> bytes:
    return b"".join(json.dumps(p, ensure_ascii=False).encode() + b"\n" for p in payloads)


@pytest.mark.parametrize(
    ("payload", "field", "message"),
    [
        pytest.param(QA | {"reference": None}, "reference", "needs a reference", id="reference-required"),
        pytest.param(QA | {"protocol": "nope"}, "protocol", "unknown protocol 'nope'; known:", id="unknown-protocol"),
        pytest.param(MCQ | {"reference": {"answer_type": "mcq", "choices": {"A": "x"}, "answer_key": "C"}},
                     "reference", "answer_key among them", id="mcq-key-not-a-choice"),
        pytest.param(QA | {"reference": {"answer_type": "short"}}, "reference", "at least one answer",
                     id="answer-needed"),
        pytest.param({k: v for k, v in QA.items() if k != "reference"} | {"protocol": "enterprise_rag"}, "mode",
                     "needs a mode", id="enterprise-needs-mode"),
    ],
)
def test_protocol_requirements_name_line_and_field(payload, field, message) -> None:
    report = validate_lines(_lines(QA, payload))
    assert [(e.line, e.field.split(".")[0]) for e in report.errors if message in e.message][:1] == [(2, field)], report.errors


def test_reference_instances_without_instructions_or_titles_validate_and_detect_language() -> None:
    report = validate_lines(_lines(QA, MCQ))
    assert report.ok, report.errors
    languages = {spec.id: spec.language for _, spec in report.instances}
    assert languages == {"qa-1": "en", "mcq-1": "zh"}


def test_new_fields_round_trip(tmp_path, backend_url_factory) -> None:
    url = backend_url_factory()
    engine = make_engine(url)
    source = tmp_path / "in.jsonl"
    source.write_bytes(_lines(QA, MCQ))
    assert import_file(engine, source).ok
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    export_instances(engine, first)
    exported = [json.loads(line) for line in first.read_text().splitlines()]
    qa = next(e for e in exported if e["id"] == "qa-1")
    assert qa["reference"]["answers"][0]["aliases"] == ["Paris, France"] and qa["documents"][0]["variant"] == {"kind": "clean"}
    assert qa["attributes"]["history"] == [{"role": "user", "content": "Hi"}] and qa["documents"][0]["title"] == ""
    other = make_engine(backend_url_factory())
    assert import_file(other, first).ok
    export_instances(other, second)
    assert first.read_bytes() == second.read_bytes()
