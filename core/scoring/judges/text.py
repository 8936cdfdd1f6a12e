"""Lexical helpers for the offline heuristic judge: tokens, sentences, overlap, refusal and conflict cues."""

from __future__ import annotations

import re

STOPWORDS = frozenset(
    """a an the and or but if then else of to in on at by for with from as is are was were be been being it its this
    that these those there their they them he she his her we our you your i me my not no do does did done can could
    should would will shall may might must have has had having than so such into about over under also any all each
    which who whom whose what when where why how per via""".split()
)
TOKEN_RE = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*", re.IGNORECASE)
SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?。！？])\s+|\n+")
BULLET_RE = re.compile(r"^\s*(?:[-*•#>]+|\d+[.)])\s*")
NUMBER_RE = re.compile(r"\d+(?:[.,:/-]\d+)*")

REFUSAL_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\b(?:can ?not|can't|unable to|not able to)\s+(?:directly\s+)?(?:find|locate|answer|determine|provide|confirm|identify)",
        r"\b(?:does|do|did)\s*(?:n't|\s+not)\s+(?:contain|mention|include|provide|specify|address|cover|state)",
        r"\bno (?:relevant |specific |such |direct )?(?:information|data|details|mention|evidence)\b",
        r"\b(?:is|are) not (?:mentioned|specified|provided|available|stated|covered|included)\b",
        r"\b(?:insufficient|not enough) (?:information|data|evidence|context)\b",
        r"\binformation (?:is|was) (?:insufficient|not available|unavailable|missing)\b",
        r"\b(?:out of|outside|beyond) (?:the )?scope\b",
        r"\bi (?:do not|don't) know\b",
        r"\bdata unavailable\b",
        r"\bnot possible to (?:answer|determine)\b",
    )
)
CONFLICT_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\bconflict(?:s|ing)?\b",
        r"\bcontradict(?:s|ion|ions|ory)?\b",
        r"\binconsisten(?:t|cy|cies)\b",
        r"\bdiscrepan(?:cy|cies|t)\b",
        r"\bdisagree(?:s|ment)?\b",
        r"\b(?:differ|differs|differing)\b",
        r"\bmismatch(?:es)?\b",
        r"\bat odds\b",
    )
)


def tokens(text: str) -> set[str]:
    """Lower-cased content tokens of `text` (stopwords removed; numbers kept)."""
    return {t.lower().strip(".,") for t in TOKEN_RE.findall(text)} - STOPWORDS - {""}


def sentences(text: str) -> list[str]:
    """Split `text` into non-empty sentences, stripping list bullets and markdown markers."""
    parts = (BULLET_RE.sub("", s).strip(" *_`|") for s in SENTENCE_SPLIT_RE.split(text or ""))
    return [p for p in parts if p]


def overlap(claim: set[str], reference: set[str]) -> float:
    """Share of the claim's tokens that also appear in the reference (0 when the claim is empty)."""
    return len(claim & reference) / len(claim) if claim else 0.0


def refusal_matches(text: str) -> list[str]:
    """The refusal phrases found in `text`."""
    return [m.group(0) for p in REFUSAL_PATTERNS for m in [p.search(text or "")] if m]


def conflict_matches(text: str) -> list[str]:
    """The conflict words found in `text`."""
    return [m.group(0) for p in CONFLICT_PATTERNS for m in [p.search(text or "")] if m]


def numbers(text: str) -> set[str]:
    """Numeric tokens (figures, dates, versions) in `text`, normalised without thousands separators."""
    return {n.replace(",", "") for n in NUMBER_RE.findall(text or "")}


def snippet(text: str, limit: int = 300) -> str:
    """`text` shortened to `limit` characters for reasons and logs."""
    text = (text or "").strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."
