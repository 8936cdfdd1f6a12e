"""LIT-RAGBench (en.jsonl / ja.jsonl): positive and negative chunks, qa_type aspects, abstention items."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import field_validator

from core.ingest.importers.base import Importer, Source, doc_id, placed
from core.language import cjk_language
from core.store.schema import DocumentSpec, InstanceSpec

CATEGORIES = {"I": "Integration", "R": "Reasoning", "L": "Logic", "T": "Table", "A": "Abstention"}
TEXT_CHUNKS = "text_chunks"  # metadata.layout: chunks are plain strings (ja.jsonl), not {title, content} objects
_HTML = re.compile(r"<table\b|^\s*<(!doctype html|html|body|section|div|h\d|p|ul|table)\b", re.IGNORECASE)
_LINE_BREAK = re.compile(r"\n|/n")  # ja.jsonl writes some markdown table rows with a literal '/n'
MIN_TABLE_ROWS = 3
MAX_CSV_FIELD = 40  # average characters per field of a csv row; prose lines with commas are longer


class Chunk(Source):
    title: str
    content: str


class LitRecord(Source):
    question: str
    answer: str
    reasoning_content: str
    qa_type: list[str]
    positive_chunk_list: list[Chunk | str]
    negative_chunk_list: list[Chunk | str]

    @field_validator("qa_type")
    @classmethod
    def _known_codes(cls, codes: list[str]) -> list[str]:
        if not codes:
            raise ValueError("needs at least one aspect code")
        if unknown := [c for c in codes if c[:1] not in CATEGORIES or c[1:2] != "_"]:
            prefixes = ", ".join(f"{k}_" for k in CATEGORIES)
            raise ValueError(f"unknown aspect code(s) {unknown}; codes start with {prefixes}")
        return codes


def _csv_like(line: str) -> bool:
    """A line that reads as a csv row: 3+ short fields, not a sentence."""
    fields = line.count(",") + 1
    return fields >= 3 and len(line) / fields <= MAX_CSV_FIELD and not line.rstrip().endswith((".", "。"))


def _csv_run(lines: list[str]) -> int:
    """The longest run of consecutive csv-like lines whose comma counts stay within 2 of the run's first."""
    best = run = 0
    first = -1
    for line in lines:
        if _csv_like(line) and run and abs(line.count(",") - first) <= 2:
            run += 1
        elif _csv_like(line):
            run, first = 1, line.count(",")
        else:
            run = 0
        best = max(best, run)
    return best


def content_type(text: str) -> str:
    """'html', 'markdown_table' or 'csv' when a chunk is recognisably (or holds) a table, else 'text'."""
    if _HTML.search(text):
        return "html"
    lines = [line for line in _LINE_BREAK.split(text) if line.strip()]
    if sum(line.count("|") >= 2 for line in lines) >= MIN_TABLE_ROWS:
        return "markdown_table"
    return "csv" if _csv_run(lines) >= MIN_TABLE_ROWS else "text"


def _chunk(chunk: Chunk | str) -> tuple[str, str]:
    return ("", chunk) if isinstance(chunk, str) else (chunk.title, chunk.content)


class LitRagBench(Importer):
    name = "lit-ragbench"
    title = "LIT-RAGBench"
    domain = "LIT-RAGBench"
    Record = LitRecord

    def documents(self, iid: str, field: str, chunks: list[Chunk | str], role: str) -> list[dict[str, Any]]:
        """One document per non-empty chunk, typed by content."""
        return [
            {"doc_id": doc_id(iid, f"{field}[{i}]"), "title": title, "text": text, "role": role,
             "content_type": content_type(text)}
            for i, (title, text) in enumerate(map(_chunk, chunks)) if text.strip()
        ]

    def build(self, record: LitRecord, index: int, path: Path) -> dict[str, Any]:
        language = "ja" if cjk_language(record.question + record.reasoning_content) else "en"
        iid = f"lit-ragbench/{language}/{index}"
        abstention = any(code.startswith("A_") for code in record.qa_type)
        chunks = record.positive_chunk_list + record.negative_chunk_list
        return {
            "id": iid, "domain": self.domain, "query": record.question, "protocol": "reference_qa",
            "language": language,
            "documents": self.documents(iid, "positive_chunk_list", record.positive_chunk_list, "supporting")
            + self.documents(iid, "negative_chunk_list", record.negative_chunk_list, "noise"),
            "reference": {"answer_type": "unanswerable" if abstention else "short",
                          "answers": [{"text": record.answer}], "reasoning": record.reasoning_content},
            "attributes": {"categories": list(dict.fromkeys(CATEGORIES[c[0]] for c in record.qa_type)),
                           "aspects": record.qa_type},
            "metadata": {"layout": TEXT_CHUNKS} if any(isinstance(c, str) for c in chunks) else {},
        }

    def typed(self, spec: InstanceSpec) -> dict[str, Any]:
        assert spec.reference is not None, "this source's instances always carry a reference"
        text_chunks = spec.metadata.get("layout") == TEXT_CHUNKS

        def render(doc: DocumentSpec) -> Any:
            return doc.text if text_chunks else {"title": doc.title, "content": doc.text}

        return {
            "question": spec.query, "answer": spec.reference.answers[0].text,
            "reasoning_content": spec.reference.reasoning, "qa_type": spec.attributes.aspects,
            "positive_chunk_list": placed(spec, "positive_chunk_list", render),
            "negative_chunk_list": placed(spec, "negative_chunk_list", render),
        }
