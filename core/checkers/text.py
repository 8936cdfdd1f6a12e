"""Per-response derived data shared by checkers (word, sentence and capital-word counts, language), cached."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal

from core.checkers.langid import detect_language
from core.checkers.sentences import split_sentences

Relation = Literal["less than", "at least"]

_WORD = re.compile(r"\w+")
_CACHE = 1024


def compare(count: int, relation: Relation, target: int) -> bool:
    """IFEval relation test: 'less than' is count < target, 'at least' is count >= target."""
    return count < target if relation == "less than" else count >= target


@lru_cache(maxsize=_CACHE)
def word_count(text: str) -> int:
    """Number of \\w+ runs in the text (IFEval's word count)."""
    return sum(1 for _ in _WORD.finditer(text))


@lru_cache(maxsize=_CACHE)
def sentence_count(text: str) -> int:
    """Number of sentences in the text, by the punkt-compatible splitter."""
    return len(split_sentences(text))


@lru_cache(maxsize=1)
def _treebank():
    from nltk.tokenize.destructive import NLTKWordTokenizer

    return NLTKWordTokenizer()


@lru_cache(maxsize=_CACHE)
def capital_word_count(text: str) -> int:
    """Number of all-capital word tokens (Treebank tokenization of each sentence)."""
    tokenizer = _treebank()
    return sum(
        1 for sentence in split_sentences(text) for token in tokenizer.tokenize(sentence) if token.isupper()
    )


@lru_cache(maxsize=_CACHE)
def language(text: str) -> str | None:
    """ISO 639-1 code detected for the text (deterministic), None when no language can be detected."""
    return detect_language(text)
