"""A small sentence splitter tuned to agree with NLTK's English punkt model on typical model output.

Rules, applied to whitespace-separated tokens:
- a token whose text (closing quotes, brackets and '*' stripped) ends in '?' or '!' ends a sentence;
- a token ending in '.' ends a sentence, except: known abbreviations ("Mr.", "e.g.", "U.S."; "No." only before a
  number: "No. 5" abbreviates, "No. It was not." answers no, as FollowRAG's answers do), capital single-letter
  initials ("J."), numbers followed by a lowercase word ("3. items"), and an ellipsis ("...") not
  followed by a capitalised word;
- line breaks alone never end a sentence (punkt ignores layout);
- Chinese / Japanese: 。！？ end a sentence without a following space (core.language.CJK_SENTENCE_BREAK), so the text
  is cut there first and each piece is split by the rules above (text without those marks is unchanged).
"""

from __future__ import annotations

import re

from core.language import CJK_SENTENCE_BREAK, wordlists

_TOKEN = re.compile(r"\S+")
_CLOSERS = "\"')]}*»”’"
_NUMBER = re.compile(r"^-?[.,]?\d[\d,.\-]*$")
_CJK_BREAK = re.compile(CJK_SENTENCE_BREAK)
ABBREVIATIONS = frozenset(wordlists("sentences")["abbreviations"])

NUMBER_ABBREVIATIONS = frozenset(wordlists("sentences")["number_abbreviations"])  # only before a number


def _is_break(token: str, next_token: str | None) -> bool:
    core = token.rstrip(_CLOSERS)
    if not core:
        return False
    if core[-1] in "?!":
        return True
    if core[-1] != ".":
        return False
    if core.endswith(".."):
        return next_token is not None and next_token[:1].isupper()
    raw = core[:-1].lstrip("\"'([{*“‘")
    stem = raw.lower()
    if stem in NUMBER_ABBREVIATIONS:  # "No. 5" abbreviates number; "No. The team lost." answers no
        return next_token is None or not next_token.lstrip("#(")[:1].isdigit()
    if stem in ABBREVIATIONS or stem.rsplit("-", 1)[-1] in ABBREVIATIONS or (len(raw) == 1 and raw.isupper()):
        return False
    if _NUMBER.match(stem):
        return next_token is None or not next_token[:1].islower()
    return True


_MAYBE_END = frozenset(".?!" + _CLOSERS)  # last characters of tokens that can end a sentence


def _pieces(text: str) -> list[str]:
    """`text` cut after every Chinese / Japanese sentence end (one piece when it has none)."""
    return _CJK_BREAK.split(text) if _CJK_BREAK.search(text) else [text]


def count_sentences(text: str) -> int:
    """len(split_sentences(text)), without building the sentences."""
    return sum(map(_count_piece, _pieces(text)))


def _count_piece(text: str) -> int:
    tokens = text.split()
    breaks = sum(
        1 for token, following in zip(tokens, tokens[1:], strict=False) if token[-1] in _MAYBE_END and _is_break(token, following)
    )
    return breaks + (1 if tokens else 0)


def split_sentences(text: str) -> list[str]:
    """Split text into sentences (whitespace-trimmed, non-empty)."""
    return [sentence for piece in _pieces(text) for sentence in _split_piece(piece)]


def _split_piece(text: str) -> list[str]:
    tokens = list(_TOKEN.finditer(text))
    sentences: list[str] = []
    start = 0
    for index, match in enumerate(tokens):
        following = tokens[index + 1].group() if index + 1 < len(tokens) else None
        if following is not None and _is_break(match.group(), following):
            sentences.append(text[start : match.end()].strip())
            start = match.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences
