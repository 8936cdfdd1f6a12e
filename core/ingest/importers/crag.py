"""CRAG (Meta KDD Cup 2024, task 1 & 2): a question with 5 web search results, each a full HTML page."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, field_validator

from core.ingest.importers.base import Importer, Source, doc_id, placed
from core.store.schema import DocumentSpec, InstanceSpec

FALSE_PREMISE = "false_premise"  # the answer is "invalid question": the right response rejects the premise


class Page(Source):
    page_name: str
    page_url: str
    page_snippet: str
    page_result: str


class CragRecord(Source):
    interaction_id: str
    query_time: str
    domain: str
    question_type: str
    static_or_dynamic: str
    query: str
    answer: str | Annotated[list[str], Field(min_length=1)]  # a list: every element an accepted answer
    alt_ans: list[str]
    search_results: list[Page]

    @field_validator("alt_ans", mode="before")
    @classmethod
    def _listed(cls, value: Any) -> Any:
        """example_data/dev_data.jsonl.bz2 writes the list as its Python text ("[]", "['a', 'b']")."""
        if not isinstance(value, str):
            return value
        try:
            listed = ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return [value]
        return listed if isinstance(listed, list) else [value]


def _page(iid: str, i: int, page: Page) -> dict[str, Any] | None:
    html = bool(page.page_result.strip())
    text = page.page_result if html else page.page_snippet  # a page not fetched still has its snippet
    if not text.strip():
        return None
    return {"doc_id": doc_id(iid, f"search_results[{i}]"), "title": page.page_name, "text": text,
            "source": page.page_url, "content_type": "html" if html else "text", "role": "partial"}


class CRAG(Importer):
    name = "crag"
    title = "CRAG (task 1 & 2 web pages)"
    domain = "CRAG"
    Record = CragRecord
    ALIASES = {"alternative_answers": "alt_ans"}  # the spelling of example_data/dev_data.jsonl.bz2

    def build(self, record: CragRecord, index: int, path: Path) -> dict[str, Any]:
        iid = f"crag/{record.interaction_id}"
        first, *more = [record.answer] if isinstance(record.answer, str) else record.answer
        pages = [_page(iid, i, page) for i, page in enumerate(record.search_results)]
        return {
            "id": iid, "domain": self.domain, "query": record.query, "protocol": "reference_qa", "language": "en",
            "documents": [p for p in pages if p],
            "reference": {"answer_type": "unanswerable" if record.question_type == FALSE_PREMISE else "short",
                          "answers": [{"text": first, "aliases": [*more, *record.alt_ans]}]},
            "attributes": {"question_type": record.question_type, "categories": [record.domain],
                           "aspects": [record.static_or_dynamic], "date": record.query_time},
        }

    def typed(self, spec: InstanceSpec) -> dict[str, Any]:
        assert spec.reference is not None, "this source's instances always carry a reference"
        def render(doc: DocumentSpec) -> dict[str, Any]:
            field = "page_result" if doc.content_type == "html" else "page_snippet"
            return {"page_name": doc.title, "page_url": doc.source, field: doc.text}

        answer, attributes = spec.reference.answers[0], spec.attributes
        return {
            "interaction_id": spec.id.removeprefix("crag/"), "query_time": attributes.date,
            "domain": attributes.categories[0], "question_type": attributes.question_type,
            "static_or_dynamic": attributes.aspects[0], "query": spec.query, "answer": answer.text,
            "alt_ans": answer.aliases, "search_results": placed(spec, "search_results", render, hole={}),
        }
