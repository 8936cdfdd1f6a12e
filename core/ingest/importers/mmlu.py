"""MMLU: the original header-less CSV per subject (question, A, B, C, D, answer) and JSONL selections of it."""

from __future__ import annotations

import json
import string
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from core.ingest.importers.base import Importer, Raw, RecordError, Source, read_csv, read_json, validated
from core.ingest.io import LineError
from core.store.schema import InstanceSpec

CSV = "csv"  # metadata.layout of instances read from a subject CSV
CSV_COLUMNS = ("question", "A", "B", "C", "D", "answer")
CATEGORIES_FILE = "subject_categories.json"
LETTERS = tuple(string.ascii_uppercase)


class CsvRow(Source):
    question: str
    A: str
    B: str
    C: str
    D: str
    answer: str


class SelectionRecord(Source):
    id: str
    subject: str
    row: int
    category: str | None = None
    question: str
    choices: list[str]
    answer: str


@cache
def _categories(folder: Path) -> dict[str, dict[str, str]]:
    for candidate in (folder / CATEGORIES_FILE, folder.parent / CATEGORIES_FILE):
        if candidate.is_file():
            return json.loads(candidate.read_text(encoding="utf-8"))
    return {}


def subject_of(path: Path) -> str:
    """The subject a CSV file holds: 'anatomy' for anatomy_test.csv (and anatomy_test.csv.gz)."""
    stem = path.name.split(".")[0]
    for split in ("_test", "_dev", "_val"):
        stem = stem.removesuffix(split)
    return stem


class MMLU(Importer):
    name = "mmlu"
    title = "MMLU (CSV per subject, or a JSONL selection)"
    domain = "MMLU"

    def read(self, path: Path) -> tuple[list[tuple[int, Raw]], list[LineError]]:
        return read_csv(path) if ".csv" in (s.lower() for s in path.suffixes) else read_json(path)

    def record(self, raw: Raw) -> BaseModel:
        if not isinstance(raw, list):
            return validated(SelectionRecord, raw)
        if len(raw) != len(CSV_COLUMNS):
            raise RecordError(("", f"expected {len(CSV_COLUMNS)} columns ({', '.join(CSV_COLUMNS)}), got {len(raw)}"))
        return validated(CsvRow, dict(zip(CSV_COLUMNS, raw, strict=True)))

    def build(self, record: CsvRow | SelectionRecord, index: int, path: Path) -> dict[str, Any]:
        if isinstance(record, CsvRow):
            subject, row, choices = subject_of(path), index, [record.A, record.B, record.C, record.D]
            category = _categories(path.resolve().parent).get(subject, {}).get("category")
        else:
            subject, row, choices, category = record.subject, record.row, record.choices, record.category
        if len(choices) > len(LETTERS):
            raise RecordError(("choices", f"{len(choices)} choices: at most {len(LETTERS)}, one per letter A to Z"))
        letters = LETTERS[: len(choices)]
        if record.answer not in letters:
            raise RecordError(("answer", f"{record.answer!r} is not one of the choice letters {', '.join(letters)}"))
        return {
            "id": f"mmlu/{subject}/{row}", "domain": self.domain, "query": record.question,
            "protocol": "reference_qa", "language": "en",
            "reference": {"answer_type": "mcq", "choices": dict(zip(letters, choices, strict=True)),
                          "answer_key": record.answer},
            "attributes": {"categories": [category] if category else [], "aspects": [subject]},
            "metadata": {"layout": CSV} if isinstance(record, CsvRow) else {},
        }

    def typed(self, spec: InstanceSpec) -> Raw:
        assert spec.reference is not None, "this source's instances always carry a reference"
        reference = spec.reference
        if spec.metadata.get("layout") == CSV:
            return [spec.query, *reference.choices.values(), reference.answer_key]
        subject, _, row = spec.id.removeprefix("mmlu/").rpartition("/")
        typed = {"id": f"{subject}/{row}", "subject": subject, "row": int(row), "question": spec.query,
                 "choices": list(reference.choices.values()), "answer": reference.answer_key}
        return typed | ({"category": spec.attributes.categories[0]} if spec.attributes.categories else {})
