"""Deterministic language identification giving langdetect's answers (DetectorFactory.seed = 0), faster.

langdetect itself supplies the language profiles, the character normalisation and the seeded random
sampling; this module re-implements its per-text work more cheaply:
- text cleaning skips the passes that cannot change the text (no '@', no 'http', ASCII-only text);
- n-gram extraction per distinct space-separated token (the n-gram state resets at every space),
  memoised as int32 bytes in plain dicts (a pure lookup table that stays warm between texts;
  clear_tables() empties it), joined into one array per text;
- the seeded random stream (random.Random(0), the same for every text) is precomputed once with numpy;
  the gaussian smoothing draws are taken from it in Python (exactly random.gauss), and each trial's
  random.choice draws, probability updates, normalisations and convergence checks run as one numba
  @njit(cache=True) call doing langdetect's float64 operations in langdetect's order;
- trials stop once the leading language can no longer be overtaken by the remaining trials.
tests/checkers/test_fast_paths.py compares the answers with langdetect.detect on IFEval responses.
"""

from __future__ import annotations

import math
import random
import re
import sys
import time
from array import array
from functools import lru_cache

import numpy as np
from numba import njit

_ALPHA, _ALPHA_WIDTH, _BASE_FREQ = 0.5, 0.05, 10000
_N_TRIAL, _ITERATION_LIMIT, _CONV_THRESHOLD, _PROB_THRESHOLD = 7, 1000, 0.99999, 0.1
_MAX_TEXT = 10000
_URL = re.compile(r"https?://[-_.?&~;+=/#0-9A-Za-z]{1,2076}")
_MAIL = re.compile(r"[-_.0-9A-Za-z]{1,64}@[-_0-9A-Za-z]{1,255}[-_.0-9A-Za-z]{1,255}")
_LATIN = re.compile("[A-z]")
_NON_LATIN = re.compile("[\u0300-\u1dff\u1f00-\U0010ffff]")  # from U+0300 on, minus Latin Extended Additional
_RANDOM_WORDS = 1 << 16  # a detection uses at most 7 x 1001 draws, each taking 2 words at worst on average
TWOPI = 2.0 * math.pi
_INT32 = next(code for code in "ilq" if array(code).itemsize == 4)  # array typecode of int32


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


@lru_cache(maxsize=1)
def _dmarks() -> re.Pattern[str]:
    """Any of the combining marks normalize_vi rewrites."""
    from langdetect.utils.ngram import NGram

    return re.compile(f"[{NGram.DMARK_CLASS}]")


@lru_cache(maxsize=1)
def _ascii_table() -> bytes:
    """langdetect's character normalisation of the 128 ASCII characters, as a bytes.translate table."""
    normalize, _ = _normalizers()
    return "".join(normalize(chr(code)) for code in range(128)).encode("ascii") + bytes(range(128, 256))


_CHAR_MAP: dict[int, str] = {}


def _normalize(text: str) -> str:
    """NGram.normalize applied to every character."""
    if text.isascii():
        return text.encode("ascii").translate(_ascii_table()).decode("ascii")
    normalize, _ = _normalizers()
    for ch in set(text):
        if ord(ch) not in _CHAR_MAP:
            _CHAR_MAP[ord(ch)] = normalize(ch)
    return text.translate(_CHAR_MAP)


def _prepare(text: str) -> str:
    """langdetect's append() and cleaning_text(): drop URLs and e-mails, drop Latin in mostly non-Latin text.

    Runs of spaces are not collapsed: the n-gram state resets at a space whether or not another follows.
    """
    if "http" in text:
        text = _URL.sub(" ", text)
    if "@" in text:
        text = _MAIL.sub(" ", text)
    if text.isascii():
        return text[:_MAX_TEXT]
    if _dmarks().search(text):
        text = _normalizers()[1](text)
    text = text[:_MAX_TEXT]
    non_latin = len(text) - len(_NON_LATIN.sub("", text))
    # every 'e' is Latin: enough of them settle the comparison without counting all Latin letters
    if non_latin and text.count("e") * 2 < non_latin and len(_LATIN.findall(text)) * 2 < non_latin:
        text = _LATIN.sub("", text)
    return text


@lru_cache(maxsize=1)
def _gram_ids() -> tuple[dict[str, int], np.ndarray]:
    """Every profile n-gram's row number, and the (n-grams x languages) probability matrix."""
    known, _ = _profiles()
    return {gram: row for row, gram in enumerate(known)}, np.array(list(known.values()), dtype=np.float64)


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


def _token_rows(token: str, final: bool) -> bytes:
    """Rows (int32 bytes) of the n-grams of one space-free piece of prepared text (and the space after it unless final)."""
    pieces = _normalize(token).split(" ")  # normalisation turns punctuation into spaces
    last = pieces.pop()
    rows = [row for piece in pieces if piece for row in _word_grams(piece, True)]
    if last:
        rows.extend(_word_grams(last, not final))
    return array(_INT32, rows).tobytes()


class _TokenRows(dict):
    """Memo: token -> _token_rows(token, final) (a plain dict, so look-ups of known tokens stay in C)."""

    def __init__(self, final: bool) -> None:
        super().__init__()
        self.final = final

    def __missing__(self, token: str) -> bytes:
        rows = self[token] = _token_rows(token, self.final)
        return rows


_FOLLOWED, _FINAL = _TokenRows(False), _TokenRows(True)
_MEMO_LIMIT = 1 << 18  # tokens remembered per memo before it is reset


def ngram_rows(text: str) -> np.ndarray:
    """The sequence of n-grams (as int32 profile rows) langdetect samples from for this text."""
    tokens = _prepare(text).split(" ")
    last = tokens.pop()
    for memo in (_FOLLOWED, _FINAL):
        if len(memo) > _MEMO_LIMIT:
            memo.clear()
    rows = b"".join(map(_FOLLOWED.__getitem__, tokens))
    if last:
        rows += _FINAL[last]
    return np.frombuffer(rows, dtype=np.int32)


def clear_tables() -> None:
    """Forget the memoised per-word n-gram rows and character normalisations (to time cold lookup tables)."""
    _FOLLOWED.clear()
    _FINAL.clear()
    _CHAR_MAP.clear()


def extract_ngrams(text: str) -> list[str]:
    """The n-gram sequence langdetect samples from for this text."""
    grams = _gram_list()
    return [grams[row] for row in ngram_rows(text).tolist()]


@lru_cache(maxsize=1)
def _gram_list() -> list[str]:
    return list(_profiles()[0])


@lru_cache(maxsize=1)
def _seeded_words() -> np.ndarray:
    """The first 2**16 outputs of random.Random(0) (the seed never changes, so they are computed once)."""
    state = np.array(random.Random(0).getstate()[1], dtype=np.uint32)
    bits = np.random.MT19937()
    bits.state = {"bit_generator": "MT19937", "state": {"key": state[:624], "pos": int(state[624])}}
    return bits.random_raw(_RANDOM_WORDS).astype(np.uint32)


@njit(cache=True, nogil=True)
def _run_trial(words, position, shift, count, rows, matrix, weight, prob, langprob, neumaier, trials_left):
    """One langdetect trial, compiled: the stream position after its last draw (-1 if the stream ran out), and
    whether the leading language is settled (it leads by more than the trials left can add to another).

    Starting from uniform probabilities, each random.choice(ngrams) draw (getrandbits(k) with rejection, from
    the precomputed Mersenne Twister words) multiplies prob by (weight + the n-gram's profile row); after draws
    1, 6, 11, ... prob is normalised by sum(prob) (Python's sum: left to right, Neumaier-compensated from
    Python 3.12) and the trial stops once the largest share exceeds the threshold or 1001 draws were made.
    The operations and their order are langdetect's, so the float64 results are the same bit for bit.
    langprob accumulates prob / n_trial, as langdetect does.
    """
    width = prob.shape[0]
    for j in range(width):
        prob[j] = 1.0 / width
    available = words.shape[0]
    i = 0
    while True:
        while True:
            if position >= available:
                return -1, False
            pick = words[position] >> shift
            position += 1
            if pick < count:
                break
        row = matrix[rows[pick]]
        for j in range(width):
            prob[j] *= weight + row[j]
        if i % 5 == 0:
            total = 0.0
            if neumaier:
                compensation = 0.0
                for j in range(width):
                    x = prob[j]
                    t = total + x
                    if abs(total) >= abs(x):
                        compensation += (total - t) + x
                    else:
                        compensation += (x - t) + total
                    total = t
                if compensation != 0.0 and math.isfinite(compensation):
                    total += compensation
            else:
                for j in range(width):
                    total += prob[j]
            top = 0.0
            for j in range(width):
                p = prob[j] / total
                if top < p:
                    top = p
                prob[j] = p
            if top > _CONV_THRESHOLD or i >= _ITERATION_LIMIT:
                break
        i += 1
    first = second = 0.0
    for j in range(width):
        langprob[j] += prob[j] / _N_TRIAL
        if langprob[j] > first:
            first, second = langprob[j], first
        elif langprob[j] > second:
            second = langprob[j]
    # a trial adds at most 1/n_trial to a language (the 1e-9 covers rounding)
    return position, first - second > trials_left / _N_TRIAL + 1e-9


_NEUMAIER_SUM = sys.version_info >= (3, 12)  # builtin sum() of floats is compensated from Python 3.12 on


def _gauss_pair(words: np.ndarray, position: int) -> tuple[float, float]:
    """random.gauss(0, 1) from the four 32-bit outputs at `position`: the value returned now and the one kept."""
    a, b, c, d = words[position : position + 4].tolist()
    x2pi = ((a >> 5) * 67108864.0 + (b >> 6)) * (1.0 / 9007199254740992.0) * TWOPI
    g2rad = math.sqrt(-2.0 * math.log(1.0 - ((c >> 5) * 67108864.0 + (d >> 6)) * (1.0 / 9007199254740992.0)))
    return math.cos(x2pi) * g2rad, math.sin(x2pi) * g2rad


def _vote(rows: np.ndarray) -> str:
    """langdetect's detect(): seeded trials (one compiled call each), averaged; the leader if it is likely enough."""
    _, langs = _profiles()
    words, matrix = _seeded_words(), _gram_ids()[1]
    count = len(rows)
    shift = np.uint32(32 - count.bit_length())
    prob, langprob = np.empty(len(langs)), np.zeros(len(langs))
    position, spare = 0, None
    for trial in range(_N_TRIAL):
        if spare is None:
            gauss, spare = _gauss_pair(words, position)
            position += 4
        else:
            gauss, spare = spare, None
        weight = (_ALPHA + gauss * _ALPHA_WIDTH) / _BASE_FREQ
        position, settled = _run_trial(
            words, position, shift, count, rows, matrix, weight, prob, langprob, _NEUMAIER_SUM, _N_TRIAL - trial - 1
        )
        if position < 0:
            raise RuntimeError("language detection needed more random draws than precomputed")
        if settled:
            break
    best = int(np.argmax(langprob))
    return langs[best] if langprob[best] > _PROB_THRESHOLD else "unknown"


def detect_language(text: str) -> str | None:
    """langdetect's answer for the text (seed 0), or None when the text has no usable features."""
    rows = ngram_rows(text)
    return _vote(rows) if len(rows) else None


def warm_up() -> tuple[float, bool]:
    """Load the language profiles, then compile the trial kernel (or load it from numba's on-disk cache).

    Returns the seconds spent on the kernel alone and whether it came from the cache.
    """
    _profiles(), _gram_ids(), _seeded_words()
    hits = sum(_run_trial.stats.cache_hits.values())
    start = time.perf_counter()
    detect_language("warm up")
    return time.perf_counter() - start, sum(_run_trial.stats.cache_hits.values()) > hits
