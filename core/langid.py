"""Deterministic language identification giving langdetect's answers (DetectorFactory.seed = 0), faster.

langdetect itself supplies the language profiles, the character normalisation and the seeded random
sampling; this module re-implements its per-text work more cheaply:
- text cleaning skips the passes that cannot change the text (no '@', no 'http', ASCII-only text);
- n-gram extraction is one numba @njit(cache=True) call over the text's code points: character
  normalisation and isupper() come from code-point tables (filled lazily from NGram.normalize, a pure
  lookup table that stays warm between texts; clear_tables() empties it), and each 1-3-gram is found
  in an open-addressing hash table of the profile n-grams (21 bits per code point);
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
from functools import lru_cache
from typing import Any

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
def _matrix() -> np.ndarray:
    """The (n-grams x languages) probability matrix, rows in the profiles' n-gram order."""
    return np.array(list(_profiles()[0].values()), dtype=np.float64)


_UNKNOWN = 0  # code points never normalise to NUL, so 0 marks a character not yet in the tables
_NORM = np.zeros(0x110000, dtype=np.uint32)  # code point -> NGram.normalize(chr(code point)), filled lazily
_UPPER = np.zeros(0x110000, dtype=np.bool_)  # normalised code point -> its isupper()
_SPACE = 32


def _fill_chars(text: str) -> None:
    """Put NGram.normalize and isupper() of the text's characters into the tables."""
    normalize, _ = _normalizers()
    for ch in set(text):
        normal = normalize(ch)
        _NORM[ord(ch)], _UPPER[ord(normal)] = ord(normal), normal.isupper()


def _gram_key(gram: str) -> int:
    """A 1-3-gram as one integer: its code points, 21 bits each (none is 0, so lengths cannot collide)."""
    key = 0
    for ch in gram:
        key = (key << 21) | ord(ch)
    return key


_HASH = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, nogil=True)
def _build_table(keys, bits):  # pragma: no cover
    """Open-addressing table (linear probing) of n-gram keys: slot -> key, slot -> profile row."""
    size = 1 << bits
    slot_keys = np.zeros(size, dtype=np.uint64)
    slot_rows = np.zeros(size, dtype=np.int32)
    for row in range(keys.shape[0]):
        slot = (keys[row] * _HASH) >> np.uint64(64 - bits)
        while slot_keys[slot] != 0:
            slot = (slot + np.uint64(1)) & np.uint64(size - 1)
        slot_keys[slot], slot_rows[slot] = keys[row], row
    return slot_keys, slot_rows


@lru_cache(maxsize=1)
def _gram_table() -> tuple[np.ndarray, np.ndarray, int]:
    """Every profile n-gram's key in an open-addressing table (at most half full), and the table's bit width."""
    keys = np.array([_gram_key(gram) for gram in _gram_list()], dtype=np.uint64)
    bits = max(4, (2 * len(keys)).bit_length())
    slot_keys, slot_rows = _build_table(keys, bits)
    return slot_keys, slot_rows, bits


@njit(cache=True, nogil=True)
def _extract(codes, norm, upper, slot_keys, slot_rows, bits, out):  # pragma: no cover
    """langdetect's _extract_ngrams over the prepared text's code points, compiled: fills out with the profile rows
    of the known 1-3-grams in order and returns their number, or -1 at a character missing from the tables.

    The n-gram buffer (grams, at most 3 characters, last ones p3 p2 p1) and the capital-word flag follow
    NGram.add_char: a space ends a word (grams back to " "), a run of spaces adds nothing, and n-grams are
    skipped while two upper-case characters in a row mark a capitalised word.
    """
    mask = np.uint64((1 << bits) - 1)
    shift = np.uint64(64 - bits)
    p1, p2, p3, length, capital, count = _SPACE, 0, 0, 1, False, 0
    for code in codes:
        ch = norm[code]
        if ch == _UNKNOWN:
            return -1
        last = p1
        if last == _SPACE:
            p1, length, capital = _SPACE, 1, False
            if ch == _SPACE:
                continue
        elif length >= 3:
            length = 2
        p3, p2, p1 = p2, p1, ch
        length += 1
        if upper[ch]:
            if upper[last]:
                capital = True
        else:
            capital = False
        if capital:
            continue
        for n in range(1, 4):
            if length < n:
                break
            if n == 1:
                if p1 == _SPACE:
                    continue
                key = np.uint64(p1)
            elif n == 2:
                key = (np.uint64(p2) << np.uint64(21)) | np.uint64(p1)
            else:
                key = (np.uint64(p3) << np.uint64(42)) | (np.uint64(p2) << np.uint64(21)) | np.uint64(p1)
            slot = (key * _HASH) >> shift
            while True:
                found = slot_keys[slot]
                if found == key:
                    out[count] = slot_rows[slot]
                    count += 1
                    break
                if found == 0:
                    break
                slot = (slot + np.uint64(1)) & mask
    return count


def ngram_rows(text: str) -> np.ndarray:
    """The sequence of n-grams (as int32 profile rows) langdetect samples from for this text."""
    prepared = _prepare(text)
    codes = np.frombuffer(prepared.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    slot_keys, slot_rows, bits = _gram_table()
    out = np.empty(3 * len(codes), dtype=np.int32)
    count = _extract(codes, _NORM, _UPPER, slot_keys, slot_rows, bits, out)
    if count < 0:
        _fill_chars(prepared)
        count = _extract(codes, _NORM, _UPPER, slot_keys, slot_rows, bits, out)
    return out[:count]


def clear_tables() -> None:
    """Forget the character normalisations learnt so far (to time cold lookup tables)."""
    _NORM[:] = _UNKNOWN
    _UPPER[:] = False


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
    words, matrix = _seeded_words(), _matrix()
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
    """Load the language profiles, then compile the numba kernels (or load them from numba's on-disk cache).

    Returns the seconds spent on the kernels and the n-gram hash table, and whether all kernels came from the cache.
    """
    _profiles(), _matrix(), _gram_list(), _seeded_words()
    kernels: tuple[Any, ...] = (_build_table, _extract, _run_trial)  # numba dispatchers
    hits = [sum(kernel.stats.cache_hits.values()) for kernel in kernels]
    start = time.perf_counter()
    detect_language("warm up")
    seconds = time.perf_counter() - start
    return seconds, all(sum(k.stats.cache_hits.values()) > before for k, before in zip(kernels, hits, strict=True))
