"""Lexical helpers for the offline heuristic judge: tokens, numbers, negation, refusal and conflict cues, script.

Sentences, content words and refusal cues also read Chinese and Japanese (sentence ends 。！？, content-character
bigrams from core.language, zh / ja refusal phrases); numbers, negation, conflict cues and key terms are English."""

from __future__ import annotations

import html
import re
from collections.abc import Set as AbstractSet
from decimal import Decimal, InvalidOperation
from functools import lru_cache

import yaml

from core.config import REPO_ROOT
from core.language import CJK_SENTENCE_BREAK, cjk_terms
from core.language import cjk_language as cjk_language  # re-exported

STOPWORDS = frozenset(
    ["a", "an", "the", "and", "or", "but", "if", "then", "else", "of", "to", "in", "on", "at", "by", "for", "with", "from", "as", "is", "are", "was", "were", "be", "been", "being", "it", "its", "this", "that", "these", "those", "there", "their", "they", "them", "he", "she", "his", "her", "we", "our", "you", "your", "i", "me", "my", "not", "no", "do", "does", "did", "done", "can", "could", "should", "would", "will", "shall", "may", "might", "must", "have", "has", "had", "having", "than", "so", "such", "into", "about", "over", "under", "also", "any", "all", "each", "which", "who", "whom", "whose", "what", "when", "where", "why", "how", "per", "via", "only", "other", "some", "same", "both", "more", "most", "very", "just", "up", "out", "off", "after", "before", "between", "during", "within", "while", "until", "again", "further", "once", "here", "own", "nor", "because", "against", "through", "above", "below", "s", "t", "new", "one", "never", "without", "cannot", "don", "doesn", "didn", "isn", "aren", "wasn", "weren", "won", "couldn", "shouldn", "wouldn", "hasn", "haven", "hadn", "ll", "ve", "re"]
)
WORD_RE = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*", re.IGNORECASE)
TOKEN_RE = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*", re.IGNORECASE)
SENTENCE_SPLIT_RE = re.compile(rf"(?<=[.!?])\s+|(?:{CJK_SENTENCE_BREAK})\s*|\n+")
CLAUSE_SPLIT_RE = re.compile(r"[;,]\s+|\s+(?:but|whereas|while|although|though|however)\s+", re.IGNORECASE)
BULLET_RE = re.compile(r"^\s*(?:[-*•#>]+|\d+[.)])\s*")
NUMBER_RE = re.compile(r"\d+(?:[.,:/-]\d+)*")
SCRIPT_RE = re.compile(r"<(script|style)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
CELL_TAG_RE = re.compile(r"</?(?:td|th|span|b|strong|i|em|u|a|sup|sub|code)\b[^>]*>", re.IGNORECASE)
TAG_RE = re.compile(r"</?[a-z][a-z0-9]*\b[^>]*>", re.IGNORECASE)
APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "`": "'"})
CACHE_SIZE = 1 << 16
SUFFIXES = (("sses", "ss"), ("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""))
# Words an answer uses for what a document says in other words: each group is read as its first word (after stemming),
# irregular forms first. Generic enterprise vocabulary (policies, manuals, SLAs, leaflets), not tuned to one dataset.
SYNONYM_GROUPS = (
    ("keep", "kept", "held", "hold", "retain", "store"), ("buy", "bought", "purchase"), ("sell", "sold", "redeem"),
    ("pay", "paid", "reimburse", "refund", "repay"), ("give", "gave", "given"), ("take", "took", "taken"),
    ("warranty", "guarantee", "promise"), ("employee", "staff", "personnel", "worker"),
    ("submit", "file", "lodge", "apply"), ("inspect", "check", "examine"), ("rinse", "flush", "wash"),
    ("restore", "recover", "retrieve"), ("operating", "running"), ("first", "sooner", "earlier"),
    ("uptime", "availability"), ("report", "tell", "notify", "inform"), ("chronic", "long-standing", "longstanding"),
    ("require", "need", "demand"), ("reduce", "lower", "decrease", "cap", "limit"), ("receive", "get", "obtain", "owe"),
    ("fee", "charge", "cost"), ("deadline", "due"), ("occur", "happen"), ("split", "divide"), ("start", "begin"),
    ("day", "daily"), ("week", "weekly"), ("month", "monthly"), ("year", "yearly", "annual", "annually"),
    ("maximum", "max", "ceiling"), ("allow", "permit"), ("state", "say", "specify"),
)

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
    ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety", "hundred"],
    [*range(21), 30, 40, 50, 60, 70, 80, 90, 100], strict=True,
))
NUMBER_WORD_RE = re.compile(r"\b(" + "|".join(NUMBER_WORDS) + r")(?:[\s-]+([a-z]+))?\b", re.IGNORECASE)

NEGATION_RE = re.compile(r"\b(?:not|no|never|without|cannot|none|neither|nor)\b|n't\b", re.IGNORECASE)
NOT_NEGATION_RE = re.compile(
    r"\b(?:no|not)\s+(?:later|earlier|more|less|fewer|sooner|longer|greater|higher|lower|before|after)\s+than\b"
    r"|\bnot\s+(?:to\s+)?(?:exceed|go\s+(?:over|above|beyond))\w*"
    r"|\bnot only\b|\bno\.\s*\d|\bwhether or not\b|\bno doubt\b",
    re.IGNORECASE,
)

# Chinese: what the documents are, then refusal cues with the same "about the material, not about the world" care.
ZH_DOCS = (r"(?:所?提供的?|所?给(?:出|定)?的|现有的?|上述|以上|相关的?|参考)?"
           r"(?:文档|文件|资料|材料|上下文|文本|段落|来源|知识库|信息|内容|检索结果)")
ZH_VERBS = r"(?:回答|作答|确定|判断|得知|知道|找到|给出|确认|推断|得出|获知|查到|判定)"
ZH_MENTION = (r"(?:提及|提到|涉及|说明|包含|记载|给出|提供|显示|列出|指明|描述|介绍|讨论|写明|载明|覆盖|明确|具体说明|"
              r"明确说明|明确提及|明确指出|指出)")
ZH_REFUSAL_PATTERNS = (
    rf"(?:无法|不能|没法|难以|无从)(?:直接|准确|确切|明确|可靠地?|完全|具体)?{ZH_VERBS}",
    rf"(?:无法|不能|难以)(?:从|根据|依据|基于)[^。！？]{{0,24}}?{ZH_VERBS}",
    r"(?:无法|不能)提供(?:相关|具体|确切|准确|明确)?的?(?:信息|答案|数据|回答|资料)",
    rf"{ZH_DOCS}[^。！？，,]{{0,10}}?(?:并|均|都|也)?(?:没有|没|未|无|不)(?:有)?{ZH_MENTION}",
    r"(?:没有|没|无|缺乏|缺少)(?:任何)?(?:相关|足够|具体|明确|有关|直接|充分|进一步|更多|此类|这方面)?的?"
    r"(?:信息|资料|数据|内容|记录|答案|依据|证据)(?!表明|显示)",
    r"(?:没有|没|无|未)(?:包含|提供|给出|提及|提到)?(?:关于|有关|涉及)[^。！？]{0,30}?的(?:信息|内容|资料|数据|说明|记录|描述)",
    r"(?:信息|资料|数据|内容|依据|证据)(?:不足|不够|不充分|不完整|缺失)",
    r"(?:未|没有|没)(?:能)?(?:找到|查到)|找不到|查不到",
    rf"(?:超出|超过|不在)(?:了)?{ZH_DOCS}的?(?:范围|范畴)",
    r"我(?:并)?不(?:知道|清楚|确定)|不得而知|无从(?:得知|知晓)",
    rf"{ZH_DOCS}.{{0,40}}?(?:被截断|截断了|中断了|不完整)",
)
# Japanese: inability to answer or judge, "not stated", "no information", "unknown", "cannot tell from the material".
JA_DOCS = (r"(?:与えられた|提供された|提示された|参照|参考|上記の?|これらの|この)?(?:文書|資料|ドキュメント|情報|文脈|"
           r"コンテキスト|テキスト|本文|記事|参考資料|検索結果|情報源|ソース)")
JA_NOT = r"(?:お|い)?(?:りません|ません|らず|ない|なかった)"
JA_REFUSAL_PATTERNS = (
    r"(?:(?:回答|判断|特定|確認|断定|把握|確定|算出|推測|推定|判別|明言)(?:する|いたす)?|お答え(?:する)?|答える?)"
    r"(?:こと)?(?:は|が|も)?(?:でき|出来)(?:ません|ない|ず|かねます)",
    r"答えられ(?:ません|ない|ず)|(?:回答|お答え|判断)(?:いた)?しかね(?:ます|る)",
    r"(?:回答|判断|特定|確定)(?:不可能?|不能)",
    rf"(?:記載|言及|明記|掲載|記述|明示)(?:は|が|も)?(?:されて{JA_NOT}|(?:あり|見当たり|見つかり)ません|ない|なく|なし)",
    rf"(?:書かれ|触れられ|述べられ|記され|示され|載っ)て{JA_NOT}",
    rf"{JA_DOCS}(?:に|には|では|の中に|中に|内に|から|からは)[^。！？]{{0,30}}?(?:含まれ|提供され|挙げられ)て{JA_NOT}",
    rf"{JA_DOCS}.{{0,80}}?(?:途切れ|途中で(?:切れ|終わ))",
    rf"(?:情報|データ|記載|記述|根拠|情報源|手がかり)(?:は|が|も)?(?:一切|十分に?|特に)?"
    rf"(?:(?:あり|見当たり|見つかり)ません|ない|なく|存在し(?:ない|ません|ておらず)|存在せず|不足して|足り(?:ません|ない)|"
    rf"(?:含まれ|提供され)て{JA_NOT})(?!場合)",
    r"(?:分かり|わかり|判り)(?:ません|かねます)|(?:分から|わから|判ら)(?:ない|ず)(?!場合)",
    r"不明(?:です|である|だ|な(?:ため|ので)|のため|となります|でした)|(?:は|が)不明",
    r"明らかで(?:は)?(?:ありません|ない)|明らかになって(?:い)?(?:ません|ない)|判明して(?:い)?(?:ません|ない)|定かでは",
    rf"{JA_DOCS}(?:から|だけ|のみ)(?:は|では)[^。！？]{{0,80}}?"
    r"(?:でき(?:ない|ません|ず)|(?:分から|わから)(?:ない|ず)|(?:分かり|わかり)ません|しかね|不明)",
    r"(?:見当たり|見つかり|見つけられ)ません",
    rf"{JA_DOCS}の?範囲(?:外|を超え)",
)
CJK_REFUSAL_PATTERNS = (*ZH_REFUSAL_PATTERNS, *JA_REFUSAL_PATTERNS)
CJK_META_RE = re.compile(
    rf"{ZH_DOCS}(?:中|里)?(?:只|仅|仅仅|主要|只是)(?:介绍|讨论|涉及|描述|说明|提到|提及|讲述|包含|关于)"
    rf"|{JA_DOCS}(?:は|では|には)[^。！？]{{0,40}}?(?:について|に関して|に関する)(?:もの|こと|情報)?(?:のみ|だけ|しか)"
)

DECLINES_FILE = REPO_ROOT / "data" / "reading" / "declines.yaml"


def declines() -> tuple[str, ...]:
    """An assistant's declines in its own voice ("I do not have specific information on X"), every language's, from
    data/reading/declines.yaml."""
    data = yaml.safe_load(DECLINES_FILE.read_text(encoding="utf-8"))["declines"]
    return tuple(p for patterns in data.values() for p in patterns)


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
        r"\b(?:not possible|impossible) to (?:answer|determine|say|tell|confirm|list|identify|know)\b",
        rf"\b{DOCS}[\s,]+(?:\w+[\s,]+){{0,2}}?(?:is |are |was |were )?(?:truncated|cut off|cuts off|breaks off)\b",
        r"\bcannot be (?:answered|determined|found|confirmed|established)\b",
        r"\bunanswerable\b",
        *CJK_REFUSAL_PATTERNS,
        *declines(),
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


def synonym_table() -> dict[str, str]:
    """Stemmed word -> the stem of its synonym group's first word."""
    return {stem(w): stem(group[0]) for group in SYNONYM_GROUPS for w in group}


SYNONYMS = synonym_table()


@lru_cache(maxsize=CACHE_SIZE)
def content_words(text: str) -> frozenset[str]:
    """Stemmed content words of `text` (stopwords, citation markers and bare numbers left out), plus the Chinese /
    Japanese content-character bigrams of core.language.cjk_terms."""
    text = CITATION_RE.sub(" ", clean(text))
    words = (w.lower() for w in WORD_RE.findall(text))
    return frozenset(stem(w) for w in words if w not in STOPWORDS and len(w) > 1) | frozenset(cjk_terms(text))


@lru_cache(maxsize=CACHE_SIZE)
def meaning_words(text: str) -> frozenset[str]:
    """content_words read through the synonym groups (kept -> keep, guarantee -> warranty): what claim support
    compares, so a paraphrase matches the sentence it restates."""
    return frozenset(SYNONYMS.get(w, w) for w in content_words(text))


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


def overlap(claim: AbstractSet[str], reference: AbstractSet[str]) -> float:
    """Share of the claim's tokens that also appear in the reference (0 when the claim is empty)."""
    return len(claim & reference) / len(claim) if claim else 0.0


@lru_cache(maxsize=CACHE_SIZE)
def negated(text: str) -> bool:
    """True if `text` carries a negation (not, no, never, without, n't, cannot...); 'no later than' is a bound."""
    return bool(NEGATION_RE.search(NOT_NEGATION_RE.sub(" ", clean(text))))


def refusal_matches(text: str) -> list[str]:
    """The refusal phrases found in `text` (English, Chinese and Japanese cues)."""
    return [m.group(0) for p in REFUSAL_PATTERNS for m in [p.search(clean(text))] if m]


def is_meta(text: str) -> bool:
    """True if `text` talks about what the documents cover ('They only describe Form Q5', '文档只介绍了…')."""
    return bool(META_RE.search(clean(text)) or CJK_META_RE.search(text or ""))


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


def quantity_found(q: tuple[str, str | None], pool: AbstractSet[tuple[str, str | None]]) -> bool:
    """True if the pool states the same value in a compatible unit (equal, or either side without a unit)."""
    value, unit = q
    return any(v == value and (unit is None or u is None or u == unit) for v, u in pool)


def snippet(text: str, limit: int = 300) -> str:
    """`text` shortened to `limit` characters for reasons and logs."""
    text = (text or "").strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."
