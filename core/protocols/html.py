"""HTML documents as text for prompts: block structure as lines, tables as Markdown, scripts and styles dropped."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

DROPPED = frozenset({"script", "style", "noscript", "template", "svg", "head", "iframe", "object", "canvas"})
VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"})
BLOCKS = frozenset({
    "address", "article", "aside", "blockquote", "dd", "details", "dialog", "div", "dl", "dt", "fieldset",
    "figcaption", "figure", "footer", "form", "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section",
    "summary", "ul", "caption", "h1", "h2", "h3", "h4", "h5", "h6",
})
PARAGRAPHS = frozenset({"p", "pre", "blockquote", "ul", "ol", "dl", "table", "h1", "h2", "h3", "h4", "h5", "h6"})
HEADINGS = {f"h{level}": "#" * level + " " for level in range(1, 7)}
SPACES = re.compile(r"[ \t\r\f\v\u00a0\u3000]+")
LINE, PARAGRAPH = "\x00", "\x01"
BREAKS = re.compile(r"[\s\x00\x01]*[\x00\x01][\s\x00\x01]*")
MARKER = re.compile(r"^(#{1,6}|-)(?: +|$)")
MARKERS = frozenset({"- ", *HEADINGS.values()})


@dataclass
class _Table:
    rows: list[list[str]] = field(default_factory=list)
    header_rows: int = 0
    cell: list[str] | None = None
    in_head: bool = False

    def start_row(self) -> None:
        self.rows.append([])

    def start_cell(self) -> None:
        if not self.rows:
            self.start_row()
        self.cell = []

    def end_cell(self, span: int) -> None:
        if self.cell is None:
            return
        text = _inline(" ".join(self.cell)).replace("|", "\\|")
        self.rows[-1].extend([text] + [""] * (span - 1))
        self.cell = None

    def markdown(self) -> str:
        rows = [row for row in self.rows if any(cell for cell in row)]
        if not rows:
            return ""
        width = max(len(row) for row in rows)
        padded = [row + [""] * (width - len(row)) for row in rows]
        lines = [_row(padded[0]), _row(["---"] * width)] + [_row(row) for row in padded[1:]]
        return "\n".join(lines)

    def flat(self) -> str:
        """A nested table's text for its parent's cell: rows joined with '; '."""
        return "; ".join(" ".join(cell for cell in row if cell) for row in self.rows if any(row))


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _inline(text: str) -> str:
    return SPACES.sub(" ", re.sub(r"[\n\x00\x01]", " ", text)).strip()


class _Converter(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.dropped: list[str] = []
        self.tables: list[_Table] = []
        self.pre = 0
        self.spans: list[int] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.dropped:
            if tag in DROPPED and tag not in VOID:
                self.dropped.append(tag)
            return
        if tag in DROPPED:
            self.dropped.append(tag)
        elif tag == "table":
            self.tables.append(_Table())
        elif self.tables and tag == "tr":
            self.tables[-1].start_row()
        elif self.tables and tag in ("td", "th"):
            self.tables[-1].start_cell()
            self.spans.append(_span(attrs))
        elif tag == "br":
            self._text(LINE)
        elif tag in BLOCKS:
            self.pre += tag == "pre"
            self._block(tag)
            self._text(HEADINGS.get(tag, "- " if tag == "li" else ""))

    def handle_endtag(self, tag: str) -> None:
        if self.dropped:
            if tag == self.dropped[-1]:
                self.dropped.pop()
            return
        if tag == "table" and self.tables:
            table = self.tables.pop()
            table.end_cell(1)
            if self.tables:
                self._text(" " + table.flat() + " ")
            else:
                self.out += [PARAGRAPH, table.markdown().replace("\n", LINE), PARAGRAPH]
        elif self.tables and tag in ("td", "th"):
            self.tables[-1].end_cell(self.spans.pop() if self.spans else 1)
        elif tag in BLOCKS:
            self.pre = max(0, self.pre - (tag == "pre"))
            self._block(tag)

    def handle_data(self, data: str) -> None:
        if not self.dropped:
            self._text(data if self.pre else SPACES.sub(" ", data.replace("\n", " ")))

    def _text(self, text: str) -> None:
        table = self.tables[-1] if self.tables else None
        if table is not None:
            if table.cell is not None:
                table.cell.append(text)
            return  # text between cells (whitespace, stray markup) is not content
        self.out.append(text)

    def _block(self, tag: str) -> None:
        if not self.tables:
            self.out.append(PARAGRAPH if tag in PARAGRAPHS else LINE)

    def text(self) -> str:
        while self.tables:
            self.handle_endtag("table")
        joined = BREAKS.sub(lambda m: "\n\n" if PARAGRAPH in m.group() else "\n", "".join(self.out))
        lines = [MARKER.sub(lambda m: m.group(1) + " ", line.strip()) for line in joined.split("\n")]
        return "\n".join(line for line in lines if line not in MARKERS).strip()


def _span(attrs: list[tuple[str, str | None]]) -> int:
    value = dict(attrs).get("colspan") or "1"
    return max(1, min(int(value), 100)) if value.strip().isdigit() else 1


def html_to_text(html: str) -> str:
    """The visible text of an HTML document: block elements on their own lines, headings as '#', list items as
    '- ', tables as Markdown tables (nested tables flattened into their cell); script, style and head dropped."""
    converter = _Converter()
    converter.feed(html)
    converter.close()
    return converter.text()
