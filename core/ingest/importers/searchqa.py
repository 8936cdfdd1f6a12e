"""SearchQA in its original layout (nyu-dl/dl4ir-searchQA): one JSON object per Jeopardy! question (`question`,
`answer`, `search_results[{snippet, title, url, related_links}]`, plus `category`, `air_date`, `value`, `round`,
`show_number`, `id`), one file per question in a split folder; read as a folder of such files, or one file holding one
record or a JSON array of them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from core.ingest.importers.base import Importer, LineError, Raw, RecordError, Source, doc_id, read_json
from core.ingest.importers.triviaqa import whole_json
from core.store.schema import InstanceSpec


class SearchResultRecord(Source):
    snippet: str | None = None
    title: str | None = None
    url: str | None = None


class SearchQARecord(Source):
    id: int | str
    category: str = ""
    question: str
    answer: str
    search_results: list[SearchResultRecord]


def answer_forms(answer: str) -> list[str]:
    """The Jeopardy! answer and the forms it accepts: an optional part in parentheses left out or kept ('(Lou) Gehrig'
    -> 'Gehrig', 'Lou Gehrig'), a leading article and surrounding quotes left out ('the "Mystery Train"' -> 'Mystery
    Train')."""
    forms = [answer]
    if "(" in answer:
        forms += [re.sub(r"\s*\([^)]*\)\s*", " ", answer).strip(), re.sub(r"[()]", "", answer).strip()]
    for form in list(forms):
        bare = re.sub(r"^(?:the|a|an)\s+", "", form, flags=re.IGNORECASE).strip().strip('"').strip()
        forms.append(bare)
    return [f for f in dict.fromkeys(" ".join(f.split()) for f in forms) if f]


def _one_file(path: Path) -> tuple[list[tuple[int, Raw]], list[LineError]]:
    """One question file (a JSON object), or a JSON array of them."""
    text, problems = whole_json(path)
    if problems:
        return [], problems
    value = json.loads(text)
    return read_json(path) if isinstance(value, list) else ([(1, value)], [])


class SearchQA(Importer):
    name = "searchqa"
    title = "SearchQA (original per-question JSON with search snippets)"
    domain = "SearchQA"
    Record = SearchQARecord
    one_file = False

    def files(self, path: Path) -> list[Path]:
        """The question files read: the folder's *.json files by name, or the one file."""
        return sorted(Path(path).glob("*.json")) if Path(path).is_dir() else [Path(path)]

    def read(self, path: Path) -> tuple[list[tuple[int, Raw]], list[LineError]]:
        records: list[tuple[int, Raw]] = []
        errors: list[LineError] = []
        for file in self.files(path):
            found, problems = _one_file(file)
            records += found
            errors += [self._named(e, file, path) for e in problems]
        return records, errors

    def _named(self, error: LineError, file: Path, path: Path) -> LineError:
        """The error with the question file named when a folder is read."""
        return replace(error, message=f"{file.name}: {error.message}") if Path(path).is_dir() else error

    def mapped(self, records: list[tuple[int, Raw]], path: Path) -> Iterator[tuple[int, dict[str, Any] | list[LineError]]]:
        files = self.files(path)
        for index, (line, item) in enumerate(super().mapped(records, path)):
            named = [self._named(e, files[index], path) for e in item] if isinstance(item, list) and \
                len(files) == len(records) else item
            yield line, named

    def build(self, record: SearchQARecord, index: int, path: Path) -> dict[str, Any]:
        iid = f"searchqa/{record.id}"
        documents = [{"doc_id": doc_id(iid, f"search_results[{i}]"), "title": r.title or "", "text": r.snippet,
                      "source": r.url or "", "role": "supporting", "variant": {"rank": i}}
                     for i, r in enumerate(record.search_results) if r.snippet and r.snippet.strip()]
        if not documents:
            raise RecordError(("search_results", "no search result with a snippet"))
        first, *more = answer_forms(record.answer)
        return {"id": iid, "domain": self.domain, "query": record.question, "protocol": "reference_qa",
                "language": "en", "documents": documents,
                "reference": {"answer_type": "short", "answers": [{"text": first, "aliases": more}]},
                "attributes": {"categories": [record.category] if record.category else []}}

    def typed(self, spec: InstanceSpec) -> dict[str, Any]:
        assert spec.reference is not None, "this source's instances always carry a reference"
        typed = {"question": spec.query, "answer": spec.reference.answers[0].text}
        return typed | ({"category": spec.attributes.categories[0]} if spec.attributes.categories else {})
