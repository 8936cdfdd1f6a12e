"""`gauntlet domainrag build`: every sub-set record through the importer with no field lost, the documents of every
setting, the same bytes on every build, and an import -> export -> import round trip that is byte-identical."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from typer.testing import CliRunner

from core.cli import app
from core.ingest.importers import get_importer, source_record
from core.ingest.io import export_instances, import_file, validate_file
from core.protocols.domainrag import ANTI
from core.protocols.domainrag.builder import FILES, BuildOptions, build_instances, write_jsonl
from tests.domainrag.conftest import shared_data

SUBSET_ROWS = {"extractive": 90, "conversational": 49, "structural": 94, "faithful": 49, "time_sensitive": 65,
               "multidoc": 48}
RAW_FILES = [*FILES.values(), "noisy_qa_v1.jsonl"]


def _raw(name: str) -> list[dict]:
    return [json.loads(line) for line in (shared_data() / name).read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("name", RAW_FILES)
def test_the_importer_keeps_every_field_of_every_shared_record(name) -> None:
    parsed = get_importer("domainrag").parse(shared_data() / name)
    assert parsed.ok, parsed.errors[:3]
    assert [source_record(spec) for _, spec in parsed.instances] == _raw(name)


def test_build_counts_match_the_paper_and_the_release(built) -> None:
    payloads, report = built
    assert dict(report.instances) == {**SUBSET_ROWS, ANTI: 49}
    assert report.documents["noise"] == 90 * 24
    assert report.documents["html"] == 94 and report.documents["anti"] == 2 * 49
    kinds = Counter(p["attributes"]["question_type"] for p in payloads)
    assert kinds == report.instances


def test_every_built_question_rebuilds_its_source_record(specs) -> None:
    raw = {f"domainrag-abilities/{subset}/{i}": record
           for subset, name in FILES.items() for i, record in enumerate(_raw(name))}
    primary = [s for s in specs if s.attributes.question_type != ANTI]
    assert {s.id for s in primary} == set(raw)
    assert all(source_record(s) == raw[s.id] for s in primary)
    assert {s.protocol for s in specs} == {"domainrag"}


@pytest.mark.parametrize(
    ("question_type", "settings"),
    [
        pytest.param("extractive", {"gold": 1, "noise": 24, "bm25": 3, "released_bm25": 3, "released_dense": 3},
                     id="extractive"),
        pytest.param("conversational", {"gold": 1, "bm25": 3, "released_bm25": 3, "released_dense": 3},
                     id="conversational"),
        pytest.param("time_sensitive", {"gold": 1, "bm25": 3, "released_bm25": 3, "released_dense": 3},
                     id="time-sensitive"),
        pytest.param("structural", {"gold": 1, "html": 1}, id="structural"),
        pytest.param("faithful", {"gold": 1, "anti": 1}, id="faithful"),
        pytest.param(ANTI, {"anti": 1}, id="faithful-anti"),
    ],
)
def test_each_question_carries_the_documents_of_its_settings(specs, question_type, settings) -> None:
    for spec in (s for s in specs if s.attributes.question_type == question_type):
        assert Counter(d.variant["setting"] for d in spec.documents) == settings, spec.id


def test_retrieved_passages_say_whether_they_are_gold_and_hold_an_answer(specs) -> None:
    extractive = [s for s in specs if s.attributes.question_type == "extractive"]
    retrieved = [d for s in extractive for d in s.documents if d.variant["setting"] in ("bm25", "released_bm25")]
    assert {d.role for d in retrieved} == {"supporting", "partial"}
    assert {type(d.variant["answer_bearing"]) for d in retrieved} == {bool}
    gold_texts = {s.id: s.documents[0].text for s in extractive}
    for s in extractive:
        for d in s.documents[1:]:
            assert (d.role == "supporting") == (d.text == gold_texts[s.id]), (s.id, d.doc_id)


def test_the_build_is_deterministic_and_round_trips_byte_identical(built, tmp_path, engine, second_engine) -> None:
    again, _ = build_instances(BuildOptions(data=shared_data(), embedder=None, index_dir=None))
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_jsonl(built[0], first)
    write_jsonl(again, second)
    assert first.read_bytes() == second.read_bytes()
    sliced = tmp_path / "slice.jsonl"
    write_jsonl(built[0][::40], sliced)
    assert validate_file(sliced).ok
    assert import_file(engine, sliced).ok
    out1, out2 = tmp_path / "out1.jsonl", tmp_path / "out2.jsonl"
    export_instances(engine, out1)
    assert import_file(second_engine, out1).ok
    export_instances(second_engine, out2)
    assert out1.read_bytes() == out2.read_bytes()
    exported = {spec.id: spec for _, spec in validate_file(out2).instances}
    assert all(exported[p["id"]].model_dump(exclude={"status", "version"}) == _spec(p) for p in built[0][::40])


def _spec(payload: dict) -> dict:
    from core.store.schema import InstanceSpec

    return InstanceSpec.model_validate(payload).model_dump(exclude={"status", "version"})


def test_build_command_writes_and_summarises(tmp_path) -> None:
    out = tmp_path / "d.jsonl"
    result = CliRunner().invoke(app, ["domainrag", "build", "--data", str(shared_data()), "--out", str(out),
                                      "--embedder", "none", "--limit", "2"])
    assert result.exit_code == 0, result.output
    assert "extractive 2" in result.output and "noisy 30" in result.output and "repeated_gold 10" in result.output
    assert "extractive      bm25            top1:" in result.output
    assert validate_file(out).ok and len(out.read_text(encoding="utf-8").splitlines()) == 14


def test_build_command_names_a_missing_folder(tmp_path) -> None:
    result = CliRunner().invoke(app, ["domainrag", "build", "--data", str(tmp_path), "--out", str(tmp_path / "x"),
                                      "--embedder", "none"])
    assert result.exit_code == 1 and "DomainRAG file not found" in result.output
