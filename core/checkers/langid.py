"""Deterministic language identification giving langdetect's answers (DetectorFactory.seed = 0), faster.

langdetect itself supplies the language profiles, the character normalisation and the seeded random
sampling; this module re-implements its per-text work more cheaply:
- n-gram extraction per distinct word (the n-gram state resets at every space), memoised;
- each sampling trial multiplies probabilities in log space with numpy, drawing the same random
  n-grams in the same order, and stops at the same convergence checkpoints (every 5 draws);
- trials stop once the leading language can no longer be overtaken by the remaining trials.
tests/checkers/test_langid.py compares the answers with langdetect.detect on every IFEval response.
"""

from __future__ import annotations

import random
import re
from functools import lru_cache

import numpy as np

_ALPHA, _ALPHA_WIDTH, _BASE_FREQ = 0.5, 0.05, 10000
_N_TRIAL, _ITERATION_LIMIT, _CONV_THRESHOLD, _PROB_THRESHOLD = 7, 1000, 0.99999, 0.1
_MAX_TEXT = 10000
_URL = re.compile(r"https?://[-_.?&~;+=/#0-9A-Za-z]{1,2076}")
_MAIL = re.compile(r"[-_.0-9A-Za-z]{1,64}@[-_0-9A-Za-z]{1,255}[-_.0-9A-Za-z]{1,255}")
_SPACES = re.compile(" +")
_LATIN = re.compile("[A-z]")
_NON_LATIN = re.compile("[\u0300-\u1dff\u1f00-\U0010ffff]")  # from U+0300 on, minus Latin Extended Additional
_CHUNK = 64


@lru_cache(maxsize=1)
def _profiles() -> tuple[dict[str, list[float]], list[str]]:
    from langdetect import DetectorFactory, detector_factory

    DetectorFactory.seed = 0
    detector_factory.init_factory()
    return detector_factory._factory.word_lang_prob_map, detector_factory._factory.langlist


@lru_cache(maxsize=1)
def _normalizers():
    from langdetect.utils.ngram import NGram

    return NGram.normalize, NGram.normalize_vi


_CHAR_MAP: dict[int, str] = {}


def _normalize(text: str) -> str:
    normalize, _ = _normalizers()
    for ch in set(text):
        if ord(ch) not in _CHAR_MAP:
            _CHAR_MAP[ord(ch)] = normalize(ch)
    return text.translate(_CHAR_MAP)


def _prepare(text: str) -> str:
    """langdetect's append() and cleaning_text(): drop URLs and e-mails, collapse spaces, drop Latin in non-Latin text."""
    _, normalize_vi = _normalizers()
    text = normalize_vi(_MAIL.sub(" ", _URL.sub(" ", text)))
    text = _SPACES.sub(" ", text[:_MAX_TEXT])
    if len(_LATIN.findall(text)) * 2 < len(_NON_LATIN.findall(text)):
        text = _LATIN.sub("", text)
    return text


@lru_cache(maxsize=65536)
def _word_grams(word: str, trailing: bool) -> tuple[str, ...]:
    """Known 1-3-grams langdetect emits while reading `word` (and the space after it, if any)."""
    known, _ = _profiles()
    grams, capital, out = " ", False, []
    for ch in word + " " if trailing else word:
        last = grams[-1]
        if last == " ":
            grams, capital = " ", False
        elif len(grams) >= 3:
            grams = grams[1:]
        grams += ch
        capital = (capital or last.isupper()) if ch.isupper() else False
        if not capital:
            out.extend(grams[-n:] for n in range(1, min(3, len(grams)) + 1) if grams[-n:] != " " and grams[-n:] in known)
    return tuple(out)


def extract_ngrams(text: str) -> list[str]:
    """The n-gram sequence langdetect samples from for this text."""
    words = _normalize(_prepare(text)).split(" ")
    last = len(words) - 1
    return [gram for index, word in enumerate(words) if word for gram in _word_grams(word, index < last)]


_ROWS: dict[str, np.ndarray] = {}


def _rows(grams: list[str]) -> np.ndarray:
    known, _ = _profiles()
    for gram in grams:
        if gram not in _ROWS:
            _ROWS[gram] = np.asarray(known[gram], dtype=np.float64)
    return np.stack([_ROWS[gram] for gram in grams])


def _draw(rng: random.Random, ngrams: list[str], count: int) -> list[str]:
    size = len(ngrams)
    return [ngrams[rng._randbelow(size)] for _ in range(count)]


def _trial(rng: random.Random, ngrams: list[str], n_langs: int) -> np.ndarray:
    """One sampling trial: normalised language probabilities at the first converged checkpoint."""
    weight = (_ALPHA + rng.gauss(0.0, 1.0) * _ALPHA_WIDTH) / _BASE_FREQ
    log_prob = np.full(n_langs, -np.log(n_langs))
    done = 0
    while True:
        state = rng.getstate()
        drawn = _draw(rng, ngrams, _CHUNK)
        cumulative = log_prob + np.cumsum(np.log(_rows(drawn) + weight), axis=0)
        steps = np.arange(done, done + _CHUNK)
        checkpoints = np.flatnonzero(steps % 5 == 0)
        rows = cumulative[checkpoints]
        shifted = np.exp(rows - rows.max(axis=1, keepdims=True))
        maxp = 1.0 / shifted.sum(axis=1)
        stop = np.flatnonzero((maxp > _CONV_THRESHOLD) | (steps[checkpoints] >= _ITERATION_LIMIT))
        if stop.size:
            row = checkpoints[stop[0]]
            rng.setstate(state)
            _draw(rng, ngrams, row + 1)
            return shifted[stop[0]] / shifted[stop[0]].sum()
        log_prob = cumulative[-1]
        done += _CHUNK


def _vote(ngrams: list[str]) -> str:
    _, langs = _profiles()
    rng = random.Random(0)
    total = np.zeros(len(langs))
    for trial in range(_N_TRIAL):
        total += _trial(rng, ngrams, len(langs)) / _N_TRIAL
        top = np.sort(total)[-2:]
        if top[1] - top[0] > (_N_TRIAL - trial - 1) / _N_TRIAL + 1e-9:
            break
    best = int(np.argmax(total))
    return langs[best] if total[best] > _PROB_THRESHOLD else "unknown"


def detect_language(text: str) -> str | None:
    """langdetect's answer for the text (seed 0), or None when the text has no usable features."""
    ngrams = extract_ngrams(text)
    return _vote(ngrams) if ngrams else None
