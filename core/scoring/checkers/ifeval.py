"""The 25 IFEval instructions, with IFEval's ids, kwargs names and verdict semantics.

Each count-based checker says in its docstring what it does with Chinese / Japanese (zh/ja) text; text without Han or
kana characters is checked exactly as IFEval checks it."""

from __future__ import annotations

import json
import re
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from core.language import CJK_RE
from core.scoring.checkers.base import CHECKERS, Checker
from core.scoring.checkers.guard import GuardedPattern, guarded, regex_error
from core.scoring.checkers.text import Relation, capital_word_count, compare, language, sentence_count, word_count


class _Kw(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _relation_text(relation: Relation) -> str:
    return "fewer than" if relation == "less than" else "at least"


class _CountRelation(Checker):
    """Base of checkers comparing a count in the response with a target under an IFEval relation."""

    target_field: ClassVar[str]
    relation_field: ClassVar[str]

    def count(self, response: str) -> int:
        """The quantity the instruction constrains."""
        raise NotImplementedError

    def evaluate(self, response: str) -> bool:
        kw = self.kwargs
        return compare(self.count(response), getattr(kw, self.relation_field), getattr(kw, self.target_field))


# --- keywords -----------------------------------------------------------------------------------


def _regexes(patterns: list[str], flags: int = re.IGNORECASE) -> list[str]:
    problems = [problem for pattern in patterns if (problem := regex_error(pattern, flags))]
    if problems:
        raise ValueError("; ".join(problems))
    return patterns


class ExistenceKw(_Kw):
    keywords: list[str] = Field(min_length=1)

    @field_validator("keywords")
    @classmethod
    def _compiles(cls, value: list[str]) -> list[str]:
        return _regexes(value)


@CHECKERS.register("keywords:existence")
class KeywordsExistence(Checker):
    """Every keyword occurs somewhere in the response (case-insensitive, as a regex)."""

    Kwargs = ExistenceKw
    kwargs: ExistenceKw

    def __init__(self, kwargs: ExistenceKw) -> None:
        super().__init__(kwargs)
        self._patterns = [guarded(word, re.IGNORECASE) for word in kwargs.keywords]

    def describe(self) -> str:
        return f"Use each of these keywords in your answer: {', '.join(self.kwargs.keywords)}."

    def evaluate(self, response: str) -> bool:
        return all(pattern.search(response) for pattern in self._patterns)


class FrequencyKw(_Kw):
    keyword: str = Field(min_length=1)
    frequency: int = Field(ge=0)
    relation: Relation

    @field_validator("keyword")
    @classmethod
    def _compiles(cls, value: str) -> str:
        return _regexes([value])[0]


@CHECKERS.register("keywords:frequency")
class KeywordsFrequency(_CountRelation):
    """The keyword occurs fewer than / at least `frequency` times (case-insensitive).

    zh/ja: counted correctly as is (a substring count needs no word boundaries)."""

    Kwargs = FrequencyKw
    kwargs: FrequencyKw
    target_field = "frequency"
    relation_field = "relation"

    def __init__(self, kwargs: FrequencyKw) -> None:
        super().__init__(kwargs)
        self._pattern = guarded(kwargs.keyword, re.IGNORECASE)

    def describe(self) -> str:
        kw = self.kwargs
        return f"Use the word '{kw.keyword}' {_relation_text(kw.relation)} {kw.frequency} times."

    def count(self, response: str) -> int:
        return sum(1 for _ in self._pattern.finditer(response))


class ForbiddenKw(_Kw):
    forbidden_words: list[str] = Field(min_length=1)

    @field_validator("forbidden_words")
    @classmethod
    def _compiles(cls, value: list[str]) -> list[str]:
        _regexes([_forbidden_pattern(word) for word in value])
        return value


def _forbidden_pattern(word: str) -> str:
    return word if CJK_RE.search(word) else rf"\b{word}\b"


@CHECKERS.register("keywords:forbidden_words")
class ForbiddenWords(Checker):
    """None of the words occurs as a whole word (case-insensitive).

    zh/ja: a word with Han or kana characters is found anywhere (Chinese and Japanese have no word boundaries to
    require); Latin words keep IFEval's \\b boundaries."""

    Kwargs = ForbiddenKw
    kwargs: ForbiddenKw

    def __init__(self, kwargs: ForbiddenKw) -> None:
        super().__init__(kwargs)
        self._patterns = [guarded(_forbidden_pattern(word), re.IGNORECASE) for word in kwargs.forbidden_words]

    def describe(self) -> str:
        return f"Do not use any of these words: {', '.join(self.kwargs.forbidden_words)}."

    def evaluate(self, response: str) -> bool:
        return not any(pattern.search(response) for pattern in self._patterns)


class LetterKw(_Kw):
    letter: str = Field(min_length=1, max_length=1)
    let_frequency: int = Field(ge=0)
    let_relation: Relation


@CHECKERS.register("keywords:letter_frequency")
class LetterFrequency(_CountRelation):
    """The letter (case-insensitive) occurs fewer than / at least `let_frequency` times.

    zh/ja: counted correctly as is (occurrences of the character, whatever the script)."""

    Kwargs = LetterKw
    kwargs: LetterKw
    target_field = "let_frequency"
    relation_field = "let_relation"

    def describe(self) -> str:
        kw = self.kwargs
        return f"The letter '{kw.letter}' should appear {_relation_text(kw.let_relation)} {kw.let_frequency} times."

    def count(self, response: str) -> int:
        return response.lower().count(self.kwargs.letter.lower())


# --- language and case ---------------------------------------------------------------------------


class LanguageKw(_Kw):
    language: str = Field(min_length=2, max_length=3)


@CHECKERS.register("language:response_language")
class ResponseLanguage(Checker):
    """The response is detected as the given language (undetectable text passes, as in IFEval)."""

    Kwargs = LanguageKw
    kwargs: LanguageKw

    def describe(self) -> str:
        return f"Write your entire answer in the language with ISO code '{self.kwargs.language}' and no other."

    def evaluate(self, response: str) -> bool:
        detected = language(response)
        return detected is None or detected == self.kwargs.language


def _english_or_undetectable(response: str) -> bool:
    detected = language(response)
    return detected is None or detected == "en"


@CHECKERS.register("change_case:english_capital")
class EnglishCapital(Checker):
    """The whole response is upper case and in English."""

    def describe(self) -> str:
        return "Answer in English, using capital letters only."

    def evaluate(self, response: str) -> bool:
        return response.isupper() and _english_or_undetectable(response)


@CHECKERS.register("change_case:english_lowercase")
class EnglishLowercase(Checker):
    """The whole response is lower case and in English."""

    def describe(self) -> str:
        return "Answer in English, using lowercase letters only; no capital letters."

    def evaluate(self, response: str) -> bool:
        return response.islower() and _english_or_undetectable(response)


class CapitalKw(_Kw):
    capital_frequency: int = Field(ge=0)
    capital_relation: Relation


@CHECKERS.register("change_case:capital_word_frequency")
class CapitalWordFrequency(_CountRelation):
    """The number of all-capital words is fewer than / at least `capital_frequency`.

    zh/ja: counted correctly: Han and kana characters separate words, so the Latin all-capital words are counted
    ('公司CEO和CFO表示' has two); Han and kana themselves have no case and are never capital words."""

    Kwargs = CapitalKw
    kwargs: CapitalKw
    target_field = "capital_frequency"
    relation_field = "capital_relation"

    def describe(self) -> str:
        kw = self.kwargs
        return f"Write {_relation_text(kw.capital_relation)} {kw.capital_frequency} words entirely in capital letters."

    def count(self, response: str) -> int:
        return capital_word_count(response)


# --- length -------------------------------------------------------------------------------------


class SentencesKw(_Kw):
    num_sentences: int = Field(ge=0)
    relation: Relation


@CHECKERS.register("length_constraints:number_sentences")
class NumberSentences(_CountRelation):
    """The sentence count is fewer than / at least `num_sentences`.

    zh/ja: counted correctly: 。！？ end a sentence without a following space."""

    Kwargs = SentencesKw
    kwargs: SentencesKw
    target_field = "num_sentences"
    relation_field = "relation"

    def describe(self) -> str:
        kw = self.kwargs
        return f"Your answer should have {_relation_text(kw.relation)} {kw.num_sentences} sentences."

    def count(self, response: str) -> int:
        return sentence_count(response)


class WordsKw(_Kw):
    num_words: int = Field(ge=0)
    relation: Relation


@CHECKERS.register("length_constraints:number_words")
class NumberWords(_CountRelation):
    """The word count is fewer than / at least `num_words`.

    zh/ja: each Han or kana character counts as one word (length by characters, 字 / 文字)."""

    Kwargs = WordsKw
    kwargs: WordsKw
    target_field = "num_words"
    relation_field = "relation"

    def describe(self) -> str:
        kw = self.kwargs
        return f"Your answer should contain {_relation_text(kw.relation)} {kw.num_words} words."

    def count(self, response: str) -> int:
        return word_count(response)


class ParagraphsKw(_Kw):
    num_paragraphs: int = Field(ge=1)


_STARS_DIVIDER = re.compile(r"\s?\*\*\*\s?")


@CHECKERS.register("length_constraints:number_paragraphs")
class NumberParagraphs(Checker):
    """Exactly `num_paragraphs` paragraphs separated by '***' dividers, none of them empty.

    zh/ja: counted correctly as is (the divider is the same in every language)."""

    Kwargs = ParagraphsKw
    kwargs: ParagraphsKw

    def describe(self) -> str:
        return f"Write exactly {self.kwargs.num_paragraphs} paragraphs, separated from each other by the markdown divider ***."

    def evaluate(self, response: str) -> bool:
        parts = _STARS_DIVIDER.split(response)
        inner_empty = any(not part.strip() for part in parts[1:-1])
        edge_empty = (not parts[0].strip()) + (len(parts) > 1 and not parts[-1].strip())
        return not inner_empty and len(parts) - edge_empty == self.kwargs.num_paragraphs


class NthParagraphKw(_Kw):
    num_paragraphs: int = Field(ge=1)
    nth_paragraph: int = Field(ge=1)
    first_word: str = Field(min_length=1)


_WORD_END = re.compile(rf"[.,?!'\"，。！？、：；]|(?={CJK_RE.pattern})")


def _first_word(paragraph: str) -> str:
    word = paragraph.split()[0].lstrip("'").lstrip('"')
    return _WORD_END.split(word, maxsplit=1)[0].lower()


def _starts_with_word(paragraph: str, word: str) -> bool:
    """IFEval's first-word test; a Han / kana word (no spaces to end it) only has to open the paragraph."""
    if CJK_RE.search(word):
        return paragraph.lstrip("'\"「『“").startswith(word)
    return _first_word(paragraph) == word.lower()


@CHECKERS.register("length_constraints:nth_paragraph_first_word")
class NthParagraphFirstWord(Checker):
    """Exactly `num_paragraphs` blank-line-separated paragraphs, the nth starting with `first_word`.

    zh/ja: paragraphs are counted as is; a Han / kana first word only has to open the paragraph (no spaces mark where
    a Chinese / Japanese word ends), and a Latin first word ends at CJK punctuation or the first Han / kana."""

    Kwargs = NthParagraphKw
    kwargs: NthParagraphKw

    def describe(self) -> str:
        kw = self.kwargs
        return (
            f"Write {kw.num_paragraphs} paragraphs separated by blank lines; "
            f"paragraph {kw.nth_paragraph} must begin with the word '{kw.first_word}'."
        )

    def evaluate(self, response: str) -> bool:
        kw = self.kwargs
        parts = response.split("\n\n")
        count = sum(1 for part in parts if part.strip())
        if kw.nth_paragraph > count or kw.nth_paragraph > len(parts):
            return False
        target = parts[kw.nth_paragraph - 1].strip()
        return bool(target) and count == kw.num_paragraphs and _starts_with_word(target, kw.first_word)


# --- detectable content ----------------------------------------------------------------------------


class PlaceholdersKw(_Kw):
    num_placeholders: int = Field(ge=0)


_PLACEHOLDER = re.compile(r"\[.*?\]")


@CHECKERS.register("detectable_content:number_placeholders")
class NumberPlaceholders(Checker):
    """At least `num_placeholders` square-bracket placeholders such as [name].

    zh/ja: counted correctly as is (ASCII square brackets in any language)."""

    Kwargs = PlaceholdersKw
    kwargs: PlaceholdersKw

    def describe(self) -> str:
        return f"Include at least {self.kwargs.num_placeholders} placeholders in square brackets, like [address]."

    def evaluate(self, response: str) -> bool:
        return sum(1 for _ in _PLACEHOLDER.finditer(response)) >= self.kwargs.num_placeholders


class PostscriptKw(_Kw):
    postscript_marker: str = Field(min_length=1)

    @field_validator("postscript_marker")
    @classmethod
    def _compiles(cls, value: str) -> str:
        _regexes([_postscript_regex(value)], re.MULTILINE)
        return value


def _postscript_regex(marker: str) -> str:
    if marker == "P.P.S":
        return r"\s*p\.\s?p\.\s?s.*$"
    if marker == "P.S.":
        return r"\s*p\.\s?s\..*$"
    return r"\s*" + marker.lower() + r".*$"


def _postscript_pattern(marker: str) -> re.Pattern[str] | GuardedPattern:
    if marker in ("P.P.S", "P.S."):
        return re.compile(_postscript_regex(marker), re.MULTILINE)
    return guarded(_postscript_regex(marker), re.MULTILINE)  # a marker from a benchmark file: time-limited


@CHECKERS.register("detectable_content:postscript")
class Postscript(Checker):
    """A postscript introduced by the marker (e.g. 'P.S.') appears in the response."""

    Kwargs = PostscriptKw
    kwargs: PostscriptKw

    def __init__(self, kwargs: PostscriptKw) -> None:
        super().__init__(kwargs)
        self._pattern = _postscript_pattern(kwargs.postscript_marker)

    def describe(self) -> str:
        return f"End with a postscript that starts with {self.kwargs.postscript_marker}"

    def evaluate(self, response: str) -> bool:
        return self._pattern.search(response.lower()) is not None


# --- combination, start/end, punctuation ---------------------------------------------------------


@CHECKERS.register("combination:two_responses")
class TwoResponses(Checker):
    """Exactly two different answers separated by six asterisks (******)."""

    def describe(self) -> str:
        return "Give two different answers, separated by six asterisks: ******"

    def evaluate(self, response: str) -> bool:
        parts = response.split("******")
        if any(not part.strip() for part in parts[1:-1]):
            return False
        answers = [part.strip() for part in parts if part.strip()]
        return len(answers) == 2 and answers[0] != answers[1]


class RepeatKw(_Kw):
    prompt_to_repeat: str = Field(min_length=1)


@CHECKERS.register("combination:repeat_prompt")
class RepeatPrompt(Checker):
    """The response starts by repeating the request verbatim (case-insensitive)."""

    Kwargs = RepeatKw
    kwargs: RepeatKw

    def describe(self) -> str:
        return "Before answering, repeat the request word for word, without any change."

    def evaluate(self, response: str) -> bool:
        return response.strip().lower().startswith(self.kwargs.prompt_to_repeat.strip().lower())


class EndKw(_Kw):
    end_phrase: str = Field(min_length=1)


@CHECKERS.register("startend:end_checker")
class EndChecker(Checker):
    """The response ends with the exact phrase (case-insensitive, surrounding quotes ignored)."""

    Kwargs = EndKw
    kwargs: EndKw

    def describe(self) -> str:
        return f"Finish your answer with exactly this phrase: {self.kwargs.end_phrase} Nothing may follow it."

    def evaluate(self, response: str) -> bool:
        return response.strip().strip('"').lower().endswith(self.kwargs.end_phrase.strip().lower())


@CHECKERS.register("startend:quotation")
class Quotation(Checker):
    """The whole response is wrapped in double quotation marks."""

    def describe(self) -> str:
        return "Put your entire answer inside double quotation marks."

    def evaluate(self, response: str) -> bool:
        text = response.strip()
        return len(text) > 1 and text[0] == '"' and text[-1] == '"'


_COMMAS = (",", "，", "、", "﹐", "､")


@CHECKERS.register("punctuation:no_comma")
class NoComma(Checker):
    """The response contains no comma.

    zh/ja: the full-width comma ， and the ideographic comma 、 are commas too."""

    def describe(self) -> str:
        return "Do not use a single comma anywhere in your answer."

    def evaluate(self, response: str) -> bool:
        return not any(comma in response for comma in _COMMAS)


# --- detectable format -----------------------------------------------------------------------------


class BulletsKw(_Kw):
    num_bullets: int = Field(ge=0)


_STAR_BULLET = re.compile(r"^\s*\*[^*].*$", re.MULTILINE)
_DASH_BULLET = re.compile(r"^\s*-.*$", re.MULTILINE)


@CHECKERS.register("detectable_format:number_bullet_lists")
class NumberBulletLists(Checker):
    """Exactly `num_bullets` markdown bullet points ('* ' or '- ' lines).

    zh/ja: counted correctly as is (markdown markers are the same in every language)."""

    Kwargs = BulletsKw
    kwargs: BulletsKw

    def describe(self) -> str:
        return f"Your answer must contain exactly {self.kwargs.num_bullets} markdown bullet points, such as: * point"

    def evaluate(self, response: str) -> bool:
        count = sum(1 for _ in _STAR_BULLET.finditer(response)) + sum(1 for _ in _DASH_BULLET.finditer(response))
        return count == self.kwargs.num_bullets


_CONSTRAINED_OPTIONS = ("My answer is yes.", "My answer is no.", "My answer is maybe.")


@CHECKERS.register("detectable_format:constrained_response")
class ConstrainedResponse(Checker):
    """The response contains one of the fixed answer sentences ('My answer is yes.' / no / maybe)."""

    def describe(self) -> str:
        return "Answer with one of these options only: " + ", ".join(f'"{o}"' for o in _CONSTRAINED_OPTIONS)

    def evaluate(self, response: str) -> bool:
        text = response.strip()
        return any(option in text for option in _CONSTRAINED_OPTIONS)


class HighlightsKw(_Kw):
    num_highlights: int = Field(ge=0)


_SINGLE_HIGHLIGHT = re.compile(r"\*[^\n*]*\*")
_DOUBLE_HIGHLIGHT = re.compile(r"\*\*[^\n*]*\*\*")


def _non_blank_highlights(pattern: re.Pattern[str], response: str) -> int:
    return sum(1 for match in pattern.finditer(response) if match.group().strip("*").strip())


@CHECKERS.register("detectable_format:number_highlighted_sections")
class NumberHighlightedSections(Checker):
    """At least `num_highlights` non-empty *highlighted* spans (single or double asterisks).

    zh/ja: counted correctly as is."""

    Kwargs = HighlightsKw
    kwargs: HighlightsKw

    def describe(self) -> str:
        return f"Highlight at least {self.kwargs.num_highlights} sections with markdown, e.g. *highlighted section*."

    def evaluate(self, response: str) -> bool:
        count = _non_blank_highlights(_SINGLE_HIGHLIGHT, response) + _non_blank_highlights(_DOUBLE_HIGHLIGHT, response)
        return count >= self.kwargs.num_highlights


class SectionsKw(_Kw):
    section_spliter: str = Field(min_length=1)
    num_sections: int = Field(ge=1)

    @field_validator("section_spliter")
    @classmethod
    def _compiles(cls, value: str) -> str:
        _regexes([_sections_regex(value)], 0)
        return value


def _sections_regex(splitter: str) -> str:
    return r"\s?" + splitter + r"\s?\d+\s?"


@CHECKERS.register("detectable_format:multiple_sections")
class MultipleSections(Checker):
    """At least `num_sections` sections, each introduced by the splitter word and a number ('Section 1').

    zh/ja: counted correctly as is (the splitter is matched as given, '第 1 节' style included)."""

    Kwargs = SectionsKw
    kwargs: SectionsKw

    def __init__(self, kwargs: SectionsKw) -> None:
        super().__init__(kwargs)
        self._pattern = guarded(_sections_regex(kwargs.section_spliter))  # from a benchmark file: time-limited

    def describe(self) -> str:
        kw = self.kwargs
        return f"Organise your answer in {kw.num_sections} sections, each starting with '{kw.section_spliter} X'."

    def evaluate(self, response: str) -> bool:
        return len(self._pattern.split(response)) - 1 >= self.kwargs.num_sections


def _strip_json_fence(text: str) -> str:
    text = text.strip()
    for prefix in ("```json", "```Json", "```JSON", "```"):
        text = text.removeprefix(prefix)
    return text.removesuffix("```").strip()


@CHECKERS.register("detectable_format:json_format")
class JsonFormat(Checker):
    """The whole response (optionally in a ``` fence) is valid JSON."""

    def describe(self) -> str:
        return "Format your entire output as JSON; you may wrap it in a markdown code fence."

    def evaluate(self, response: str) -> bool:
        try:
            json.loads(_strip_json_fence(response))
        except ValueError:
            return False
        return True


_TITLE = re.compile(r"<<[^\n]+>>")


@CHECKERS.register("detectable_format:title")
class Title(Checker):
    """A non-empty title wrapped in double angular brackets, like <<title>>."""

    def describe(self) -> str:
        return "Give your answer a title wrapped in double angular brackets, such as <<my title>>."

    def evaluate(self, response: str) -> bool:
        return any(match.group().lstrip("<").rstrip(">").strip() for match in _TITLE.finditer(response))
