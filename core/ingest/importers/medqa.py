"""MedQA (USMLE English 4-option, MCMLE Chinese 5-option): options by letter, answer_idx, answer text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.ingest.importers.base import Importer, RecordError, Source
from core.language import cjk_language
from core.store.schema import InstanceSpec


class MedQARecord(Source):
    question: str
    options: dict[str, str]
    answer_idx: str
    answer: str
    meta_info: str | None = None


class MedQA(Importer):
    name = "medqa"
    title = "MedQA (USMLE 4-option, MCMLE 5-option)"
    domain = "MedQA"
    Record = MedQARecord

    def build(self, record: MedQARecord, index: int, path: Path) -> dict[str, Any]:
        if record.answer_idx not in record.options:
            known = ", ".join(record.options)
            raise RecordError(("answer_idx", f"{record.answer_idx!r} is not one of the options {known}"))
        if record.answer != record.options[record.answer_idx]:
            raise RecordError(("answer", f"does not match options.{record.answer_idx}"))
        language = cjk_language(record.question) or "en"
        return {
            "id": f"medqa/{language}/{index}", "domain": self.domain, "query": record.question,
            "protocol": "reference_qa", "language": language,
            "reference": {"answer_type": "mcq", "choices": record.options, "answer_key": record.answer_idx,
                          "answers": [{"text": record.answer}]},
            "attributes": {"categories": [record.meta_info] if record.meta_info else []},
        }

    def typed(self, spec: InstanceSpec) -> dict[str, Any]:
        assert spec.reference is not None, "this source's instances always carry a reference"
        reference = spec.reference
        typed = {"question": spec.query, "options": reference.choices, "answer_idx": reference.answer_key,
                 "answer": reference.answers[0].text}
        return typed | ({"meta_info": spec.attributes.categories[0]} if spec.attributes.categories else {})
