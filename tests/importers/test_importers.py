"""Every importer, on real shared slices and on the fixtures: lossless, byte-stable round trips, atomic rejection."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, func, select

from core.ingest.importers import get_importer, import_source, source_record
from core.ingest.io import export_instances, import_file, validate_file
from core.store.models import Document, Instance
from tests.importers.conftest import FIXTURES, shared, table_counts, write_records

SLICE = 50
MINI = Path(__file__).resolve().parents[1] / "fixtures" / "mini.jsonl"


def _blank(text: Any) -> bool:
    return not (isinstance(text, str) and text.strip())


def _texts(items: list, key: str | None = None) -> int:
    """How many non-blank passages a source list holds (nested lists flattened); blank ones are no documents."""
    count = 0
    for item in items:
        if isinstance(item, list):
            count += _texts(item, key)
        else:
            count += not _blank(item[key] if key else item)
    return count


def _domainrag_docs(r: dict) -> int:
    singles = [r[k] for k in ("positive_reference", "counterfact_reference") if isinstance(r.get(k), dict)]
    lists = [r[k] for k in ("positive_reference", "positive_references", "noisy_reference", "referred_docs")
             if isinstance(r.get(k), list)]
    return _texts(singles, "contents") + sum(_texts(x, "contents") for x in lists) + ("positive_html" in r)


def _crag_docs(r: dict) -> int:
    return sum(not (_blank(p["page_result"]) and _blank(p["page_snippet"])) for p in r["search_results"])


def _drop(key: str) -> Callable[[Any], Any]:
    return lambda r: {k: v for k, v in r.items() if k != key}


def _set(path: tuple, value: Any) -> Callable[[Any], Any]:
    def mutate(r: Any) -> Any:
        target = r
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value
        return r
    return mutate


@dataclass(frozen=True)
class Case:
    """One importer on one source file: how to count its documents and how to corrupt one record."""

    fmt: str
    path: Callable[[], Path]
    layout: str
    documents: Callable[[Any], int]
    corrupt: Callable[[Any], Any]
    field: str
    message: str
    leftovers: frozenset[str] = field(default_factory=frozenset)
    constraints: Callable[[Any], int] = lambda r: 0
    real: bool = True


def _lit(name: str) -> Case:
    return Case("lit-ragbench", lambda: shared(f"datasets/lit-ragbench/{name}"), "jsonl",
                lambda r: _texts(r["positive_chunk_list"] + r["negative_chunk_list"],
                                 None if name == "ja.jsonl" else "content"),
                _drop("answer"), "answer", "missing")


def _domainrag(name: str, leftovers: set[str], corrupt=None, where=("question", "missing")) -> Case:
    return Case("domainrag", lambda: shared(f"datasets/domainrag/{name}"), "jsonl", _domainrag_docs,
                corrupt or _drop("question"), *where, frozenset(leftovers))


def _fixture(fmt: str, name: str, layout: str, documents, corrupt, where, leftovers=(), constraints=None) -> Case:
    return Case(fmt, lambda: FIXTURES / name, layout, documents, corrupt, *where, frozenset(leftovers),
                constraints or (lambda r: 0), real=False)


CASES = [
    pytest.param(_lit("en.jsonl"), id="lit-ragbench-en"),
    pytest.param(_lit("ja.jsonl"), id="lit-ragbench-ja"),
    pytest.param(Case("hotpotqa", lambda: shared("datasets/hotpotqa-dev-distractor/hotpotqa_dev_distractor_500.jsonl"),
                      "jsonl", lambda r: len(r["context"]["title"]),
                      _set(("supporting_facts", "sent_id", 0), 99), "supporting_facts.sent_id[0]", "has no sentence 99",
                      frozenset({"supporting_facts"})), id="hotpotqa"),
    pytest.param(Case("mmlu", lambda: shared("datasets/mmlu/ragstress_eval700_stratified_seed42.jsonl"), "jsonl",
                      lambda r: 0, _set(("answer",), "E"), "answer", "not one of the choice letters A, B, C, D"),
                 id="mmlu-eval700"),
    pytest.param(Case("mmlu", lambda: shared("datasets/mmlu/test/anatomy_test.csv"), "csv", lambda r: 0,
                      lambda r: r[:5], "", "expected 6 columns"), id="mmlu-csv"),
    pytest.param(Case("medqa", lambda: shared("datasets/medqa-usmle-4opt/medqa_us_4opt_test_first500.jsonl"), "jsonl",
                      lambda r: 0, _set(("options", "E"), None), "options.E", "input should be a valid string",
                      frozenset({"metamap_phrases"})), id="medqa-usmle"),
    pytest.param(Case("medqa", lambda: shared("datasets/medqa-mcmle-pulse150/medqa_mcmle_test_sample150_5opt.jsonl"),
                      "jsonl", lambda r: 0, _set(("answer_idx",), "F"), "answer_idx", "'F' is not one of the options",
                      frozenset({"row", "source_question_field", "source_reference_answer", "type"})),
                 id="medqa-mcmle"),
    pytest.param(_domainrag("extractive_qa.jsonl", {"positive_reference"}), id="domainrag-extractive"),
    pytest.param(_domainrag("conversational_qa.jsonl", {"history_qa", "positive_reference"},
                            _set(("history_qa", 0, "answers"), "one"), ("history_qa[0].answers",
                                                                         "input should be a valid list")),
                 id="domainrag-conversational"),
    pytest.param(_domainrag("structural_qa.jsonl", {"id"}), id="domainrag-structural"),
    pytest.param(_domainrag("faithful_qa.jsonl", {"commonsense", "positive_reference", "counterfact_reference"},
                            _drop("counterfact_answers"), ("counterfact_answers", "missing")), id="domainrag-faithful"),
    pytest.param(_domainrag("time_sensitive_qa.jsonl", {"positive_reference"}, _set(("date",), 2023),
                            ("date", "input should be a valid string")), id="domainrag-time-sensitive"),
    pytest.param(_domainrag("multidoc_qa.jsonl", {"positive_references", "referred_docs"}), id="domainrag-multidoc"),
    pytest.param(_domainrag("noisy_qa_v1.jsonl", {"positive_reference", "noisy_reference"},
                            _set(("noisy_reference", 2, "contents"), None),
                            ("noisy_reference[2].contents", "input should be a valid string")), id="domainrag-noisy"),
    pytest.param(Case("ifeval", lambda: shared("ifeval/input_data.jsonl"), "jsonl", lambda r: 0,
                      _set(("instruction_id_list", 0), "not:an_instruction"), "instruction_id_list[0]",
                      "unknown checker 'not:an_instruction'", frozenset(),
                      lambda r: len(r["instruction_id_list"])), id="ifeval"),
    pytest.param(_fixture("rgb", "rgb_en.json", "jsonl", lambda r: _texts(r["positive"] + r["negative"]),
                          _drop("query"), ("query", "missing")), id="rgb-en"),
    pytest.param(_fixture("rgb", "rgb_zh_int.json", "jsonl", lambda r: _texts(r["positive"] + r["negative"]),
                          _set(("positive", 1), "not a list"), ("positive", "valid list"), {"asnwer1", "answer2"}),
                 id="rgb-zh-int"),
    pytest.param(_fixture("rgb", "rgb_en_fact.json", "jsonl",
                          lambda r: _texts(r["positive"] + r["negative"] + r["positive_wrong"]),
                          _set(("positive_wrong",), "x"), ("positive_wrong", "valid list")), id="rgb-en-fact"),
    pytest.param(_fixture("ramdocs", "ramdocs.jsonl", "jsonl", lambda r: _texts(r["documents"], "text"),
                          _set(("documents", 1, "type"), "rumour"), ("documents[1].type", "input should be 'correct'"),
                          {"disambig_entity"}), id="ramdocs"),
    pytest.param(_fixture("crag", "crag.jsonl", "jsonl", _crag_docs, _drop("alt_ans"), ("alt_ans", "missing"),
                          {"split", "popularity", "search_results"}), id="crag"),
    pytest.param(_fixture("followrag", "followrag.json", "json", lambda r: _texts(r["passages"], "content"),
                          _set(("kwargs", 0), {"keywords": "library"}),
                          ("kwargs[0].keywords", "input should be a valid list"), {"prompt", "question", "passages"},
                          lambda r: len(r["instruction_id_list"])), id="followrag"),
]


def _records(case: Case, limit: int | None = SLICE) -> list:
    records, errors = get_importer(case.fmt).read(case.path())
    assert not errors
    return [raw for _, raw in records][:limit]


def _slice(case: Case, tmp_path: Path, records: list) -> tuple[Path, list[int]]:
    """The records written to a file named like the source (MMLU reads the subject from it)."""
    source = case.path()
    folder = tmp_path / "slice"
    folder.mkdir(exist_ok=True)
    if case.fmt == "mmlu" and (categories := source.parent.parent / "subject_categories.json").is_file():
        shutil.copy(categories, folder / categories.name)
    path = folder / source.name
    return path, write_records(path, records, case.layout)


def _document_counts(engine) -> tuple[int, int]:
    with Session(engine) as session:
        return (session.exec(select(func.count()).select_from(Instance)).one(),
                session.exec(select(func.count()).select_from(Document)).one())


def _check_lossless(case: Case, records: list, path: Path) -> list:
    """The file parses; every record comes back exactly from its instance; documents and constraints all kept."""
    parsed = get_importer(case.fmt).parse(path)
    assert parsed.ok, parsed.errors[:5]
    specs = [spec for _, spec in parsed.instances]
    assert [source_record(spec) for spec in specs] == records
    assert [len(spec.documents) for spec in specs] == [case.documents(r) for r in records]
    assert [len(spec.constraints) for spec in specs] == [case.constraints(r) for r in records]
    leftovers = set().union(*(spec.metadata.get("source", {}) for spec in specs))
    assert leftovers <= case.leftovers, f"fields kept verbatim instead of typed: {leftovers - case.leftovers}"
    return specs


def _check_import_counts(case: Case, records: list, path: Path, engine) -> None:
    assert import_source(engine, path, fmt=case.fmt).ok
    assert _document_counts(engine) == (len(records), sum(case.documents(r) for r in records))


@pytest.mark.parametrize("case", CASES)
def test_import_is_lossless_and_round_trips_byte_identical(case, engine, second_engine, tmp_path) -> None:
    records = _records(case)
    path, _ = _slice(case, tmp_path, records)
    specs = _check_lossless(case, records, path)
    _check_import_counts(case, records, path, engine)
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    export_instances(engine, first)
    assert validate_file(first).ok
    assert import_file(second_engine, first).ok
    export_instances(second_engine, second)
    assert first.read_bytes() == second.read_bytes()
    exported = {spec.id: spec for _, spec in validate_file(second).instances}
    assert [source_record(exported[spec.id]) for spec in specs] == records


@pytest.mark.parametrize("case", CASES)
def test_one_corrupt_record_is_rejected_by_line_and_field_and_writes_nothing(case, engine, tmp_path) -> None:
    records = _records(case)
    bad = min(2, len(records) - 1)
    records[bad] = case.corrupt(records[bad])
    path, lines = _slice(case, tmp_path, records)
    assert import_file(engine, MINI).ok
    before = table_counts(engine)
    report = import_source(engine, path, fmt=case.fmt)
    assert not report.ok and not report.created
    assert {e.line for e in report.errors} == {lines[bad]}, report.errors
    assert any(e.field.startswith(case.field) and case.message in e.message for e in report.errors), report.errors
    assert table_counts(engine) == before


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in CASES if c.values[0].real])
def test_full_real_files_are_lossless_and_import_whole(case, engine) -> None:
    records = _records(case, limit=None)
    _check_lossless(case, records, case.path())
    _check_import_counts(case, records, case.path(), engine)


@pytest.mark.slow
def test_every_mmlu_subject_csv_is_lossless_with_its_category() -> None:
    folder = shared("datasets/mmlu/test")
    mmlu, total = get_importer("mmlu"), 0
    for path in sorted(folder.glob("*_test.csv")):
        parsed = mmlu.parse(path)
        assert parsed.ok, (path.name, parsed.errors[:3])
        specs = [spec for _, spec in parsed.instances]
        assert [source_record(s) for s in specs] == [raw for _, raw in mmlu.read(path)[0]]
        assert all(len(s.attributes.categories) == 1 for s in specs), path.name
        total += len(specs)
    assert total == 14042
