"""Lexical helpers for the offline heuristic judge: tokens, numbers, negation, refusal and conflict cues, script."""

from __future__ import annotations

import html
import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache

STOPWORDS = frozenset(
    """a an the and or but if then else of to in on at by for with from as is are was were be been being it its this
    that these those there their they them he she his her we our you your i me my not no do does did done can could
    should would will shall may might must have has had having than so such into about over under also any all each
    which who whom whose what when where why how per via only other some same both more most very just up out off
    after before between during within while until again further once here own nor because against through above
    below s t new one never without cannot don doesn didn isn aren wasn weren won couldn shouldn wouldn hasn haven
    hadn ll ve re""".split()
)
WORD_RE = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*", re.IGNORECASE)
TOKEN_RE = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*", re.IGNORECASE)
SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?。！？])\s+|\n+")
CLAUSE_SPLIT_RE = re.compile(r"[;,]\s+|\s+(?:but|whereas|while|although|though|however)\s+", re.IGNORECASE)
BULLET_RE = re.compile(r"^\s*(?:[-*•#>]+|\d+[.)])\s*")
NUMBER_RE = re.compile(r"\d+(?:[.,:/-]\d+)*")
SCRIPT_RE = re.compile(r"<(script|style)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
CELL_TAG_RE = re.compile(r"</?(?:td|th|span|b|strong|i|em|u|a|sup|sub|code)\b[^>]*>", re.IGNORECASE)
TAG_RE = re.compile(r"</?[a-z][a-z0-9]*\b[^>]*>", re.IGNORECASE)
APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "`": "'"})
CACHE_SIZE = 1 << 16
SUFFIXES = (("sses", "ss"), ("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""))

CITATION_RE = re.compile(
    r"\[\s*(?:(?:doc(?:ument)?|source|ref)s?\.?\s*)?\d+(?:\s*[,;-]\s*(?:(?:doc(?:ument)?|source)s?\.?\s*)?\d+)*\s*\]"
    r"|\b(?:doc(?:ument)?|source|passage|reference)s?\s*#?\s*\d+\b|\(\d\)",
    re.IGNORECASE,
)
QUANTITY_RE = re.compile(
    r"(?<![\d.,])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:[.,]\d+)?)(?![\d])"
    r"(?:[\s-]{0,2}(%|per\s?cent\b|[a-zµ°]+(?:/[a-z]+)?))?",
    re.IGNORECASE,
)
UNITS: dict[str, str] = {
    "%": "%", "percent": "%", "per cent": "%", "pct": "%", "percentage": "%",
    **dict.fromkeys(("ms", "millisecond", "milliseconds"), "ms"),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), "s"),
    **dict.fromkeys(("min", "mins", "minute", "minutes"), "min"),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), "h"),
    **dict.fromkeys(("day", "days"), "day"),
    **dict.fromkeys(("wk", "wks", "week", "weeks"), "week"),
    **dict.fromkeys(("mo", "month", "months"), "month"),
    **dict.fromkeys(("yr", "yrs", "year", "years"), "year"),
    **{u: u for u in ("mpa", "kpa", "pa", "bar", "psi", "kv", "mv", "mw", "kw", "gw", "kwh", "mwh", "gwh", "nm", "mm",
                      "cm", "km", "kg", "mg", "µg", "mcg", "ml", "mg/l", "mg/kg", "ppm", "hz", "khz", "db", "eur",
                      "usd", "gbp", "chf")},
    **dict.fromkeys(("m", "metre", "metres", "meter", "meters"), "m"),
    **dict.fromkeys(("g", "gram", "grams"), "g"),
    **dict.fromkeys(("l", "litre", "litres", "liter", "liters"), "l"),
    **dict.fromkeys(("v", "volt", "volts"), "v"),
    **dict.fromkeys(("°c", "c", "degc"), "degc"),
}
NUMBER_WORDS = dict(zip(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen "
    "eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred".split(),
    [*range(21), 30, 40, 50, 60, 70, 80, 90, 100], strict=True,
))
NUMBER_WORD_RE = re.compile(r"\b(" + "|".join(NUMBER_WORDS) + r")(?:[\s-]+([a-z]+))?\b", re.IGNORECASE)

NEGATION_RE = re.compile(r"\b(?:not|no|never|without|cannot|none|neither|nor)\b|n't\b", re.IGNORECASE)
NOT_NEGATION_RE = re.compile(
    r"\b(?:no|not)\s+(?:later|earlier|more|less|fewer|sooner|longer|greater|higher|lower|before|after)\s+than\b"
    r"|\bnot only\b|\bno\.\s*\d|\bwhether or not\b|\bno doubt\b",
    re.IGNORECASE,
)

DOCS = (r"(?:(?:the|these|those|this|your|my|provided|given|retrieved|available|supplied|supporting|attached|above|"
        r"reference|search|source)\s+)*(?:documents?|docs?|sources?|context|materials?|texts?|passages?|excerpts?|"
        r"knowledge base|records?|files?|manuals?|guides?|information(?: provided| given)?|search results|results)")
REFUSAL_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\b(?:can ?not|can't|could ?not|couldn't|unable to|not able to)\s+"
        r"(?:directly\s+|reliably\s+|fully\s+|definitively\s+)?"
        r"(?:find|locate|answer|determine|provide|confirm|identify|verify|see|tell)\b",
        r"\b(?:i|we) (?:did not|didn't|do not|don't) (?:find|see|locate)\b",
        rf"\b(?:{DOCS}|they|neither|none)(?:\s+\w+){{0,3}}?\s+(?:does|do|did)\s*(?:n't|\s+not)\s+"
        r"(?:seem to\s+|appear to\s+)?(?:contain|mention|include|provide|specify|address|cover|state|say|discuss|"
        r"describe|give|list|indicate|define|explain|refer to|talk about|answer|have)\b",
        rf"\b(?:neither|none) of {DOCS}",
        rf"\bnothing (?:in|within|from) {DOCS}",
        r"\b(?:no|neither) (?:document|source|passage|excerpt)s? (?:\w+ )?"
        r"(?:mentions?|contains?|states?|says?|covers?|addresses?|specif(?:y|ies)|provides?)\b",
        rf"\b{DOCS}\s+(?:\w+\s+){{0,2}}(?:lacks?|(?:is|are) silent|(?:is|are) (?:insufficient|incomplete))\b",
        r"\bno (?:relevant |specific |such |direct |explicit |further |clear )?(?:information|data|details|mention|"
        r"evidence|reference|answer|indication)\b",
        r"\b(?:is|are|was|were) not (?:mentioned|specified|provided|available|stated|covered|included|given|found|"
        rf"present|addressed|discussed|described|listed|defined)\b(?=\s*(?:[.;!]|$|(?:anywhere )?(?:in|by) {DOCS}))",
        r"\b(?:insufficient|not enough) (?:information|data|evidence|context|detail)",
        r"\binformation (?:is|was) (?:insufficient|not available|unavailable|missing)\b",
        r"\b(?:out of|outside|beyond) (?:the |my )?scope\b",
        r"\bi (?:do not|don't) (?:know|have (?:that|this|the|enough|any|sufficient) (?:information|data|details))\b",
        r"\bdata unavailable\b",
        r"\b(?:not possible|impossible) to (?:answer|determine|say|tell|confirm)\b",
        r"\bcannot be (?:answered|determined|found|confirmed|established)\b",
        r"\bunanswerable\b",
    )
)
META_RE = re.compile(
    rf"\b(?:{DOCS}|they)\s+(?:\w+\s+){{0,2}}?(?:only\s+)?(?:describes?|discuss(?:es)?|covers?|mentions?|refers? to|"
    r"deals? with|relates? to|(?:is|are) about|concerns?|talks? about|focus(?:es)? on)\b",
    re.IGNORECASE,
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
CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f]")
KANA_RE = re.compile(r"[\u3040-\u30ff\uff66-\uff9f]")
LETTER_RE = re.compile(r"[^\W\d_]")
CJK_SHARE = 0.5


@lru_cache(maxsize=CACHE_SIZE)
def plain(text: str) -> str:
    """`text` without HTML markup: scripts and styles dropped, inline tags to spaces, block tags to line breaks."""
    if not text or "<" not in text:
        return text or ""
    text = CELL_TAG_RE.sub(" ", SCRIPT_RE.sub(" ", text))
    return html.unescape(TAG_RE.sub("\n", text))


def clean(text: str) -> str:
    """`text` with typographic apostrophes made plain."""
    return (text or "").translate(APOSTROPHES)


def stem(word: str) -> str:
    """A light suffix-stripping stem (months -> month, inspected -> inspect) so inflections match."""
    if len(word) > 4 and not word[-1].isdigit():
        for suffix, repl in SUFFIXES:
            if word.endswith(suffix) and not word.endswith("ss"):
                return word[: -len(suffix)] + repl
    return word


def tokens(text: str) -> set[str]:
    """Lower-cased content tokens of `text` (stopwords removed; numbers kept)."""
    return {t.lower().strip(".,") for t in TOKEN_RE.findall(text or "")} - STOPWORDS - {""}


@lru_cache(maxsize=CACHE_SIZE)
def content_words(text: str) -> frozenset[str]:
    """Stemmed content words of `text`: letters first, stopwords, citation markers and bare numbers left out."""
    words = (w.lower() for w in WORD_RE.findall(CITATION_RE.sub(" ", clean(text))))
    return frozenset(stem(w) for w in words if w not in STOPWORDS and len(w) > 1)


@lru_cache(maxsize=CACHE_SIZE)
def key_terms(text: str) -> frozenset[str]:
    """Named terms: identifiers with digits (KX-40, SF6) and capitalised words not opening a sentence or cell."""
    found: set[str] = set()
    for sentence in re.split(r"[|:]", "\n".join(sentences(CITATION_RE.sub(" ", clean(text))))):
        for k, m in enumerate(WORD_RE.finditer(sentence)):
            w = m.group(0)
            has_digit = any(ch.isdigit() for ch in w)
            named = k > 0 and w[0].isupper() and w.lower() not in STOPWORDS
            if (has_digit or named or (len(w) > 1 and w.isupper())) and len(w) > 1:
                found.add(w.lower())
    return frozenset(found)


def sentences(text: str) -> list[str]:
    """Split `text` into non-empty sentences, stripping list bullets and markdown markers."""
    parts = (BULLET_RE.sub("", s).strip(" *_`|") for s in SENTENCE_SPLIT_RE.split(text or ""))
    return [p for p in parts if p]


def clauses(text: str) -> list[str]:
    """Split a sentence into clauses at ; , and contrast words (not at colons: "X: not required" is one clause)."""
    return [c for c in CLAUSE_SPLIT_RE.split(text or "") if c and c.strip()]


def overlap(claim: set[str], reference: set[str]) -> float:
    """Share of the claim's tokens that also appear in the reference (0 when the claim is empty)."""
    return len(claim & reference) / len(claim) if claim else 0.0


@lru_cache(maxsize=CACHE_SIZE)
def negated(text: str) -> bool:
    """True if `text` carries a negation (not, no, never, without, n't, cannot...); 'no later than' is a bound."""
    return bool(NEGATION_RE.search(NOT_NEGATION_RE.sub(" ", clean(text))))


def refusal_matches(text: str) -> list[str]:
    """The refusal phrases found in `text`."""
    return [m.group(0) for p in REFUSAL_PATTERNS for m in [p.search(clean(text))] if m]


def is_meta(text: str) -> bool:
    """True if `text` talks about what the documents cover ('They only describe Form Q5') rather than answering."""
    return bool(META_RE.search(clean(text)))


def conflict_matches(text: str) -> list[str]:
    """The conflict words found in `text`."""
    return [m.group(0) for p in CONFLICT_PATTERNS for m in [p.search(text or "")] if m]


def numbers(text: str) -> set[str]:
    """Numeric tokens (figures, dates, versions) in `text`, normalised without thousands separators."""
    return {n.replace(",", "") for n in NUMBER_RE.findall(text or "")}


def number_value(raw: str) -> str:
    """A figure in canonical form: no thousands separators, decimal comma read, trailing zeros cut (0.50 -> 0.5)."""
    text = raw.replace(",", "") if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", raw) else raw.replace(",", ".")
    try:
        value = Decimal(text).normalize()
    except InvalidOperation:
        return raw
    return f"{value:f}"


def unit_of(word: str | None) -> str | None:
    """The canonical unit a word after a figure names, or None when it names none."""
    if not word:
        return None
    return UNITS.get(re.sub(r"\s+", " ", word.lower()))


@lru_cache(maxsize=CACHE_SIZE)
def quantities(text: str) -> frozenset[tuple[str, str | None]]:
    """(value, unit) of every figure written in digits, citation markers like [doc 2] and (1) left out."""
    found = set()
    for m in QUANTITY_RE.finditer(CITATION_RE.sub(" ", clean(text))):
        found.add((number_value(m.group(1)), unit_of(m.group(2))))
    return frozenset(found)


@lru_cache(maxsize=CACHE_SIZE)
def spelled_quantities(text: str) -> frozenset[tuple[str, str | None]]:
    """(value, unit) of numbers written as words ('two weeks' -> ('2', 'week'))."""
    return frozenset((str(NUMBER_WORDS[m.group(1).lower()]), unit_of(m.group(2)))
                     for m in NUMBER_WORD_RE.finditer(text or ""))


def quantity_found(q: tuple[str, str | None], pool: set[tuple[str, str | None]]) -> bool:
    """True if the pool states the same value in a compatible unit (equal, or either side without a unit)."""
    value, unit = q
    return any(v == value and (unit is None or u is None or u == unit) for v, u in pool)


@lru_cache(maxsize=CACHE_SIZE)
def cjk_language(text: str) -> str | None:
    """'ja' or 'zh' when most letters of `text` are Chinese / Japanese script (kana marks Japanese), else None."""
    letters = LETTER_RE.findall(text or "")
    cjk = [ch for ch in letters if CJK_RE.match(ch)]
    if not letters or len(cjk) < CJK_SHARE * len(letters):
        return None
    return "ja" if any(KANA_RE.match(ch) for ch in cjk) else "zh"


def snippet(text: str, limit: int = 300) -> str:
    """`text` shortened to `limit` characters for reasons and logs."""
    text = (text or "").strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."
