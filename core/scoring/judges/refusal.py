"""Whether a response is a refusal overall: refusal phrases (core.scoring.judges.text) and no answering sentence; a
hedged refusal that gives a guess (cues in data/reading/hedges.yaml) is an answer, scored as that guess."""

from __future__ import annotations

import re
from functools import lru_cache

import yaml

from core.config import REPO_ROOT
from core.scoring.judges.text import content_words, is_meta, quantities, refusal_matches, sentences

HEDGES_FILE = REPO_ROOT / "data" / "reading" / "hedges.yaml"
GUESS_HOLDS_RE = re.compile(r"[^\W_]")


@lru_cache(maxsize=1)
def guess_cues() -> tuple[re.Pattern[str], ...]:
    """The guess cues of data/reading/hedges.yaml, every language's, compiled."""
    data = yaml.safe_load(HEDGES_FILE.read_text(encoding="utf-8"))["guess_cues"]
    return tuple(re.compile(p, re.IGNORECASE) for patterns in data.values() for p in patterns)


def guess(response: str) -> str | None:
    """The guess a hedged answer gives after a guess cue ("... but my best guess is Paris" -> "Paris"), the text up to
    the end of its sentence; None when there is no cue or nothing that holds a word or figure follows it."""
    for pattern in guess_cues():
        for m in pattern.finditer(response or ""):
            rest = re.split(r"[.!?。！？\n]", response[m.end():], maxsplit=1)[0].strip()
            if GUESS_HOLDS_RE.search(rest):
                return rest
    return None

MIN_CLAIM_TOKENS = 3


def claim_size(sentence: str) -> int:
    """Content words plus figures of a sentence: how much it states."""
    return len(content_words(sentence)) + len(quantities(sentence))


def answer_claims(sents: list[str]) -> list[str]:
    """Sentences that answer: not refusals, not remarks on what the documents cover, at least 3 content items."""
    return [s for s in sents if not refusal_matches(s) and not is_meta(s) and claim_size(s) >= MIN_CLAIM_TOKENS]


def detect_refusal(response: str) -> tuple[bool, list[str]]:
    """A refusal overall: refusal phrases and no answering sentence, or refusal sentences are most of the response.

    A caveat inside an answer ("the manual does not specify X" after answering) is not an abstention, and a hedged
    refusal that gives a guess ("I cannot answer ..., but my best guess is X") answers: it is scored as that guess.
    """
    sents = sentences(response)
    hits = [s for s in sents if refusal_matches(s)]
    if not hits:
        return False, []
    phrases = [p for s in hits for p in refusal_matches(s)]
    if guess(response) is not None:
        return False, phrases
    return not answer_claims(sents) or 2 * len(hits) > len(sents), phrases
