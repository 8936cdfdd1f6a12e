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

import math
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
_CHUNK = 128


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


@lru_cache(maxsize=1)
def _gram_ids() -> tuple[dict[str, int], np.ndarray]:
    """Every profile n-gram's row number, and the (n-grams x languages) probability matrix."""
    known, _ = _profiles()
    return {gram: row for row, gram in enumerate(known)}, np.array(list(known.values()), dtype=np.float64)


@lru_cache(maxsize=65536)
def _word_grams(word: str, trailing: bool) -> tuple[int, ...]:
    """Rows of the known 1-3-grams langdetect emits while reading `word` (and the space after it, if any)."""
    ids, _ = _gram_ids()
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
            out.extend(ids[grams[-n:]] for n in range(1, min(3, len(grams)) + 1) if grams[-n:] in ids)
    return tuple(out)


def ngram_rows(text: str) -> list[int]:
    """The sequence of n-grams (as profile rows) langdetect samples from for this text."""
    words = _normalize(_prepare(text)).split(" ")
    last = len(words) - 1
    return [row for index, word in enumerate(words) if word for row in _word_grams(word, index < last)]


def extract_ngrams(text: str) -> list[str]:
    """The n-gram sequence langdetect samples from for this text."""
    grams = _gram_list()
    return [grams[row] for row in ngram_rows(text)]


@lru_cache(maxsize=1)
def _gram_list() -> list[str]:
    return list(_profiles()[0])


@lru_cache(maxsize=1)
def _seeded_words() -> np.ndarray:
    """The first 2**16 outputs of random.Random(0) (the seed never changes, so they are computed once)."""
    state = np.array(random.Random(0).getstate()[1], dtype=np.uint32)
    bits = np.random.MT19937()
    bits.state = {"bit_generator": "MT19937", "state": {"key": state[:624], "pos": int(state[624])}}
    return bits.random_raw(1 << 16)


class _Stream:
    """Python's seeded Mersenne Twister (random.Random(0)) replayed with numpy, read in blocks."""

    def __init__(self) -> None:
        self._words = _seeded_words()
        self.pos = 0
        self._gauss_next: float | None = None

    def words(self, count: int) -> np.ndarray:
        """The next `count` 32-bit outputs, without consuming them."""
        if self.pos + count > len(self._words):
            raise RuntimeError("language detection needed more random draws than precomputed")
        return self._words[self.pos : self.pos + count]

    def _random(self) -> float:
        a, b = (int(w) for w in self.words(2))
        self.pos += 2
        return ((a >> 5) * 67108864.0 + (b >> 6)) * (1.0 / 9007199254740992.0)

    def gauss(self) -> float:
        """random.gauss(0.0, 1.0), consuming the same outputs."""
        if self._gauss_next is not None:
            z, self._gauss_next = self._gauss_next, None
            return z
        x2pi = self._random() * 2.0 * math.pi
        g2rad = math.sqrt(-2.0 * math.log(1.0 - self._random()))
        self._gauss_next = math.sin(x2pi) * g2rad
        return math.cos(x2pi) * g2rad

    def below(self, n: int, block: int) -> tuple[np.ndarray, np.ndarray]:
        """Up to ~block/2 successive random.randrange(n) values and the outputs consumed through each one."""
        shift = 32 - n.bit_length()
        values = self.words(block) >> np.uint64(shift)
        accepted = np.flatnonzero(values < n)
        return values[accepted].astype(np.intp), accepted + 1


def _trial(stream: _Stream, rows: list[int], matrix: np.ndarray) -> np.ndarray:
    """One sampling trial: normalised language probabilities at the first converged checkpoint."""
    weight = (_ALPHA + stream.gauss() * _ALPHA_WIDTH) / _BASE_FREQ
    log_prob = np.full(matrix.shape[1], -np.log(matrix.shape[1]))
    done = 0
    while True:
        picks, consumed = stream.below(len(rows), _CHUNK)
        cumulative = log_prob + np.cumsum(np.log(matrix[[rows[pick] for pick in picks.tolist()]] + weight), axis=0)
        steps = np.arange(done, done + len(picks))
        checkpoints = np.flatnonzero(steps % 5 == 0)
        shifted = np.exp(cumulative[checkpoints] - cumulative[checkpoints].max(axis=1, keepdims=True))
        maxp = 1.0 / shifted.sum(axis=1)
        stop = np.flatnonzero((maxp > _CONV_THRESHOLD) | (steps[checkpoints] >= _ITERATION_LIMIT))
        if stop.size:
            stream.pos += int(consumed[checkpoints[stop[0]]])
            return shifted[stop[0]] / shifted[stop[0]].sum()
        stream.pos += _CHUNK
        log_prob = cumulative[-1]
        done += len(picks)


def _vote(rows: list[int]) -> str:
    _, langs = _profiles()
    matrix = _gram_ids()[1]
    stream = _Stream()
    total = np.zeros(len(langs))
    for trial in range(_N_TRIAL):
        total += _trial(stream, rows, matrix) / _N_TRIAL
        top = np.sort(total)[-2:]
        if top[1] - top[0] > (_N_TRIAL - trial - 1) / _N_TRIAL + 1e-9:
            break
    best = int(np.argmax(total))
    return langs[best] if total[best] > _PROB_THRESHOLD else "unknown"


def detect_language(text: str) -> str | None:
    """langdetect's answer for the text (seed 0), or None when the text has no usable features."""
    rows = ngram_rows(text)
    return _vote(rows) if rows else None
