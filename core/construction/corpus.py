"""Corpus import (JSONL of text, markdown or HTML documents) and word-window chunking."""

from __future__ import annotations

import hashlib
import html
import json
import re
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

CORPUS_CONTENT_TYPES = ("text", "html", "markdown")
_DROP_TAGS = {"script", "style", "head", "noscript", "template", "iframe"}
_BLOCK_TAGS = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "table", "ul", "ol", "section"}


@dataclass(frozen=True)
class CorpusDoc:
    """One corpus document; `text` is the raw body, `plain` the retrieval text (HTML stripped)."""

    doc_id: str
    domain: str
    title: str
    text: str
    source: str = ""
    content_type: str = "text"
    meta: dict = field(default_factory=dict, hash=False, compare=False)

    @property
    def plain(self) -> str:
        return html_to_text(self.text) if self.content_type == "html" else self.text


@dataclass(frozen=True)
class Chunk:
    """A window of a document's words; `index` is its position within the document."""

    doc_id: str
    index: int
    text: str


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in _DROP_TAGS:
            self._skip += 1
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _DROP_TAGS:
            self._skip = max(0, self._skip - 1)
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def html_to_text(markup: str) -> str:
    """Visible text of an HTML fragment: scripts/styles/head dropped, tags removed, entities decoded."""
    parser = _TextExtractor()
    parser.feed(markup)
    parser.close()
    text = html.unescape("".join(parser.parts))
    lines = [re.sub(r"[ \t\r\f\v]+", " ", line).strip() for line in text.split("\n")]
    return "\n".join(line for line in lines if line)


def doc_from_record(record: dict) -> CorpusDoc:
    """Validate one JSONL record and build a CorpusDoc (unknown keys are kept as metadata)."""
    missing = [k for k in ("doc_id", "title", "text") if not str(record.get(k, "")).strip()]
    if missing:
        raise ValueError(f"corpus record {record.get('doc_id', '?')!r} lacks {', '.join(missing)}")
    ctype = record.get("content_type", "text")
    if ctype not in CORPUS_CONTENT_TYPES:
        raise ValueError(f"document {record['doc_id']!r}: content_type {ctype!r} not in {CORPUS_CONTENT_TYPES}")
    core = {"doc_id", "domain", "title", "text", "source", "content_type"}
    return CorpusDoc(
        doc_id=str(record["doc_id"]),
        domain=str(record.get("domain", "")),
        title=str(record["title"]),
        text=str(record["text"]),
        source=str(record.get("source", "")),
        content_type=ctype,
        meta={k: v for k, v in record.items() if k not in core},
    )


def load_corpus(paths: str | Path | Sequence[str | Path]) -> list[CorpusDoc]:
    """Load one or more corpus JSONL files; duplicate doc_ids raise."""
    paths = [paths] if isinstance(paths, (str, Path)) else paths
    docs: list[CorpusDoc] = []
    for path in paths:
        for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    docs.append(doc_from_record(json.loads(line)))
                except (ValueError, json.JSONDecodeError) as exc:
                    raise ValueError(f"{path}:{n}: {exc}") from None
    seen: set[str] = set()
    for doc in docs:
        if doc.doc_id in seen:
            raise ValueError(f"duplicate doc_id {doc.doc_id!r}")
        seen.add(doc.doc_id)
    return docs


def chunk_words(text: str, window: int = 200, overlap: int = 40) -> list[str]:
    """Split text into windows of `window` words, consecutive windows sharing `overlap` words."""
    if window < 1 or not 0 <= overlap < window:
        raise ValueError(f"need window >= 1 and 0 <= overlap < window, got window={window} overlap={overlap}")
    words = text.split()
    if not words:
        return []
    step = window - overlap
    starts = range(0, max(len(words) - overlap, 1), step)
    return [" ".join(words[s : s + window]) for s in starts]


def chunk_count(text: str, window: int = 200, overlap: int = 40) -> int:
    """How many chunks chunk_words cuts from `text` (without building them)."""
    words = len(text.split())
    return len(range(0, max(words - overlap, 1), window - overlap)) if words else 0


class ChunkTable(Sequence[Chunk]):
    """The chunks of a corpus held as (document, piece) numbers and doc ids: a chunk's text is cut from its document
    when asked for (`texts()` streams them all), so the corpus text is not held a second time."""

    def __init__(self, docs: Sequence[CorpusDoc], window: int = 200, overlap: int = 40) -> None:
        if window < 1 or not 0 <= overlap < window:
            raise ValueError(f"need window >= 1 and 0 <= overlap < window, got window={window} overlap={overlap}")
        self.docs, self.window, self.overlap = docs, window, overlap
        self.doc_ids: list[str] = []  # per chunk, the document's own id string (not a copy)
        self._doc_pos, self._piece = array("i"), array("i")
        for pos, doc in enumerate(docs):
            n = chunk_count(doc.plain, window, overlap)
            self.doc_ids.extend([doc.doc_id] * n)
            self._doc_pos.extend([pos] * n)
            self._piece.extend(range(n))

    def __len__(self) -> int:
        return len(self.doc_ids)

    def __getitem__(self, i):  # an int index; slices are not needed here
        doc = self.docs[self._doc_pos[i]]
        piece = self._piece[i]
        return Chunk(doc.doc_id, piece, f"{doc.title}. {chunk_words(doc.plain, self.window, self.overlap)[piece]}")

    def __iter__(self) -> Iterator[Chunk]:
        return iter_chunks(self.docs, self.window, self.overlap)

    def texts(self) -> Iterator[str]:
        """Every chunk's text in order, cut one document at a time."""
        return (chunk.text for chunk in self)


def iter_chunks(docs: Sequence[CorpusDoc], window: int = 200, overlap: int = 40) -> Iterator[Chunk]:
    """Chunks of every document, one document at a time; the title is prefixed to each chunk so it counts for
    retrieval."""
    for doc in docs:
        for i, piece in enumerate(chunk_words(doc.plain, window, overlap)):
            yield Chunk(doc.doc_id, i, f"{doc.title}. {piece}")


def chunk_corpus(docs: list[CorpusDoc], window: int = 200, overlap: int = 40) -> list[Chunk]:
    """Chunks of every document (see iter_chunks)."""
    return list(iter_chunks(docs, window, overlap))


def corpus_hash(docs: list[CorpusDoc], extra: str = "") -> str:
    """Stable sha256 over the documents' ids, titles, types and texts (plus `extra`, e.g. chunk settings)."""
    h = hashlib.sha256(extra.encode())
    for doc in sorted(docs, key=lambda d: d.doc_id):
        for part in (doc.doc_id, doc.title, doc.content_type, doc.text):
            h.update(part.encode())
            h.update(b"\x00")
    return h.hexdigest()
