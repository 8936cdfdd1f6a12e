"""Whether a response is a refusal overall: refusal phrases (core.scoring.judges.text) and no answering sentence."""

from __future__ import annotations

from core.scoring.judges.text import content_words, is_meta, quantities, refusal_matches, sentences

MIN_CLAIM_TOKENS = 3


def claim_size(sentence: str) -> int:
    """Content words plus figures of a sentence: how much it states."""
    return len(content_words(sentence)) + len(quantities(sentence))


def answer_claims(sents: list[str]) -> list[str]:
    """Sentences that answer: not refusals, not remarks on what the documents cover, at least 3 content items."""
    return [s for s in sents if not refusal_matches(s) and not is_meta(s) and claim_size(s) >= MIN_CLAIM_TOKENS]


def detect_refusal(response: str) -> tuple[bool, list[str]]:
    """A refusal overall: refusal phrases and no answering sentence, or refusal sentences are most of the response.

    A caveat inside an answer ("the manual does not specify X" after answering) is not an abstention.
    """
    sents = sentences(response)
    hits = [s for s in sents if refusal_matches(s)]
    if not hits:
        return False, []
    phrases = [p for s in hits for p in refusal_matches(s)]
    return not answer_claims(sents) or 2 * len(hits) > len(sents), phrases
