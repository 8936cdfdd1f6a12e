"""Office documents in: a folder of PDF, DOCX, PPTX, XLSX, HTML, Markdown and text files becomes a corpus.

Each file is converted to Markdown by markitdown's converter for its type (docs/construction.md says why markitdown),
cut at its pages (PDF form feeds), slides or sheets, then into chunks that follow its headings; a table stays whole
when it fits in a chunk. Each chunk is one CorpusDoc carrying its provenance (file, page or slide, section heading),
its language and, when its text repeats an earlier chunk, which one. The import is all or nothing: a file that cannot
be read is named with its reason and no document is returned.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from core.construction.corpus import CorpusDoc, chunk_words

OFFICE_SUFFIXES = (".pdf", ".docx", ".pptx", ".xlsx", ".html", ".htm", ".md", ".markdown", ".txt")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_SLIDE = re.compile(r"^<!-- Slide number: (\d+) -->$", re.M)
_SHEET = re.compile(r"^## (.+)$", re.M)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_SLUG = re.compile(r"[^A-Za-z0-9]+")


class DocumentImportError(ValueError):
    """Files that could not be read: each named with its reason; nothing was imported."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__("nothing imported; unreadable: " + "; ".join(f"{name}: {why}" for name, why in problems))


@dataclass(frozen=True)
class Block:
    """One structural piece of a converted file: a paragraph or a table, with where it stands."""

    page: int | None
    section: str
    kind: str  # "text" or "table"
    text: str


@dataclass
class ImportReport:
    """What a folder import read: files, chunks, languages, duplicate chunks (id -> the chunk it repeats)."""

    files: list[str]
    chunks: int
    languages: dict[str, int]
    duplicates: dict[str, str] = field(default_factory=dict)
    by_file: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """Plain dict (for the build report)."""
        return asdict(self)


def office_files(folder: Path) -> list[Path]:
    """The convertible files under `folder` (recursively), in name order."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in OFFICE_SUFFIXES)


def is_document_folder(path: Path) -> bool:
    """Whether `path` is a folder holding office documents (rather than corpus JSONL)."""
    return path.is_dir() and bool(office_files(path))


def _converter(suffix: str):
    """markitdown's converter for one file type (strict: a corrupt PDF is an error, not plain text)."""
    from markitdown import converters as c

    table = {".pdf": c.PdfConverter, ".docx": c.DocxConverter, ".pptx": c.PptxConverter, ".xlsx": c.XlsxConverter,
             ".html": c.HtmlConverter, ".htm": c.HtmlConverter, ".md": c.PlainTextConverter,
             ".markdown": c.PlainTextConverter, ".txt": c.PlainTextConverter}
    return table[suffix]()


def convert_file(path: Path) -> str:
    """The file as Markdown; raises ValueError naming why it cannot be read."""
    from markitdown import StreamInfo

    suffix = path.suffix.lower()
    data = path.read_bytes()
    if suffix == ".pdf" and not data.lstrip()[:5].startswith(b"%PDF-"):
        raise ValueError("not a PDF (no %PDF- header)")
    info = StreamInfo(extension=suffix, filename=path.name, charset="utf-8" if suffix in (".md", ".markdown", ".txt") else None)
    import io

    try:
        markdown = _converter(suffix).convert(io.BytesIO(data), info).markdown
    except Exception as exc:  # the converters raise their libraries' own errors
        raise ValueError(f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else 'unreadable'}") from None
    if not markdown or not markdown.strip():
        raise ValueError("no text could be extracted (a scanned PDF needs OCR first)")
    return markdown


def _units(markdown: str, suffix: str) -> list[tuple[int | None, str]]:
    """(page, text) pieces: PDF pages (form feeds), PPTX slides, XLSX sheets (numbered), or the whole file."""
    if suffix == ".pdf":
        return [(n, page) for n, page in enumerate(markdown.split("\f"), 1) if page.strip()]
    if suffix == ".pptx":
        parts = _SLIDE.split(markdown)
        return [(int(parts[i]), parts[i + 1]) for i in range(1, len(parts) - 1, 2) if parts[i + 1].strip()]
    if suffix == ".xlsx":
        starts = [m.start() for m in _SHEET.finditer(markdown)] or [0]
        return [(n, markdown[a:b]) for n, (a, b) in enumerate(zip(starts, [*starts[1:], len(markdown)], strict=True), 1)]
    return [(None, markdown)]


def blocks(markdown: str, suffix: str) -> list[Block]:
    """The file's paragraphs and tables in order, each with its page and the heading path above it."""
    out: list[Block] = []
    for page, unit in _units(markdown, suffix):
        heads: list[str] = []
        lines = _COMMENT.sub("", unit).splitlines()
        i = 0
        while i < len(lines):
            line = lines[i].strip()
            heading = _HEADING.match(line)
            if heading:
                level = len(heading.group(1))
                heads = heads[: level - 1] + [""] * max(0, level - 1 - len(heads)) + [heading.group(2)]
                i += 1
            elif line.startswith("|"):
                j = i
                while j < len(lines) and lines[j].strip().startswith("|"):
                    j += 1
                out.append(Block(page, " > ".join(h for h in heads if h), "table", "\n".join(lines[i:j]).strip()))
                i = j
            elif line:
                j = i
                while j < len(lines) and lines[j].strip() and not lines[j].strip().startswith(("|", "#")):
                    j += 1
                out.append(Block(page, " > ".join(h for h in heads if h), "text", " ".join(" ".join(lines[i:j]).split())))
                i = j
            else:
                i += 1
    return out


def _words(text: str) -> int:
    return len(text.split())


def _split_table(table: str, max_words: int) -> list[str]:
    """A table too big for one chunk: runs of rows, each under the header rows."""
    rows = table.splitlines()
    head, body = rows[:2], rows[2:]
    pieces: list[str] = []
    current: list[str] = []
    for row in body:
        if current and _words("\n".join(head + current + [row])) > max_words:
            pieces.append("\n".join(head + current))
            current = []
        current.append(row)
    if current or not pieces:
        pieces.append("\n".join(head + current))
    return pieces


def chunk_blocks(items: list[Block], max_words: int = 200, overlap: int = 40) -> list[Block]:
    """Chunks that follow the structure: consecutive blocks of one page and section are joined up to `max_words`;
    a table stays whole when it fits (else split by rows under its header); a longer paragraph falls back to word
    windows."""
    out: list[Block] = []
    current: list[Block] = []

    def flush() -> None:
        if current:
            first = current[0]
            kind = "table" if all(b.kind == "table" for b in current) else "text"
            out.append(Block(first.page, first.section, kind, "\n\n".join(b.text for b in current)))
            current.clear()

    for block in items:
        if current and (block.page, block.section) != (current[0].page, current[0].section):
            flush()
        size = _words(block.text)
        if size > max_words:
            flush()
            parts = (_split_table(block.text, max_words) if block.kind == "table"
                     else chunk_words(block.text, max_words, overlap))
            out += [Block(block.page, block.section, block.kind, part) for part in parts]
            continue
        if current and sum(_words(b.text) for b in current) + size > max_words:
            flush()
        current.append(block)
    flush()
    return out


def _slug(text: str) -> str:
    return _SLUG.sub("-", text).strip("-").lower() or "doc"


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _language(text: str, fallback: str) -> str:
    """The chunk's language; a chunk of fewer than 12 words takes its file's (langdetect is unsure on short text)."""
    from core.langid import detect_language

    plain = re.sub(r"[|#*_`>-]+", " ", text)
    if len(plain.split()) < 12:
        return fallback
    return detect_language(plain) or fallback


def _domain(path: Path, folder: Path, default: str) -> str:
    """A file in a sub-folder belongs to the domain named by the sub-folder; top-level files to `default`."""
    parts = path.relative_to(folder).parts
    return parts[0].strip().lower().replace(" ", "_") if len(parts) > 1 else default


def import_folder(folder: str | Path, domain: str = "", max_words: int = 200,
                  overlap: int = 40) -> tuple[list[CorpusDoc], ImportReport]:
    """Every office file under `folder` as structure-aware chunks with provenance; all or nothing."""
    folder = Path(folder)
    files = office_files(folder)
    if not files:
        raise DocumentImportError([(str(folder), f"no file of a supported type ({', '.join(OFFICE_SUFFIXES)})")])
    converted: dict[Path, str] = {}
    problems: list[tuple[str, str]] = []
    for path in files:
        try:
            converted[path] = convert_file(path)
        except (ValueError, OSError) as exc:
            problems.append((str(path.relative_to(folder)), str(exc)))
    if problems:
        raise DocumentImportError(problems)
    docs: list[CorpusDoc] = []
    seen: dict[str, str] = {}
    duplicates: dict[str, str] = {}
    by_file: Counter = Counter()
    for path, markdown in converted.items():
        name = str(path.relative_to(folder))
        stem = _slug(str(path.relative_to(folder).with_suffix("")))
        file_language = _language(markdown, "und") if len(markdown.split()) >= 12 else "und"
        for n, chunk in enumerate(chunk_blocks(blocks(markdown, path.suffix.lower()), max_words, overlap), 1):
            doc_id = f"{stem}-{n:03d}"
            key = hashlib.sha256(_norm(chunk.text).encode()).hexdigest()
            meta: dict = {"file": name, "page": chunk.page, "section": chunk.section, "kind": chunk.kind,
                          "language": _language(chunk.text, file_language)}
            if key in seen:
                duplicates[doc_id] = seen[key]
                meta["duplicate_of"] = seen[key]
            else:
                seen[key] = doc_id
            where = f" p.{chunk.page}" if chunk.page and path.suffix.lower() == ".pdf" else (
                f" slide {chunk.page}" if chunk.page and path.suffix.lower() == ".pptx" else "")
            title = f"{path.name}{where}" + (f" — {chunk.section}" if chunk.section else "")
            unit = {".pptx": "slide", ".xlsx": "sheet"}.get(path.suffix.lower(), "page")
            source = name + (f"#{unit}={chunk.page}" if chunk.page else "")
            docs.append(CorpusDoc(doc_id, _domain(path, folder, domain), title, chunk.text, source, "markdown", meta))
            by_file[name] += 1
    kept = [d for d in docs if d.doc_id not in duplicates]
    report = ImportReport(files=[str(p.relative_to(folder)) for p in files], chunks=len(kept),
                          languages=dict(Counter(d.meta["language"] for d in kept)), duplicates=duplicates,
                          by_file=dict(by_file))
    return kept, report


def file_chunks(docs: list[CorpusDoc]) -> dict[str, list[str]]:
    """File path, file name and file#page -> the ids of their chunks, so queries may name files as support."""
    out: dict[str, list[str]] = {}
    for doc in docs:
        file = doc.meta.get("file")
        if not file:
            continue
        keys = {file, Path(file).name}
        if doc.meta.get("page"):
            keys |= {f"{file}#{doc.meta['page']}", f"{Path(file).name}#{doc.meta['page']}"}
        for key in keys:
            out.setdefault(key, []).append(doc.doc_id)
    return out


def resolve_support(queries: list[dict], docs: list[CorpusDoc]) -> None:
    """Queries that name files (or file#page) as supporting documents get those files' chunks instead: the chunks
    stating one of the answer facts, or all of them when none does. Chunk ids are left as they are."""
    by_id = {d.doc_id: d for d in docs}
    files = file_chunks(docs)
    for q in queries:
        for key in ("supporting_doc_ids", "conflicting_doc_ids", "related_doc_ids"):
            ids: list[str] = []
            for ref in q.get(key, []):
                if ref in by_id or ref not in files:
                    ids.append(ref)
                    continue
                chunks = files[ref]
                facts = [f.lower() for f in q.get("answer_facts", []) if f]
                stating = [c for c in chunks if any(f in by_id[c].text.lower() for f in facts)]
                ids += [c for c in (stating or chunks) if c not in ids]
            if key in q:
                q[key] = ids
