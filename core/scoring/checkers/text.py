"""Per-response derived data shared by checkers (word, sentence and capital-word counts, language), cached.

Chinese and Japanese: every Han or kana character is one word (the 字 / 文字 unit length limits use in those
languages), sentences also end at 。！？, and Han / kana characters separate words for the capital-word count. Text
without those characters is counted exactly as IFEval counts it."""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import threading
import types
from functools import lru_cache
from typing import Literal

from core.language import CJK_RE, langdetect_language
from core.scoring.checkers.sentences import count_sentences

Relation = Literal["less than", "at least"]

_WORD = re.compile(r"\w+")
_CACHE = 1024


def compare(count: int, relation: Relation, target: int) -> bool:
    """IFEval relation test: 'less than' is count < target, 'at least' is count >= target."""
    return count < target if relation == "less than" else count >= target


@lru_cache(maxsize=_CACHE)
def word_count(text: str) -> int:
    """Number of \\w+ runs in the text (IFEval's word count), each Han or kana character counting as one word."""
    cjk = len(CJK_RE.findall(text))
    return cjk + len(_WORD.findall(CJK_RE.sub(" ", text) if cjk else text))


@lru_cache(maxsize=_CACHE)
def sentence_count(text: str) -> int:
    """Number of sentences in the text, by the punkt-compatible splitter."""
    return count_sentences(text)


_IMPORT_LOCK = threading.Lock()


def _import_without_package_init(name: str, package: str) -> types.ModuleType:
    """Import module `name` of `package` without running the package's __init__ (and its parents' in `name`).

    nltk's __init__ imports most of NLTK and scipy.stats (about 0.9 s of CPU); the Treebank tokenizer needs four
    small modules. Empty stand-ins for the packages are used while importing and removed afterwards, so a later
    `import nltk` anywhere gets the real package."""
    if package in sys.modules:
        return importlib.import_module(name)
    spec = importlib.util.find_spec(package)
    if spec is None or spec.submodule_search_locations is None:
        raise ModuleNotFoundError(f"no package named {package!r}", name=package)
    root = spec.submodule_search_locations
    with _IMPORT_LOCK:
        before = set(sys.modules)
        parts = name.split(".")
        for depth in range(1, len(parts)):
            shell = types.ModuleType(".".join(parts[:depth]))
            shell.__path__ = [f"{location}/{'/'.join(parts[1:depth])}".rstrip("/") for location in root]
            sys.modules[shell.__name__] = shell
        try:
            return importlib.import_module(name)
        finally:
            for loaded in set(sys.modules) - before:
                if loaded == package or loaded.startswith(package + "."):
                    del sys.modules[loaded]


@lru_cache(maxsize=1)
def _treebank():
    return _import_without_package_init("nltk.tokenize.destructive", "nltk").NLTKWordTokenizer()


# A whitespace token that is only ASCII letters/digits, possibly wrapped in plain punctuation, yields exactly
# one Treebank word token (its core), except the words Treebank splits in two ("gonna" -> "gon" "na");
# anything else is tokenized by NLTK's Treebank tokenizer.
_SIMPLE_TOKEN = re.compile(r"[\"(\[]*([A-Za-z0-9]+)[.,!?;:\")\]]*")
_SPLIT_WORDS = frozenset({"cannot", "gimme", "gonna", "gotta", "lemme", "wanna"})


def treebank_capital_count(text: str) -> int:
    """All-capital tokens of NLTK's Treebank tokenization of the text (the slow, exact definition)."""
    return sum(1 for token in _treebank().tokenize(text) if token.isupper())


@lru_cache(maxsize=65536)
def _token_capitals(token: str) -> int:
    simple = _SIMPLE_TOKEN.fullmatch(token)
    if not simple:  # a token without an upper-case letter has no all-capital part
        return treebank_capital_count(token) if any(map(str.isupper, token)) else 0
    core = simple.group(1)
    return core.isupper() * (2 if core.lower() in _SPLIT_WORDS else 1)


@lru_cache(maxsize=_CACHE)
def capital_word_count(text: str) -> int:
    """Number of all-capital word tokens (IFEval's count); tokens without a cased upper-case letter count 0; Han and
    kana characters separate tokens ('公司CEO和CFO表示' has two)."""
    tokens = CJK_RE.sub(" ", text).split() if CJK_RE.search(text) else text.split()
    return sum(map(_token_capitals, [token for token in tokens if not token.islower()]))


@lru_cache(maxsize=_CACHE)
def language(text: str) -> str | None:
    """ISO 639-1 code detected for the text (deterministic), None when no language can be detected."""
    return langdetect_language(text)


def clear_caches() -> None:
    """Forget all cached per-response data (used by benchmarks to time cold checks)."""
    for cached in (word_count, sentence_count, capital_word_count, _token_capitals, language):
        cached.cache_clear()
