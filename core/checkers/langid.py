"""Deterministic language identification giving langdetect's answers (DetectorFactory.seed = 0), faster.

langdetect itself supplies the language profiles, the character normalisation and the seeded random
sampling; this module re-implements its per-text work more cheaply:
- text cleaning skips the passes that cannot change the text (no '@', no 'http', ASCII-only text);
- n-gram extraction per distinct word (the n-gram state resets at every space), memoised in plain
  dicts (a pure lookup table that stays warm between texts; clear_tables() empties it);
- the seeded random stream (random.Random(0), the same for every text) is replayed with numpy: the
  accepted random.choice draws are found in blocks of words, their profile rows gathered per block;
- each trial multiplies the 5 draws between two convergence checkpoints (langdetect checks every 5
  draws), takes one log per checkpoint and cumulates them, so a block of checkpoints is scored with a
  handful of array operations (no BLAS); the block length is guessed from the previous trial;
- trials stop once the leading language can no longer be overtaken by the remaining trials.
tests/checkers/test_fast_paths.py compares the answers with langdetect.detect on IFEval responses.
"""

from __future__ import annotations

import math
import random
import re
from bisect import bisect_left
from functools import lru_cache
from itertools import chain

import numpy as np

_ALPHA, _ALPHA_WIDTH, _BASE_FREQ = 0.5, 0.05, 10000
_N_TRIAL, _ITERATION_LIMIT, _CONV_THRESHOLD, _PROB_THRESHOLD = 7, 1000, 0.99999, 0.1
_CHECK_EVERY = 5
_LAST_CHECKPOINT = _ITERATION_LIMIT // _CHECK_EVERY
_CONV_LIMIT = 1.0 / _CONV_THRESHOLD  # converged when the normalising sum (leader counted as 1) is below this
_MAX_TEXT = 10000
_URL = re.compile(r"https?://[-_.?&~;+=/#0-9A-Za-z]{1,2076}")
_MAIL = re.compile(r"[-_.0-9A-Za-z]{1,64}@[-_0-9A-Za-z]{1,255}[-_.0-9A-Za-z]{1,255}")
_SPACES = re.compile(" {2,}")
_LATIN = re.compile("[A-z]")
_NON_LATIN = re.compile("[\u0300-\u1dff\u1f00-\U0010ffff]")  # from U+0300 on, minus Latin Extended Additional
_RANDOM_WORDS = 1 << 16
_FIRST_SCAN = 256  # random words examined for draws when a text's detection starts
_MIN_CHUNK = 4  # smallest first block of a later trial
_FIRST_CHUNK = 16  # checkpoints scored by the first trial's first block (later trials start from the last one's length)


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
    """langdetect's append() and cleaning_text(): drop URLs and e-mails, collapse spaces, drop Latin in non-Latin text."""
    if "http" in text:
        text = _URL.sub(" ", text)
    if "@" in text:
        text = _MAIL.sub(" ", text)
    ascii_only = text.isascii()
    if not ascii_only and _dmarks().search(text):
        text = _normalizers()[1](text)
    text = text[:_MAX_TEXT]
    if "  " in text:
        text = _SPACES.sub(" ", text)
    if not ascii_only and len(_LATIN.findall(text)) * 2 < len(_NON_LATIN.findall(text)):
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


class _WordRows(dict):
    """Memo: word -> _word_grams(word, trailing) (a plain dict, so look-ups of known words stay in C)."""

    def __init__(self, trailing: bool) -> None:
        super().__init__()
        self.trailing = trailing

    def __missing__(self, word: str) -> tuple[int, ...]:
        rows = self[word] = _word_grams(word, self.trailing)
        return rows


_FOLLOWED, _FINAL = _WordRows(True), _WordRows(False)
_MEMO_LIMIT = 1 << 18  # words remembered per memo before it is reset


def ngram_rows(text: str) -> list[int]:
    """The sequence of n-grams (as profile rows) langdetect samples from for this text."""
    words = _normalize(_prepare(text)).split(" ")
    last = words.pop()
    for memo in (_FOLLOWED, _FINAL):
        if len(memo) > _MEMO_LIMIT:
            memo.clear()
    rows = list(chain.from_iterable(map(_FOLLOWED.__getitem__, filter(None, words))))
    if last:
        rows.extend(_FINAL[last])
    return rows


def clear_tables() -> None:
    """Forget the memoised per-word n-gram rows and character normalisations (to time cold lookup tables)."""
    _FOLLOWED.clear()
    _FINAL.clear()
    _CHAR_MAP.clear()


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
    return bits.random_raw(_RANDOM_WORDS).astype(np.uint32)


def _uniform(a: int, b: int) -> float:
    """random.random() from two 32-bit outputs."""
    return ((a >> 5) * 67108864.0 + (b >> 6)) * (1.0 / 9007199254740992.0)


def _gauss_pair(words: list[int]) -> tuple[float, float]:
    """random.gauss(0, 1) from four 32-bit outputs: the value returned now and the one kept for the next call."""
    x2pi = _uniform(words[0], words[1]) * 2.0 * math.pi
    g2rad = math.sqrt(-2.0 * math.log(1.0 - _uniform(words[2], words[3])))
    return math.cos(x2pi) * g2rad, math.sin(x2pi) * g2rad


class _Draws:
    """langdetect's seeded random.choice(ngrams) draws for one text: stream positions and profile rows, in order."""

    def __init__(self, rows: list[int]) -> None:
        self.rows, self.n = rows, len(rows)
        self.shift = np.uint32(32 - self.n.bit_length())
        self.scanned = 0
        self.positions: list[int] = []
        self.picks: list[int] = []

    def _scan(self) -> None:
        """Examine more random words (doubling), keeping the accepted draws' positions and random.randrange(n) values."""
        size = max(_FIRST_SCAN, self.scanned)
        if self.scanned + size > _RANDOM_WORDS:
            raise RuntimeError("language detection needed more random draws than precomputed")
        values = _seeded_words()[self.scanned : self.scanned + size] >> self.shift
        accepted = np.flatnonzero(values < self.n)
        self.positions += (accepted + self.scanned).tolist()
        self.picks += values[accepted].tolist()
        self.scanned += size

    def window(self, first: int, count: int) -> np.ndarray:
        """Profile probabilities (count x languages) of draws first .. first+count-1."""
        while len(self.picks) < first + count:
            self._scan()
        rows = self.rows
        return np.take(_gram_ids()[1], [rows[pick] for pick in self.picks[first : first + count]], axis=0)

    def after(self, position: int) -> int:
        """Index of the first draw at or after a stream position."""
        while not self.positions or self.positions[-1] < position:
            self._scan()
        return bisect_left(self.positions, position)

    def end(self, index: int) -> int:
        """Stream position just after draw `index`."""
        return self.positions[index] + 1


def _block_logs(draws: _Draws, start: int, done: int, chunk: int, weight: float) -> np.ndarray:
    """Log of the product of (p + weight) over the draws leading to each of checkpoints done .. done+chunk-1.

    Checkpoint j of a trial comes after its draw 5j: checkpoint 0 follows one draw, the others five more.
    """
    width = _gram_ids()[1].shape[1]
    if done:
        factors = draws.window(start + 1 + _CHECK_EVERY * (done - 1), _CHECK_EVERY * chunk)
        factors += weight
        logs = np.multiply.reduce(factors.reshape(chunk, _CHECK_EVERY, width), axis=1)
    else:
        factors = draws.window(start, 1 + _CHECK_EVERY * (chunk - 1))
        factors += weight
        logs = np.empty((chunk, width))
        logs[0] = factors[0]
        np.multiply.reduce(factors[1:].reshape(chunk - 1, _CHECK_EVERY, width), axis=1, out=logs[1:])
    return np.log(logs, out=logs)


def _first_converged(scores: np.ndarray) -> tuple[int, np.ndarray, float] | None:
    """First checkpoint (row) whose normalised max probability exceeds the threshold: row, exp(score - max), their sum."""
    shares = scores - np.maximum.reduce(scores, axis=1, keepdims=True)
    np.exp(shares, out=shares)
    totals = np.add.reduce(shares, axis=1)
    hits = (totals < _CONV_LIMIT).nonzero()[0]
    if not hits.size:
        return None
    row = int(hits[0])
    return row, shares[row], float(totals[row])


def _trial(draws: _Draws, start: int, weight: float, guess: int) -> tuple[int, np.ndarray]:
    """One sampling trial from draw `start`: the index of its last draw and the normalised probabilities there.

    Checkpoints are scored in blocks (a cumulative sum of block logs), the first `guess` long, then doubling.
    """
    done, carry, chunk = 0, None, guess  # checkpoints scored so far, last score, next block size
    while True:
        chunk = min(chunk, _LAST_CHECKPOINT + 1 - done)
        logs = _block_logs(draws, start, done, chunk, weight)
        if carry is not None:
            logs[0] += carry
        scores = np.cumsum(logs, axis=0, out=logs)
        hit = _first_converged(scores)
        if hit is None and done + chunk > _LAST_CHECKPOINT:
            shares = np.exp(scores[-1] - scores[-1].max())
            hit = chunk - 1, shares, float(shares.sum())
        if hit is not None:
            row, shares, total = hit
            return start + _CHECK_EVERY * (done + row), shares / total
        carry, done, chunk = scores[-1], done + chunk, chunk * 2


def _decided(total: np.ndarray, trials_left: int) -> bool:
    """True when the remaining trials cannot change the leading language."""
    second, first = np.partition(total, -2)[-2:]
    return first - second > trials_left / _N_TRIAL + 1e-9


def _vote(rows: list[int]) -> str:
    """langdetect's detect(): average the trials, keep the leader if it is likely enough."""
    _, langs = _profiles()
    words = _seeded_words()
    draws = _Draws(rows)
    total = np.zeros(len(langs))
    position, spare, guess, start = 0, None, _FIRST_CHUNK, 0
    for trial in range(_N_TRIAL):
        if spare is None:
            gauss, spare = _gauss_pair(words[position : position + 4].tolist())
            start = draws.after(position + 4)
        else:
            gauss, spare = spare, None
        last, probs = _trial(draws, start, (_ALPHA + gauss * _ALPHA_WIDTH) / _BASE_FREQ, guess)
        total += probs
        # a trial adds at most 1 to a language: the leader is safe once it leads by more than the trials left
        if trial >= _N_TRIAL // 2 and _decided(total / _N_TRIAL, _N_TRIAL - trial - 1):
            break
        guess = max(_MIN_CHUNK, (last - start) // _CHECK_EVERY * 3 // 2 + 2)
        position, start = draws.end(last), last + 1
    total /= _N_TRIAL
    best = int(np.argmax(total))
    return langs[best] if total[best] > _PROB_THRESHOLD else "unknown"


def detect_language(text: str) -> str | None:
    """langdetect's answer for the text (seed 0), or None when the text has no usable features."""
    rows = ngram_rows(text)
    return _vote(rows) if rows else None
