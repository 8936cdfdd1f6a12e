"""EnterpriseRAG's rule checkers (namespace `enterprise:`), declared as its `Protocol.checkers`: citations, lists,
tables, lengths, phrasing, language.

Each count-based checker says in its docstring what it does with Chinese / Japanese (zh/ja) text: count correctly,
or raise UnsupportedLanguageError (recorded by the scorer as an error verdict)."""

from __future__ import annotations

import json
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from core.language import CJK_RE, KANA_RE, wordlists
from core.scoring.checkers.base import CHECKERS, Checker, UnsupportedLanguageError
from core.scoring.checkers.dates import first_date
from core.scoring.checkers.guard import guarded, regex_error
from core.scoring.checkers.text import language, word_count
from core.scoring.citation_marks import cited_documents


class _Kw(BaseModel):
    model_config = ConfigDict(extra="forbid")


_LATIN_WORD_CHAR = r"[^\W" + CJK_RE.pattern[1:]  # a letter or digit that is not Han or kana


def _phrase_pattern(phrase: str, case_sensitive: bool) -> re.Pattern[str]:
    """Whole-word/phrase regex: word edges at both ends, any whitespace between the phrase's words.

    An edge is no letter or digit of a spaced script next to the phrase: a Han / kana neighbour is an edge ('API' is a
    word in '公司API接口'), and a phrase end that is Han / kana needs no edge (Chinese and Japanese have no spaces)."""
    words = phrase.split()
    body = r"\s+".join(re.escape(word) for word in words)
    start = "" if CJK_RE.match(words[0][0]) else rf"(?<!{_LATIN_WORD_CHAR})"
    end = "" if CJK_RE.match(words[-1][-1]) else rf"(?!{_LATIN_WORD_CHAR})"
    return re.compile(f"{start}{body}{end}", 0 if case_sensitive else re.IGNORECASE)


def _count_lines(pattern: re.Pattern[str], response: str) -> int:
    return sum(1 for _ in pattern.finditer(response))


def _within(value: int, low: int | None, high: int | None) -> bool:
    return (low is None or value >= low) and (high is None or value <= high)


def _bounds_text(low: int | None, high: int | None, unit: str) -> str:
    if low is not None and high is not None:
        return f"between {low} and {high} {unit}"
    return f"at least {low} {unit}" if low is not None else f"at most {high} {unit}"


class _Range(_Kw):
    """Shared validation of an optional [low, high] range: at least one bound, low <= high."""

    @model_validator(mode="after")
    def _ordered(self) -> _Range:
        low, high = (getattr(self, name) for name in type(self).model_fields)
        if low is None and high is None:
            raise ValueError("give a lower bound, an upper bound or both")
        if low is not None and high is not None and low > high:
            raise ValueError(f"lower bound {low} exceeds upper bound {high}")
        return self


# --- lists -----------------------------------------------------------------------------------------

_NUMBERED_LINE = re.compile(r"^[ \t]*\d+[.)][ \t]+\S", re.MULTILINE)
_BULLET_LINE = re.compile(r"^[ \t]*[-*+][ \t]+\S", re.MULTILINE)
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+(\S.*)$", re.MULTILINE)


class MinItemsKw(_Kw):
    min_items: int = Field(default=2, ge=1)


class BulletItemsKw(_Kw):
    min_items: int = Field(default=1, ge=1)


@CHECKERS.register("enterprise:numbered_list")
class NumberedList(Checker):
    """At least `min_items` numbered lines such as '1. ...' or '2) ...'.

    zh/ja: counted correctly as is (markdown numbering; '1、' is not a markdown list item)."""

    Kwargs = MinItemsKw
    kwargs: MinItemsKw

    def describe(self) -> str:
        return f"Present the answer as a numbered list with at least {self.kwargs.min_items} items (1., 2., ...)."

    def evaluate(self, response: str) -> bool:
        return _count_lines(_NUMBERED_LINE, response) >= self.kwargs.min_items


@CHECKERS.register("enterprise:bullet_list")
class BulletList(Checker):
    """At least `min_items` markdown bullet lines starting with '-', '*' or '+' and a space.

    zh/ja: counted correctly as is."""

    Kwargs = BulletItemsKw
    kwargs: BulletItemsKw

    def describe(self) -> str:
        return f"Use a bulleted list with at least {self.kwargs.min_items} bullet points."

    def evaluate(self, response: str) -> bool:
        return _count_lines(_BULLET_LINE, response) >= self.kwargs.min_items


_MARKUP = re.compile(r"[*_`~\[\]]")


class OrderKw(_Kw):
    order: Literal["alphabetical", "chronological"]


def _item_texts(response: str) -> list[str]:
    return [_MARKUP.sub("", match.group(1)).strip() for match in _LIST_ITEM.finditer(response)]


def _alphabet_supported(items: list[str]) -> None:
    """Raise UnsupportedLanguageError ('zh' or 'ja') when an item's first letter is Han or kana."""
    firsts = [m.group() for item in items if (m := re.search(r"[^\W\d_]", item))]
    if any(CJK_RE.match(letter) for letter in firsts):
        raise UnsupportedLanguageError("ja" if any(KANA_RE.search(item) for item in items) else "zh")


def _non_decreasing(keys: list) -> bool:
    return all(a <= b for a, b in zip(keys, keys[1:], strict=False))


@CHECKERS.register("enterprise:ordered_list_items")
class OrderedListItems(Checker):
    """List items (bulleted or numbered, at least two) are in alphabetical or chronological order.

    Alphabetical compares item texts case-insensitively with markdown emphasis removed. Chronological
    compares the first date (ISO, d/m-name, month-name d, month-name yyyy) or year found in each item;
    an item without a date fails the check.

    zh/ja: alphabetical order is unsupported (Chinese and Japanese order by pinyin, strokes or reading, which the
    characters do not show): an item opening with a Han / kana letter raises UnsupportedLanguageError. Chronological
    order reads 2024年3月5日 and Japanese era years (core.scoring.checkers.dates).
    """

    Kwargs = OrderKw
    kwargs: OrderKw

    def describe(self) -> str:
        if self.kwargs.order == "alphabetical":
            return "List the items in alphabetical order."
        return "List the items in chronological order, earliest first, each with its date."

    def evaluate(self, response: str) -> bool:
        items = _item_texts(response)
        if len(items) < 2:
            return False
        if self.kwargs.order == "alphabetical":
            _alphabet_supported(items)
            return _non_decreasing([item.casefold() for item in items])
        dates = [first_date(item) for item in items]
        return None not in dates and _non_decreasing(dates)


# --- citations ---------------------------------------------------------------------------------------

_STATUTES = wordlists("statutes")
_LAW_TYPES = "|".join(sorted(map(re.escape, _STATUTES["law_types"]), key=len, reverse=True))
_LAW_NAME = rf"[A-Z][\w'’-]*(?:\s+(?:of|the|and|on|for|to|in|[A-Z][\w'’-]*))*?\s+(?:{_LAW_TYPES})"
_ARTICLE = r"(?:" + "|".join(map(re.escape, _STATUTES["article_words"])) + r")\s*\d+(?:\.\d+)*"
CITATION_PRESETS: dict[str, re.Pattern[str]] = {
    # "[doc 3]", "[Document 3]", "[3]"; the document number is what makes a citation distinct.
    "doc_ref": re.compile(r"\[(?:doc(?:ument)?\s*)?(\d+)\]", re.IGNORECASE),
    # "Grid Safety Act, Article 12" (name, optional comma, article) or
    # "Section 4.2 of the Grid Code" (article, 'of', optional 'the', name). A name is capitalised words,
    # small connectives allowed, ending in Act/Law/Code/Regulation(s)/Rules/Ordinance/Directive/Standard/
    # Provisions/Measures/Statute.
    "statute_article": re.compile(rf"{_LAW_NAME},?\s+{_ARTICLE}|{_ARTICLE}\s+of\s+(?:the\s+)?{_LAW_NAME}"),
}


class CitationKw(_Kw):
    pattern: str = Field(default="doc_ref", min_length=1)
    min_distinct: int = Field(default=1, ge=1)

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        if value not in CITATION_PRESETS and (problem := regex_error(value)):
            raise ValueError(f"not a preset ({', '.join(CITATION_PRESETS)}) and {problem}")
        return value


def _citation_key(match: re.Match[str]) -> str:
    text = next((group for group in match.groups() if group), match.group())
    return " ".join(text.replace(",", " ").split()).casefold()


@CHECKERS.register("enterprise:citation_count")
class CitationCount(Checker):
    """At least `min_distinct` distinct citations matched by a preset or a user regex.

    Distinctness uses the first non-empty capture group if the pattern has one (for doc_ref: the document
    number, so "[doc 2]" and "[2]" are one citation), else the whole match; case-folded, commas and runs of
    whitespace normalised.

    zh/ja: counted correctly as is (the [doc N] markers are ASCII; statute_article reads English names only).
    """

    Kwargs = CitationKw
    kwargs: CitationKw

    def __init__(self, kwargs: CitationKw) -> None:
        super().__init__(kwargs)
        self._pattern = CITATION_PRESETS.get(kwargs.pattern) or guarded(kwargs.pattern)  # a user regex: time-limited

    def describe(self) -> str:
        n = self.kwargs.min_distinct
        if self.kwargs.pattern == "doc_ref":
            return f"Cite at least {n} different source documents as [doc N]."
        if self.kwargs.pattern == "statute_article":
            return f"Cite at least {n} different legal provisions by full name and article, e.g. 'Grid Safety Act, Article 12'."
        return f"Include at least {n} different citations in the required format."

    def evaluate(self, response: str) -> bool:
        if self.kwargs.pattern == "doc_ref":  # the one reading of document citation marks (core.scoring)
            return len(set(cited_documents(response))) >= self.kwargs.min_distinct
        return len({_citation_key(m) for m in self._pattern.finditer(response)}) >= self.kwargs.min_distinct


# --- phrases ---------------------------------------------------------------------------------------------


class RequiredPhraseKw(_Kw):
    phrase: str = Field(min_length=1)
    case_sensitive: bool = False


@CHECKERS.register("enterprise:required_phrase")
class RequiredPhrase(Checker):
    """The phrase occurs in the response (any run of whitespace matches a space in the phrase)."""

    Kwargs = RequiredPhraseKw
    kwargs: RequiredPhraseKw

    def __init__(self, kwargs: RequiredPhraseKw) -> None:
        super().__init__(kwargs)
        body = r"\s+".join(re.escape(word) for word in kwargs.phrase.split())
        self._pattern = re.compile(body, 0 if kwargs.case_sensitive else re.IGNORECASE)

    def describe(self) -> str:
        return f'Include this exact phrase in your answer: "{self.kwargs.phrase}"'

    def evaluate(self, response: str) -> bool:
        return self._pattern.search(response) is not None


class ForbiddenPhrasesKw(_Kw):
    phrases: list[str] = Field(min_length=1)
    case_sensitive: bool = False

    @field_validator("phrases")
    @classmethod
    def _non_blank(cls, value: list[str]) -> list[str]:
        if any(not phrase.strip() for phrase in value):
            raise ValueError("phrases must not be blank")
        return value


@CHECKERS.register("enterprise:forbidden_phrases")
class ForbiddenPhrases(Checker):
    """None of the phrases occurs as a whole word or phrase ('must' does not match 'mustard').

    zh/ja: a Han / kana phrase is found wherever it occurs (see `_phrase_pattern`)."""

    Kwargs = ForbiddenPhrasesKw
    kwargs: ForbiddenPhrasesKw

    def __init__(self, kwargs: ForbiddenPhrasesKw) -> None:
        super().__init__(kwargs)
        self._patterns = [_phrase_pattern(phrase, kwargs.case_sensitive) for phrase in kwargs.phrases]

    def describe(self) -> str:
        return "Do not use these words or phrases: " + ", ".join(f'"{p}"' for p in self.kwargs.phrases) + "."

    def evaluate(self, response: str) -> bool:
        return not any(pattern.search(response) for pattern in self._patterns)


class KeywordFrequencyKw(_Kw):
    keyword: str = Field(min_length=1)
    min_count: int = Field(default=1, ge=0)
    max_count: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> KeywordFrequencyKw:
        if not self.keyword.strip():
            raise ValueError("keyword must not be blank")
        if self.max_count is not None and self.min_count > self.max_count:
            raise ValueError(f"min_count {self.min_count} exceeds max_count {self.max_count}")
        return self


@CHECKERS.register("enterprise:keyword_frequency")
class KeywordFrequency(Checker):
    """The keyword occurs as a whole word (case-insensitive) between min_count and max_count times.

    zh/ja: counted correctly: a Han / kana keyword is counted wherever it occurs (see `_phrase_pattern`)."""

    Kwargs = KeywordFrequencyKw
    kwargs: KeywordFrequencyKw

    def __init__(self, kwargs: KeywordFrequencyKw) -> None:
        super().__init__(kwargs)
        self._pattern = _phrase_pattern(kwargs.keyword, case_sensitive=False)

    def describe(self) -> str:
        kw = self.kwargs
        return f'Use the word "{kw.keyword}" {_bounds_text(kw.min_count, kw.max_count, "times")}.'

    def evaluate(self, response: str) -> bool:
        return _within(_count_lines(self._pattern, response), self.kwargs.min_count, self.kwargs.max_count)


class StartsWithKw(_Kw):
    prefix: str = Field(min_length=1)
    case_sensitive: bool = False


class EndsWithKw(_Kw):
    suffix: str = Field(min_length=1)
    case_sensitive: bool = False


def _fold(text: str, case_sensitive: bool) -> str:
    return text if case_sensitive else text.casefold()


@CHECKERS.register("enterprise:starts_with")
class StartsWith(Checker):
    """The response, leading whitespace ignored, starts with the prefix."""

    Kwargs = StartsWithKw
    kwargs: StartsWithKw

    def describe(self) -> str:
        return f'Begin your answer with: "{self.kwargs.prefix}"'

    def evaluate(self, response: str) -> bool:
        kw = self.kwargs
        return _fold(response.lstrip(), kw.case_sensitive).startswith(_fold(kw.prefix, kw.case_sensitive))


@CHECKERS.register("enterprise:ends_with")
class EndsWith(Checker):
    """The response, trailing whitespace ignored, ends with the suffix."""

    Kwargs = EndsWithKw
    kwargs: EndsWithKw

    def describe(self) -> str:
        return f'End your answer with: "{self.kwargs.suffix}"'

    def evaluate(self, response: str) -> bool:
        kw = self.kwargs
        return _fold(response.rstrip(), kw.case_sensitive).endswith(_fold(kw.suffix, kw.case_sensitive))


# --- emoji, structure -------------------------------------------------------------------------------------

# Pictographic blocks: emoticons, symbols & pictographs, transport, supplemental symbols, flags (regional
# indicators), mahjong/cards, misc symbols (U+2600-26FF), dingbats (U+2700-27BF, so ✅ ✔ ❤ count), arrows
# and stars of U+2B00-2BFF (⭐ ⬛), watch/hourglass/media keys, and the emoji variation selector U+FE0F.
_EMOJI = re.compile("[\U0001f000-\U0001faff\u2600-\u27bf\u2b00-\u2bff\u231a\u231b\u23e9-\u23fa\ufe0f]")


@CHECKERS.register("enterprise:no_emoji")
class NoEmoji(Checker):
    """No emoji or pictographic symbol anywhere in the response."""

    def describe(self) -> str:
        return "Do not use any emoji or pictographic symbols."

    def evaluate(self, response: str) -> bool:
        return _EMOJI.search(response) is None


class TableKw(_Kw):
    min_rows: int = Field(default=1, ge=1)


_DELIMITER_CELL = re.compile(r"^\s*:?-+:?\s*$")


def _cells(line: str) -> list[str]:
    text = line.strip()
    text = text.removeprefix("|").removesuffix("|")
    return text.split("|")


def _is_delimiter(line: str, width: int) -> bool:
    cells = _cells(line)
    return "|" in line and len(cells) == width and all(_DELIMITER_CELL.match(cell) for cell in cells)


def _body_rows(lines: list[str], start: int) -> int:
    rows = 0
    for line in lines[start:]:
        if "|" not in line or not line.strip():
            break
        rows += 1
    return rows


def max_table_rows(response: str) -> int:
    """Body-row count of the largest markdown pipe table (header, delimiter row, body rows), 0 if none."""
    lines = response.splitlines()
    best = 0
    for index in range(len(lines) - 1):
        header = lines[index]
        if "|" in header and _is_delimiter(lines[index + 1], len(_cells(header))):
            best = max(best, _body_rows(lines, index + 2))
    return best


@CHECKERS.register("enterprise:markdown_table")
class MarkdownTable(Checker):
    """A markdown pipe table: header row, delimiter row (---, :--:) of equal width, >= min_rows body rows."""

    Kwargs = TableKw
    kwargs: TableKw

    def describe(self) -> str:
        return f"Include a markdown table with a header row and at least {self.kwargs.min_rows} data rows."

    def evaluate(self, response: str) -> bool:
        return max_table_rows(response) >= self.kwargs.min_rows


class JsonObjectKw(_Kw):
    required_keys: list[str] = Field(default_factory=list)


_FENCE = re.compile(r"^```[ \t]*(?:json)?[ \t]*\n(.*)\n```$", re.DOTALL | re.IGNORECASE)


def parse_json_object(response: str) -> dict | None:
    """The response parsed as a JSON object (whole text, or the inside of one ``` / ```json fence), else None."""
    text = response.strip()
    fenced = _FENCE.match(text)
    try:
        value = json.loads(fenced.group(1) if fenced else text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


@CHECKERS.register("enterprise:json_object")
class JsonObject(Checker):
    """The whole response is a JSON object (optionally fenced) containing every required key."""

    Kwargs = JsonObjectKw
    kwargs: JsonObjectKw

    def describe(self) -> str:
        keys = self.kwargs.required_keys
        suffix = f" with the keys {', '.join(keys)}" if keys else ""
        return f"Reply with a single JSON object{suffix} and nothing else."

    def evaluate(self, response: str) -> bool:
        value = parse_json_object(response)
        return value is not None and all(key in value for key in self.kwargs.required_keys)


# --- sizes ----------------------------------------------------------------------------------------------


class WordRangeKw(_Range):
    min_words: int | None = Field(default=None, ge=0)
    max_words: int | None = Field(default=None, ge=0)


class CharRangeKw(_Range):
    min_chars: int | None = Field(default=None, ge=0)
    max_chars: int | None = Field(default=None, ge=0)


class ParagraphRangeKw(_Range):
    min_paragraphs: int | None = Field(default=None, ge=0)
    max_paragraphs: int | None = Field(default=None, ge=0)


_BLANK_LINES = re.compile(r"\n[ \t]*\n")


def paragraph_count(response: str) -> int:
    """Number of non-blank blocks separated by one or more blank lines."""
    return sum(1 for block in _BLANK_LINES.split(response) if block.strip())


@CHECKERS.register("enterprise:word_count_range")
class WordCountRange(Checker):
    """Word count (runs of letters/digits, as in IFEval) within [min_words, max_words].

    zh/ja: each Han or kana character counts as one word (length by characters, 字 / 文字)."""

    Kwargs = WordRangeKw
    kwargs: WordRangeKw

    def describe(self) -> str:
        return f"Keep the answer to {_bounds_text(self.kwargs.min_words, self.kwargs.max_words, 'words')}."

    def evaluate(self, response: str) -> bool:
        return _within(word_count(response), self.kwargs.min_words, self.kwargs.max_words)


@CHECKERS.register("enterprise:char_count_range")
class CharCountRange(Checker):
    """Character count of the whitespace-trimmed response within [min_chars, max_chars].

    zh/ja: counted correctly as is (code points)."""

    Kwargs = CharRangeKw
    kwargs: CharRangeKw

    def describe(self) -> str:
        return f"Keep the answer to {_bounds_text(self.kwargs.min_chars, self.kwargs.max_chars, 'characters')}."

    def evaluate(self, response: str) -> bool:
        return _within(len(response.strip()), self.kwargs.min_chars, self.kwargs.max_chars)


@CHECKERS.register("enterprise:paragraph_count_range")
class ParagraphCountRange(Checker):
    """Paragraph count (blocks separated by blank lines) within [min_paragraphs, max_paragraphs].

    zh/ja: counted correctly as is (blank lines separate paragraphs in every language)."""

    Kwargs = ParagraphRangeKw
    kwargs: ParagraphRangeKw

    def describe(self) -> str:
        kw = self.kwargs
        return f"Write {_bounds_text(kw.min_paragraphs, kw.max_paragraphs, 'paragraphs')}, separated by blank lines."

    def evaluate(self, response: str) -> bool:
        return _within(paragraph_count(response), self.kwargs.min_paragraphs, self.kwargs.max_paragraphs)


class SectionKw(_Kw):
    min_sections: int = Field(ge=0)
    max_sections: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> SectionKw:
        if self.max_sections is not None and self.min_sections > self.max_sections:
            raise ValueError(f"min_sections {self.min_sections} exceeds max_sections {self.max_sections}")
        return self


# A heading is a markdown ATX heading ('#' to '######', up to 3 leading spaces, then a space and text)
# or a line consisting only of bold text ('**Scope**' or '__Scope__', optionally followed by ':').
_HEADING = re.compile(r"^(?: {0,3}#{1,6}[ \t]+\S.*|[ \t]*(?:\*\*[^*\n]+\*\*|__[^_\n]+__):?[ \t]*)$", re.MULTILINE)


def section_count(response: str) -> int:
    """Number of heading lines (markdown '#' headings or bold-only lines)."""
    return _count_lines(_HEADING, response)


@CHECKERS.register("enterprise:section_count")
class SectionCount(Checker):
    """Number of headed sections within [min_sections, max_sections]; see `section_count` for headings.

    zh/ja: counted correctly as is (markdown headings)."""

    Kwargs = SectionKw
    kwargs: SectionKw

    def describe(self) -> str:
        kw = self.kwargs
        return f"Organise the answer into {_bounds_text(kw.min_sections, kw.max_sections, 'sections')}, each under a heading."

    def evaluate(self, response: str) -> bool:
        return _within(section_count(response), self.kwargs.min_sections, self.kwargs.max_sections)


# --- language --------------------------------------------------------------------------------------------


class EnterpriseLanguageKw(_Kw):
    language: str = Field(pattern=r"^[a-z]{2}$", description="ISO 639-1 code, e.g. 'en', 'zh', 'de'.")


@CHECKERS.register("enterprise:response_language")
class EnterpriseResponseLanguage(Checker):
    """The response is detected (deterministically) as the ISO 639-1 language; undetectable text fails."""

    Kwargs = EnterpriseLanguageKw
    kwargs: EnterpriseLanguageKw

    def describe(self) -> str:
        return f"Write the whole answer in the language with ISO 639-1 code '{self.kwargs.language}'."

    def evaluate(self, response: str) -> bool:
        detected = language(response)
        return detected is not None and detected.split("-")[0] == self.kwargs.language
