"""TriviaQA reading comprehension (TriviaQA-RC) in the authors' layout: a qa JSON file (`Data[]` with `Question`,
`Answer{Value, Aliases}`, `EntityPages[{Filename, Title}]`, `SearchResults[{Filename, Rank, Title, Url}]`) whose
evidence texts are separate files, `evidence/wikipedia/<Filename>` and `evidence/web/<Filename>`, next to the `qa/`
folder as in the released triviaqa-rc archive."""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from core.ingest.importers.base import (
    Importer,
    LineError,
    Raw,
    RecordError,
    Source,
    _bad_bytes,
    _element,
    _line_error,
    _skip_space,
    doc_id,
    read_text_bytes,
)
from core.store.schema import InstanceSpec

DATA_KEY = re.compile(r'"Data"\s*:\s*\[')


class TriviaAnswer(Source):
    Value: str
    Aliases: list[str] = []


class EntityPage(Source):
    Filename: str
    Title: str


class SearchResult(Source):
    Filename: str
    Title: str
    Rank: int
    Url: str = ""


class TriviaRecord(Source):
    QuestionId: str
    Question: str
    Answer: TriviaAnswer
    EntityPages: list[EntityPage] = []
    SearchResults: list[SearchResult] = []


def evidence_root(path: Path) -> Path:
    """Where a qa file's evidence lives: `evidence/` beside its `qa/` folder (the released archive's layout)."""
    return Path(path).absolute().parent.parent / "evidence"


@contextmanager
def with_evidence(qa_file: Path, evidence_dir: Path | None) -> Iterator[Path]:
    """The qa file to read so that its evidence is found in `evidence_dir` (the folder holding `wikipedia/` and
    `web/`): the released layout rebuilt with links in a temporary folder; the file itself when no folder is given."""
    if evidence_dir is None:
        yield Path(qa_file)
        return
    with tempfile.TemporaryDirectory(prefix="triviaqa-") as tmp:
        (Path(tmp) / "qa").mkdir()
        (Path(tmp) / "evidence").symlink_to(Path(evidence_dir).absolute(), target_is_directory=True)
        linked = Path(tmp) / "qa" / Path(qa_file).name
        linked.symlink_to(Path(qa_file).absolute())
        yield linked


def whole_json(path: Path) -> tuple[str, list[LineError]]:
    """A file's text when it is one whole JSON value, else why not (unreadable, not UTF-8, or where the JSON
    breaks: line and column)."""
    data, unreadable = read_text_bytes(path)
    if (bad := unreadable or _bad_bytes(data)) is not None:
        return "", [bad]
    text = data.decode("utf-8")
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return "", [_line_error(text, exc.pos, exc.msg)]
    return text, []


def read_qa_file(path: Path) -> tuple[list[tuple[int, Raw]], list[LineError]]:
    """The records of a TriviaQA qa file with their lines; a file that is not whole JSON fails at its position."""
    text, problems = whole_json(path)
    return ([], problems) if problems else _element_lines(text)


def _element_lines(text: str) -> tuple[list[tuple[int, Raw]], list[LineError]]:
    """The `Data` elements with the line each starts on."""
    match = DATA_KEY.search(text)
    if match is None:
        return [], [LineError(1, "Data", "no 'Data' array: not a TriviaQA qa file")]
    decoder = json.JSONDecoder()
    records: list[tuple[int, Raw]] = []
    pos = _skip_space(text, match.end())
    while pos < len(text) and text[pos] != "]":
        start = pos
        value, pos, problem = _element(decoder, text, pos)
        if problem:
            return records, [problem]
        records.append((text.count("\n", 0, start) + 1, value))
        pos = _skip_space(text, pos)
        if pos < len(text) and text[pos] == ",":
            pos = _skip_space(text, pos + 1)
    return records, []


def _evidence(root: Path, folder: str, filename: str, where: str) -> str:
    """The text of one evidence file, or a RecordError naming the record's field."""
    path = root / folder / filename
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordError((where, f"evidence file {folder}/{filename} cannot be read ({type(exc).__name__})")) from None
    if not text.strip():
        raise RecordError((where, f"evidence file {folder}/{filename} is empty"))
    return text


class TriviaQA(Importer):
    name = "triviaqa"
    title = "TriviaQA-RC (authors' qa JSON + evidence files)"
    domain = "TriviaQA"
    Record = TriviaRecord
    one_file = False

    def read(self, path: Path) -> tuple[list[tuple[int, Raw]], list[LineError]]:
        return read_qa_file(path)

    def build(self, record: TriviaRecord, index: int, path: Path) -> dict[str, Any]:
        iid = f"triviaqa/{record.QuestionId}"
        root = evidence_root(path)
        documents: list[dict[str, Any]] = []
        for i, page in enumerate(record.EntityPages):
            text = _evidence(root, "wikipedia", page.Filename, f"EntityPages[{i}].Filename")
            documents.append({"doc_id": doc_id(iid, f"EntityPages[{i}]"), "title": page.Title, "text": text,
                              "source": f"wikipedia/{page.Filename}", "role": "supporting",
                              "variant": {"rank": len(documents), "evidence_source": "wikipedia"}})
        for i, result in enumerate(record.SearchResults):
            text = _evidence(root, "web", result.Filename, f"SearchResults[{i}].Filename")
            documents.append({"doc_id": doc_id(iid, f"SearchResults[{i}]"), "title": result.Title, "text": text,
                              "source": result.Url or f"web/{result.Filename}", "role": "supporting",
                              "variant": {"rank": len(documents), "evidence_source": "web",
                                          "search_rank": result.Rank}})
        if not documents:
            raise RecordError(("EntityPages", "no evidence: neither entity pages nor search results"))
        value = record.Answer.Value
        aliases = [a for a in dict.fromkeys(record.Answer.Aliases) if a != value]
        return {"id": iid, "domain": self.domain, "query": record.Question, "protocol": "reference_qa",
                "language": "en", "documents": documents,
                "reference": {"answer_type": "short", "answers": [{"text": value, "aliases": aliases}]}}

    def typed(self, spec: InstanceSpec) -> dict[str, Any]:
        return {"QuestionId": spec.id.removeprefix("triviaqa/"), "Question": spec.query}
