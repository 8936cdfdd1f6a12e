"""Variants of the published files that must import: compressed bytes (told by content), control characters in text,
other field spellings, lists where a string is usual; and what still fails whole: a bad record by default, a cut or
damaged file always. `--skip-invalid` imports the rest and writes the rejects (line, field, reason)."""

from __future__ import annotations

import bz2
import copy
import gzip
import io
import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, select
from typer.testing import CliRunner

from core.cli import app
from core.ingest.importers import get_importer, import_source, source_record
from core.ingest.io import export_instances, validate_file
from core.store.models import Document, Instance
from tests.importers.conftest import FIXTURES, shared, table_counts

runner = CliRunner()
MINI = FIXTURES.parent / "mini.jsonl"


def _zip(data: bytes, *names: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in names or ("data.json",):
            archive.writestr(name, data)
    return buffer.getvalue()


def _two_gzip_members(data: bytes) -> bytes:
    cut = data.index(b"\n") + 1
    return gzip.compress(data[:cut], mtime=0) + gzip.compress(data[cut:], mtime=0)


PACKED = [
    pytest.param(lambda d: gzip.compress(d, mtime=0), ".gz", id="gzip"),
    pytest.param(lambda d: gzip.compress(d, mtime=0), "", id="gzip-under-the-plain-name"),
    pytest.param(_two_gzip_members, ".gz", id="gzip-two-members"),
    pytest.param(bz2.compress, ".bz2", id="bzip2"),
    pytest.param(lambda d: bz2.compress(d[:40]) + bz2.compress(d[40:]), ".bz2", id="bzip2-two-streams"),
    pytest.param(bz2.compress, ".txt", id="bzip2-named-txt"),
    pytest.param(_zip, ".zip", id="zip"),
    pytest.param(_zip, "", id="zip-under-the-plain-name"),
]
SOURCES = [
    pytest.param("rgb", lambda: FIXTURES / "rgb_en.json", id="rgb-jsonl"),
    pytest.param("followrag", lambda: FIXTURES / "followrag.json", id="followrag-json-array"),
    pytest.param("mmlu", lambda: shared("datasets/mmlu/test/anatomy_test.csv"), id="mmlu-csv"),
    pytest.param("jsonl", lambda: MINI, id="native-jsonl"),
]


@pytest.mark.parametrize(("pack", "suffix"), PACKED)
@pytest.mark.parametrize(("fmt", "source"), SOURCES)
def test_compressed_files_read_like_the_plain_file(fmt, source, pack, suffix, tmp_path) -> None:
    plain: Path = source()
    if (categories := plain.parent.parent / "subject_categories.json").is_file():  # MMLU's categories, by folder
        (tmp_path / categories.name).write_bytes(categories.read_bytes())
    packed = tmp_path / (plain.name + suffix)
    packed.write_bytes(pack(plain.read_bytes()))
    expected = get_importer(fmt).parse(plain)
    got = get_importer(fmt).parse(packed)
    assert got.ok, [str(e) for e in got.errors]
    assert got.instances == expected.instances and expected.instances


def _cut(pack: Callable[[bytes], bytes]) -> Callable[[bytes], bytes]:
    return lambda data: (packed := pack(data))[: len(packed) * 2 // 3]


DAMAGED = [
    pytest.param(_cut(lambda d: gzip.compress(d, mtime=0)), [], "the gzip stream ends early", id="gzip-cut"),
    pytest.param(_cut(bz2.compress), [], "the bzip2 stream ends early", id="bzip2-cut"),
    pytest.param(_cut(_zip), [], "not a readable .zip archive", id="zip-cut"),
    pytest.param(lambda d: _zip(d, "a.json", "b.json"), [], "holds 2 (a.json, b.json)", id="zip-two-files"),
    pytest.param(lambda d: (z := gzip.compress(d, mtime=0))[:12] + bytes(b ^ 0xA5 for b in z[12:60]) + z[60:], [],
                 "not a valid gzip stream", id="gzip-corrupt"),
    pytest.param(lambda d: d[: len(d) // 2], ["--skip-invalid"], "malformed JSON", id="json-array-cut-skip-invalid"),
    pytest.param(lambda d: d.replace(b"},\n", b"}\n", 1), ["--skip-invalid"], ":18: malformed JSON",
                 id="json-array-missing-comma-skip-invalid"),
    pytest.param(lambda d: gzip.compress(d[: len(d) // 2], mtime=0), ["--skip-invalid"], "malformed JSON",
                 id="gzip-of-a-cut-array-skip-invalid"),
]


@pytest.mark.parametrize(("damage", "options", "message"), DAMAGED)
def test_a_cut_or_damaged_file_fails_with_its_position_and_writes_nothing(db_url, tmp_path, damage, options,
                                                                          message) -> None:
    path = tmp_path / "followrag.json"
    path.write_bytes(damage((FIXTURES / "followrag.json").read_bytes()))
    result = runner.invoke(app, ["import", "--format", "followrag", str(path), *options])
    assert result.exit_code == 1, result.output
    assert f"{path}:" in result.output and message in result.output
    assert "nothing imported" in result.output
    assert not (tmp_path / "followrag.json.rejects.jsonl").exists()
    assert "FollowRAG" not in runner.invoke(app, ["stats"]).output


def _ramdocs(line: int = 0) -> dict[str, Any]:
    return json.loads((FIXTURES / "ramdocs.jsonl").read_text(encoding="utf-8").splitlines()[line])


def _rgb(line: int = 0) -> dict[str, Any]:
    return json.loads((FIXTURES / "rgb_en.json").read_text(encoding="utf-8").splitlines()[line])


def _edited(record: dict[str, Any], path: tuple, edit: Callable[[Any], Any]) -> dict[str, Any]:
    record = copy.deepcopy(record)
    target = record
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = edit(target[path[-1]])
    return record


CONTROLLED = [
    pytest.param("ramdocs", _edited(_ramdocs(), ("documents", 0, "text"), lambda t: t[:5] + "\x00\x00" + t[5:] + "\x00"),
                 {"documents[0].text": 3}, id="nul-in-a-document"),
    pytest.param("rgb", _edited(_rgb(), ("query",), lambda t: "\x1b[1m" + t + "\x1b[0m\x07"), {"query": 3},
                 id="terminal-escapes-in-the-question"),
    pytest.param("ramdocs", _edited(_ramdocs(), ("disambig_entity",), lambda _: ["Mar\x00low", "x\x0b"]),
                 {"disambig_entity[0]": 1, "disambig_entity[1]": 1}, id="nul-in-a-field-kept-verbatim"),
    pytest.param("rgb", _edited(_edited(_rgb(1), ("negative", 1), lambda t: t + "\x0c\x7f"), ("answer",),
                                lambda a: a + "\x01"), {"answer": 1, "negative[1]": 2}, id="several-fields"),
]


@pytest.mark.parametrize(("fmt", "record", "removed"), CONTROLLED)
def test_control_characters_are_removed_counted_and_kept_raw(engine, tmp_path, fmt, record, removed) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    report = import_source(engine, path, fmt=fmt)
    assert report.ok, [str(e) for e in report.errors]
    assert {w.field: int(w.message.split()[1]) for w in report.warnings} == removed
    with Session(engine) as session:
        texts = [*session.exec(select(Document.text)).all(), *session.exec(select(Instance.query)).all()]
    assert texts and not any(ch in text for text in texts for ch in "\x00\x01\x07\x0b\x0c\x1b\x7f")
    exported = tmp_path / "out.jsonl"
    export_instances(engine, exported)
    (_, spec), = validate_file(exported).instances
    assert spec.metadata["removed_controls"] == removed
    assert source_record(spec) == record


def _crag(alternatives: Any) -> dict[str, Any]:
    record = json.loads((FIXTURES / "crag.jsonl").read_text(encoding="utf-8").splitlines()[0])
    return {("alternative_answers" if k == "alt_ans" else k): (alternatives if k == "alt_ans" else v)
            for k, v in record.items()}


def _hotpotqa(answer: Any) -> dict[str, Any]:
    record = json.loads((FIXTURES.parent / "hotpotqa" / "hotpot_dev_distractor_v1.json").read_text(encoding="utf-8"))[1]
    return record | {"answer": answer}


def _followrag(answer: Any) -> dict[str, Any]:
    return json.loads((FIXTURES / "followrag.json").read_text(encoding="utf-8"))[0] | {"answer_gold": answer}


VARIANTS = [
    pytest.param("followrag", _followrag(["Lake Orm", "Orm"]),
                 lambda s: [a.text for a in s.reference.answers] == ["Lake Orm", "Orm"], id="followrag-answer-list"),
    pytest.param("followrag", _followrag(["Lake Orm"]), lambda s: [a.text for a in s.reference.answers] == ["Lake Orm"],
                 id="followrag-answer-list-of-one"),
    pytest.param("rgb", _edited(_rgb(1) | {"positive_wrong": ["Tomas Reed won the 2030 Harbour Chess Open ..."]},
                                ("answer",), lambda a: a) | {"fakeanswer": ["Tomas Reed", "Reed"]},
                 lambda s: s.reference.wrong_answers == ["Tomas Reed", "Reed"], id="rgb-fakeanswer-list"),
    pytest.param("crag", _crag("[]"), lambda s: s.reference.answers[0].aliases == [], id="crag-alternatives-as-text"),
    pytest.param("crag", _crag("['ten', '10 years']"), lambda s: s.reference.answers[0].aliases == ["ten", "10 years"],
                 id="crag-alternatives-as-python-list-text"),
    pytest.param("crag", _crag(["ten"]), lambda s: s.reference.answers[0].aliases == ["ten"],
                 id="crag-alternatives-as-list"),
    pytest.param("crag", _crag("about ten"), lambda s: s.reference.answers[0].aliases == ["about ten"],
                 id="crag-alternatives-as-one-answer"),
    pytest.param("crag", _crag(["ten"]) | {"answer": ["10 years", "a decade"]},
                 lambda s: (s.reference.answers[0].text, s.reference.answers[0].aliases) == ("10 years", ["a decade", "ten"]),
                 id="crag-answer-list"),
    pytest.param("crag", _crag([]) | {"answer": ["10 years"]}, lambda s: s.reference.answers[0].text == "10 years",
                 id="crag-answer-list-of-one"),
    pytest.param("ramdocs", _edited(_ramdocs(), ("documents", 0, "answer"), lambda a: [a, "Marlow Bay"]),
                 lambda s: s.documents[0].variant["answer"][1] == "Marlow Bay", id="ramdocs-document-answer-list"),
    pytest.param("hotpotqa", _hotpotqa(["Chief of Protocol", "Chief of Protocol of the United States"]),
                 lambda s: [s.reference.answers[0].text, *s.reference.answers[0].aliases] ==
                 ["Chief of Protocol", "Chief of Protocol of the United States"], id="hotpotqa-answer-list"),
    pytest.param("hotpotqa", _hotpotqa(["yes", "no"]), lambda s: s.reference.answer_type == "short",
                 id="hotpotqa-answer-list-is-not-one-boolean"),
]


@pytest.mark.parametrize(("fmt", "record", "mapped"), VARIANTS)
def test_published_variants_are_read_with_every_element(tmp_path, fmt, record, mapped) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    parsed = get_importer(fmt).parse(path)
    assert parsed.ok, [str(e) for e in parsed.errors]
    (_, spec), = parsed.instances
    assert mapped(spec)
    assert source_record(spec) == record


def _five_rgb(tmp_path: Path) -> Path:
    records = [_rgb(i % 3) | {"id": i} for i in range(5)]
    records[1] = {k: v for k, v in records[1].items() if k != "query"}
    records[3]["positive"] = "not a list"
    path = tmp_path / "rgb_en.json"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


SKIPPING = [
    pytest.param([], 1, 0, None, id="default-imports-nothing"),
    pytest.param(["--skip-invalid"], 0, 3, "rgb_en.json.rejects.jsonl", id="skip-invalid"),
    pytest.param(["--skip-invalid", "--rejects", "{tmp}/out/left.jsonl"], 0, 3, "out/left.jsonl",
                 id="skip-invalid-rejects-elsewhere"),
]


@pytest.mark.parametrize(("options", "exit_code", "created", "rejects"), SKIPPING)
def test_skip_invalid_imports_the_rest_and_lists_the_rejects(db_url, engine, tmp_path, options, exit_code, created,
                                                             rejects) -> None:
    path = _five_rgb(tmp_path)
    (tmp_path / "out").mkdir()
    before = table_counts(engine)
    args = [o.replace("{tmp}", str(tmp_path)) for o in options]
    result = runner.invoke(app, ["import", "--format", "rgb", str(path), *args])
    assert result.exit_code == exit_code, result.output
    assert (f"{path}:2: query: missing" in result.output) is (rejects is None)
    assert table_counts(engine)["Instance"] == before["Instance"] + created
    if rejects is None:
        assert "nothing imported" in result.output and not list(tmp_path.rglob("*.rejects.jsonl"))
        return
    rows = [json.loads(line) for line in (tmp_path / rejects).read_text(encoding="utf-8").splitlines()]
    assert [(r["line"], r["field"].partition(".")[0]) for r in rows] == [(2, "query"), (4, "positive"), (4, "positive")]
    assert all(want in r["reason"] for r, want in zip(rows, ("missing", "valid list", "valid list"), strict=True)), rows
    assert f"imported {created} new" in result.output and "left out 2 invalid record(s)" in result.output
