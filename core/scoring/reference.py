"""Reference metrics: a response against InstanceSpec.reference, language-aware, pure (no database, no model calls).

Normalisation (docs/metrics.md, "Reference metrics"):
- **By word** (English and other space-delimited languages): SQuAD v1.1 normalisation: lowercase, punctuation removed
  (ASCII punctuation deleted as in SQuAD; other Unicode punctuation, such as dashes, replaced by a space), the
  articles a / an / the removed, whitespace collapsed; tokens are the words.
- **By character** (Chinese `zh`, Japanese `ja`): NFKC (full-width letters and digits become ASCII), lowercase,
  punctuation removed (ASCII, full-width and CJK punctuation), whitespace ignored; tokens are the characters, so
  segmented and unsegmented text score the same.
- Both: NFKC, apostrophe and quote variants made ASCII, decimal points and percent signs of numbers kept (6.4% is not
  64); by character, containment has number boundaries ("3天" is not in "13天"). Gold texts with slashes between words
  are alternatives (`slash_alternatives`); yes/no golds are read by polarity (`read_polarity`).
- Languages written without spaces that have no segmenter here (th, lo, km, my, bo): the text metrics are
  `not_applicable` with reason "unsupported for language X", never a number.
- No language (None / 'und'): by character when the reference is mostly Chinese / Japanese script, else by word.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

import yaml

from core.config import REPO_ROOT
from core.generation.reasoning import UNFINISHED_REASON, split_reasoning
from core.language import cjk_language
from core.scoring.judges.base import MetricOutcome
from core.scoring.judges.refusal import detect_refusal
from core.store.schema import AnswerSpec, ReferenceSpec

METHOD = "reference"
ANSWER_FIELDS_FILE = REPO_ROOT / "data" / "reading" / "answer_fields.yaml"
NUMBERS_FILE = REPO_ROOT / "data" / "reading" / "numbers.yaml"
THOUSANDS_RE = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
CHARACTER_LANGUAGES = ("zh", "ja")
UNSEGMENTED_LANGUAGES = ("th", "lo", "km", "my", "bo")
REFUSAL_LANGUAGES = ("en", "zh", "ja")
TEXT_METRICS = ("exact_match", "strict_exact_match", "token_f1", "rouge_l", "all_gold_no_wrong")
ASCII_PUNCTUATION = frozenset(string.punctuation)
ARTICLES_RE = re.compile(r"\b(a|an|the)\b")
CUT = "\x00"
ARTICLE_FOLLOWS_RE = re.compile(r"[ \t]+[^\W_]")
CONNECTORS = {"word": frozenset({"and", "or", "both", "as", "well"}),
              "character": ("以及", "还有", "還有", "および", "及び", "和", "与", "與", "及", "と", "や")}
QUOTE_VARIANTS = str.maketrans({"’": "'", "‘": "'", "ʼ": "'", "＇": "'", "“": '"', "”": '"'})
SPACED_PERCENT_RE = re.compile(r"(?<=\d)[ \t]+%")
SLASH_LEFT_RE = re.compile(r"[^\W\d_]*\s*$")
SLASH_RIGHT_RE = re.compile(r"\s*[^\W\d_]*")
UNANSWERABLE_REASON = "unanswerable reference: scored by rejection"
MCQ_TEXT_REASON = "multiple-choice reference: scored by the option letter (mcq_accuracy)"
NOT_MCQ_REASON = "not a multiple-choice reference"
NOT_MULTI_REASON = "applies to 'multi' references only"
NO_WRONG_REASON = "the reference lists no wrong answers"
ANSWERED_REASON = "the reference has an answer: rejection applies to unanswerable references only"


@dataclass(frozen=True)
class Scheme:
    """How a language is tokenised: 'word' or 'character', or None when unsupported (with the language tag)."""

    kind: str | None
    language: str


def primary_tag(language: str | None) -> str:
    """The primary subtag of a BCP-47 tag, lower-cased ('zh-Hant' -> 'zh'); 'und' when missing."""
    return (language or "").split("-")[0].strip().lower() or "und"


def reference_text(ref: ReferenceSpec) -> str:
    """Every gold text of a reference (answers, aliases, parts, choices), for language inference."""
    texts = [t for a in ref.answers for t in (a.text, *a.aliases, *a.parts)]
    return " ".join([*texts, *ref.choices.values()])


def scheme_for(language: str | None, ref: ReferenceSpec | None = None) -> Scheme:
    """Tokenisation for a language: by character for zh/ja, unsupported for unsegmented scripts, else by word."""
    tag = primary_tag(language)
    if tag == "und" and ref is not None:
        tag = cjk_language(reference_text(ref)) or tag
    if tag in CHARACTER_LANGUAGES:
        return Scheme("character", tag)
    if tag in UNSEGMENTED_LANGUAGES:
        return Scheme(None, tag)
    return Scheme("word", tag)


def unsupported(language: str) -> MetricOutcome:
    """A metric that cannot be computed for `language`."""
    return not_applicable(f"unsupported for language {language}", language=language)


def not_applicable(reason: str, **details) -> MetricOutcome:
    """A not-applicable outcome with its reason."""
    return MetricOutcome(status="not_applicable", reason=reason, method=METHOD, details=details)


def unparseable(reason: str, **details) -> MetricOutcome:
    """An answer that cannot be read (no option letter): value 0 (stored for metrics that count it as wrong), passed
    False, status 'unparseable' so that it is counted (core.metrics decides whether the mean includes it)."""
    return MetricOutcome(status="unparseable", value=0.0, passed=False, reason=reason, method=METHOD, details=details)


def scored(value: float, reason: str, **details) -> MetricOutcome:
    """An ok outcome; `passed` is set for 0/1 values."""
    passed = bool(value) if value in (0.0, 1.0) else None
    return MetricOutcome(value=float(value), passed=passed, reason=reason, method=METHOD, details=details)


def is_punctuation(ch: str) -> bool:
    """ASCII punctuation (SQuAD's set) or any Unicode punctuation character (categories P*)."""
    return ch in ASCII_PUNCTUATION or unicodedata.category(ch).startswith("P")


def unify_marks(text: str) -> str:
    """NFKC (full-width to half-width), apostrophe and quote variants made ASCII (’ ‘ ʼ ＇ -> ', “ ” -> "), and a
    percent sign set apart from its number joined to it ("6.4 %" -> "6.4%")."""
    text = unicodedata.normalize("NFKC", text or "").translate(QUOTE_VARIANTS)
    return SPACED_PERCENT_RE.sub("%", text)


def number_mark(text: str, i: int) -> bool:
    """True for a decimal point between two digits or a percent sign after a digit: kept when numbers are compared."""
    ch, before = text[i], text[i - 1] if i else ""
    if ch == "%":
        return before.isdigit()
    return ch == "." and before.isdigit() and text[i + 1:i + 2].isdigit()


def squad_normalize(text: str) -> str:
    """SQuAD v1.1 answer normalisation (lowercase, punctuation, articles, whitespace) after `unify_marks`; ASCII
    punctuation is deleted as in SQuAD (decimal points and percent signs of numbers kept: 6.4% is not 64), other
    Unicode punctuation (dashes, CJK marks) becomes a space so it never joins two words."""
    text = SQUAD_CANDIDATES_RE.sub(_squad_mark, unify_marks(text).lower())
    return " ".join(ARTICLES_RE.sub(" ", text).split())


# the characters normalisation may change: ASCII punctuation and any non-ASCII character but the CJK Unified
# Ideographs (U+4E00-U+9FFF, letters); other ASCII characters are never punctuation nor a number mark, so they stay
# as they are without a call per character
SQUAD_CANDIDATES_RE = re.compile(r"[!-/:-@\[-`{-~]|[^\x00-\x7f\u4e00-\u9fff]")
# the same with ASCII whitespace and control characters, which character normalisation removes
CHARACTER_CANDIDATES_RE = re.compile(r"[\x00-\x20!-/:-@\[-`{-~\x7f]|[^\x00-\x7f\u4e00-\u9fff]")


def _squad_mark(match: re.Match[str]) -> str:
    """SQuAD normalisation of one candidate character: a number mark kept, ASCII punctuation deleted, other
    punctuation a space, anything else kept."""
    text, i = match.string, match.start()
    ch = text[i]
    if number_mark(text, i):
        return ch
    return "" if ch in ASCII_PUNCTUATION else " " if is_punctuation(ch) else ch


@lru_cache(maxsize=1)
def _number_rules() -> dict:
    data = yaml.safe_load(NUMBERS_FILE.read_text(encoding="utf-8"))
    chars = "".join([*data["digits"], *data["places"], *data["sections"]])
    counters = "|".join(sorted((re.escape(c) for c in data["counters"]), key=len, reverse=True))
    prefixes = "|".join(re.escape(p) for p in data["ordinal_prefixes"])
    seps = re.escape("".join(data["list_separators"]))
    return {**data, "run": re.compile(rf"({prefixes})?([{chars}]+)(?=({counters}))?"),
            "list": re.compile(rf"(?<=\d)[ \t]*[{seps}][ \t]*(?=\d)")}


def han_value(run: str) -> int:
    """The value of a run of Han numerals: place values ("二十三" 23, "一百" 100, "两千零五" 2005, "三万" 30000), or
    digit by digit when it has none ("二〇二三" 2023)."""
    rules = _number_rules()
    digits, places, sections = rules["digits"], rules["places"], rules["sections"]
    if all(ch in digits for ch in run):
        return int("".join(str(digits[ch]) for ch in run))
    total = section = number = 0
    for ch in run:
        if ch in digits:
            number = digits[ch]
        elif ch in places:
            section += (number or 1) * places[ch]
            number = 0
        else:
            total = (total + section + number) * sections[ch]
            section = number = 0
    return total + section + number


def han_numerals(text: str) -> str:
    """Han numerals written as Arabic digits where they are numbers: after an ordinal prefix ("第三" 第3), before a
    counter ("三月" 3月, "一百人" 100人), or a run of two or more with a place value or all digits ("二十三" 23,
    "二〇二三" 2023); rules and words in data/reading/numbers.yaml."""
    rules = _number_rules()

    def read(m: re.Match[str]) -> str:
        prefix, run, counter = m.group(1) or "", m.group(2), m.group(3)
        valued = len(run) >= 2 and run[0] not in rules["sections"]
        lone_unit = len(run) == 1 and run in rules["sections"] or run in ("百", "千", "佰", "仟")
        if (prefix or counter or valued) and not lone_unit:
            return prefix + str(han_value(run))
        return m.group(0)

    return rules["run"].sub(read, text)


def number_lists(text: str) -> str:
    """Numbers of a list kept apart: a thousands comma ("1,000") dropped, any list separator between two numbers
    ("8、9", "8，9", "8, 9") made one ',' that normalisation keeps, so "8、9" is "8,9", never "89"."""
    return _number_rules()["list"].sub(",", THOUSANDS_RE.sub("", text))


DIGIT_GAP_RE = re.compile(r"(?<=\d\d)\s+(?=\d\d)")  # "674 702": numbers a space apart are a list (single digits: segmented)
CJK_GAP_RE = re.compile(r"(?<=[^\x00-\x7f])\s+(?=[^\x00-\x7f])")  # spaces a word segmenter puts between CJK words


def character_normalize(text: str) -> str:
    """`unify_marks`, lowercase, Han numerals as digits (`han_numerals`), number lists kept apart (`number_lists`),
    punctuation (but decimal points and percent signs of numbers, and list commas between numbers) and whitespace
    removed: one string whose characters are the tokens."""
    text = DIGIT_GAP_RE.sub(",", number_lists(han_numerals(CJK_GAP_RE.sub("", unify_marks(text).lower()))))
    return CHARACTER_CANDIDATES_RE.sub(_character_mark, text)


def _character_mark(match: re.Match[str]) -> str:
    """Character normalisation of one candidate character: kept when a number mark, a list comma between digits or
    neither punctuation nor whitespace, else removed."""
    text, i = match.string, match.start()
    ch = text[i]
    kept = (number_mark(text, i) or ch == "," and _between_digits(text, i)
            or not is_punctuation(ch) and not ch.isspace())
    return ch if kept else ""


def _between_digits(text: str, i: int) -> bool:
    return 0 < i < len(text) - 1 and text[i - 1].isdigit() and text[i + 1].isdigit()


def normalize(text: str, kind: str) -> str:
    """`text` normalised for the scheme ('word': space-joined words, 'character': characters without spaces)."""
    return squad_normalize(text) if kind == "word" else character_normalize(text)


def tokens(text: str, kind: str) -> list[str]:
    """The tokens metrics count: words after SQuAD normalisation, or characters."""
    norm = normalize(text, kind)
    return norm.split() if kind == "word" else list(norm)


@lru_cache(maxsize=4096)
def needle_pattern(needle: str) -> re.Pattern[str]:
    """Character-level occurrence of a normalised needle with number boundaries: a needle that starts (ends) with a
    digit is not found right after (before) a digit, a decimal point or a percent sign ("3天" is not in "13天",
    "3" is not in "2023年" nor in "3.5")."""
    before = r"(?<![0-9.])" if needle[0].isdigit() else ""
    after = r"(?![0-9.%])" if needle[-1].isdigit() else ""
    return re.compile(before + re.escape(needle) + after)


def contains(haystack: str, needle: str, kind: str) -> bool:
    """True when normalised `needle` occurs in normalised `haystack`, on word boundaries for 'word', on number
    boundaries for 'character'; empty never does."""
    if not needle:
        return False
    return f" {needle} " in f" {haystack} " if kind == "word" else needle_pattern(needle).search(haystack) is not None


def remove_all(haystack: str, needles: Iterable[str], kind: str) -> list[str]:
    """The pieces of normalised `haystack` left after removing every occurrence of the needles (longest first)."""
    text = f" {haystack} " if kind == "word" else haystack
    for needle in sorted({n for n in needles if n}, key=len, reverse=True):
        text = text.replace(f" {needle} ", f" {CUT} ") if kind == "word" else needle_pattern(needle).sub(CUT, text)
    return [p.strip() for p in text.split(CUT) if p.strip()]


def outside(haystack: str, needles: Iterable[str], kind: str) -> str:
    """Normalised `haystack` without the needles, pieces kept apart so nothing matches across a removed needle."""
    return f" {CUT} ".join(remove_all(haystack, needles, kind))


def only_connectors(pieces: list[str], kind: str) -> bool:
    """True when the leftover pieces are list connectors only ('and', 'or'; 和, 与, 及; と, や)."""
    if kind == "word":
        return all(w in CONNECTORS["word"] for p in pieces for w in p.split())
    return all(re.fullmatch("(?:" + "|".join(CONNECTORS["character"]) + ")+", p) for p in pieces)


def _alternative_word(word: str) -> bool:
    """A word that can stand on either side of an alternatives slash: letters only, at least two CJK characters or
    three other letters (so "km/h", "m/s", "TCP/IP" and "1/2" stay one answer)."""
    if not word or not all(ch.isalpha() for ch in word):
        return False
    return len(word) >= (2 if cjk_language(word) else 3)


def _matched(match: re.Match[str] | None) -> str:
    """The stripped text of a match, '' for none."""
    return match.group().strip() if match else ""


def slash_alternatives(text: str) -> list[str]:
    """The alternatives of a gold text written with slashes ("Gravity/Gravity, or gravitation" -> both), when every
    slash has an alternative word right on each side (`_alternative_word`) or every piece is a phrase of two words or
    more; else the text alone ("km/h", "1/2 cup", "24/7" stay one answer)."""
    pieces = text.split("/")
    if len(pieces) < 2:
        return [text]
    if all(len(p.split()) >= 2 for p in pieces):  # phrases of two words or more each ("March 10, 2017/March 10, 2017")
        return [p.strip() for p in pieces]
    edges = pairwise(pieces)
    if not all(_alternative_word(_matched(SLASH_LEFT_RE.search(a))) and _alternative_word(_matched(SLASH_RIGHT_RE.match(b)))
               for a, b in edges):
        return [text]
    return [p.strip() for p in pieces if p.strip()]


def answer_forms(answer: AnswerSpec) -> list[str]:
    """An answer's accepted surface forms: its text and its aliases, each with its slash alternatives."""
    forms = [answer.text, *answer.aliases]
    return list(dict.fromkeys(f for form in forms for f in (form, *slash_alternatives(form))))


def answer_score(response_norm: str, answer: AnswerSpec, kind: str) -> float:
    """1 when the answer or an alias is contained, else the share of its parts contained (0 without parts)."""
    if any(contains(response_norm, normalize(f, kind), kind) for f in answer_forms(answer)):
        return 1.0
    parts = [normalize(p, kind) for p in answer.parts]
    parts = [p for p in parts if p]
    return sum(contains(response_norm, p, kind) for p in parts) / len(parts) if parts else 0.0


def token_f1_score(prediction: list[str], gold: list[str]) -> float:
    """SQuAD v1.1 token F1: harmonic mean of token precision and recall over the shared token multiset."""
    same = sum((Counter(prediction) & Counter(gold)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(prediction), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def lcs_length(a: list[str], b: list[str]) -> int:
    """Length of the longest common subsequence of two token lists."""
    if len(a) < len(b):
        a, b = b, a
    row = [0] * (len(b) + 1)
    for x in a:
        prev = 0
        for j, y in enumerate(b, start=1):
            prev, row[j] = row[j], prev + 1 if x == y else max(row[j], row[j - 1])
    return row[-1]


def rouge_l_score(prediction: list[str], gold: list[str]) -> float:
    """ROUGE-L F-measure (beta = 1): LCS / len(prediction) and LCS / len(gold), harmonically combined."""
    lcs = lcs_length(prediction, gold)
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(prediction), lcs / len(gold)
    return 2 * precision * recall / (precision + recall)


# --------------------------------------------------------------------------- option letters (MCQ)

NOT_WORD = r"(?!not\b|never\b|neither\b|nor\b|\S*n't\b|unlikely\b|incorrect\b|wrong\b|false\b)"
BETWEEN = rf"(?:\s+{NOT_WORD}[a-z']+){{0,4}}?"  # up to four lower-case words ("is probably", "to this question is")
OPENING = r"[\s*_\"'`]*(?:(?i:option|choice|letter)\s+)?[(\[【「]?\s*"
ZH_FILLER = r"(?:应该|應該|应当|應當|应|應|就|可能|大概|也许|也許|或许|或許|肯定|显然|顯然|必然|选|選|是|为|為|は|:|\s)*"
SPACE_RUN_RE = re.compile(r"\s{2,}")
# a lower-case letter only right after an answer cue and standing alone ("Answer: c)", "the answer is (c)", "Final
# answer: c"): never in running text, where a, i, e.g. c. are words and abbreviations
LOWER_CUE_RE = re.compile(r"(?i:\b(?:final\s+answer|answer|choice|option)s?(?:\s+is)?)\s*[:=]?\s*[(\[]?([a-z])"
                          r"(?:[)\]]|\.?\s*$)", re.MULTILINE)
LATEX_WRAP_RE = re.compile(r"\\(?:text|textbf|mathrm|mathbf|textit)\s*\{([^{}]*)\}")


def _letter(letters: str) -> str:
    return rf"({'[' + re.escape(letters) + ']'})(?![A-Za-z0-9]|\.[ \t]*[a-z]|-[A-Za-z])"


def _boxed_patterns(letters: str) -> list[re.Pattern[str]]:
    return [re.compile(r"\\boxed\s*\{\s*[(]?\s*" + _letter(letters))]


def _final_patterns(letters: str) -> list[re.Pattern[str]]:
    return [re.compile(r"(?i:\bfinal\s+(?:answer|choice|option|pick)s?\b)" + BETWEEN + r"\s*[:=-]?" + OPENING
                       + _letter(letters)),
            re.compile(r"(?:最终答案|最終答案|最终选择|最終選擇|最終的な答え|最終的な回答|最終回答|結論)" + ZH_FILLER + r"[(\[【「]?\s*"
                       + _letter(letters))]


def _cue_patterns(letters: str) -> list[re.Pattern[str]]:
    cls = _letter(letters)
    return [
        re.compile(r"(?i:\b(?:answer|response)s?\b)" + BETWEEN + r"\s*[:=-]?" + OPENING + cls),
        re.compile(r"(?i:\b(?:option|choice)s?\b)(?=\s+(?:is|would be|should be|will be|must be|:|-)|\s*[:=])"
                   + BETWEEN + r"\s*[:=-]?" + OPENING + cls),
        re.compile(r"(?:正确答案|正確答案|正确选项|正確選項|答案|答え|正解|解答|回答|应选|應選|故选|故選|所以选|所以選|我选|我選"
                   r"|选择|選擇|选|選|答)" + ZH_FILLER + r"(?:选项|選項|選択肢)?\s*[(\[【「]?\s*" + cls),
        re.compile(rf"(?<![A-Za-z0-9])({'[' + re.escape(letters) + ']'})[)\]】」]?\s*(?:(?i:is|was|seems|looks)(?:\s+(?i:the|to\s+be|most\s+likely|likely|probably))*"
                   r"\s+(?i:correct|right|best|answer)\b|(?:项|項|选项|選項)?\s*(?:是|為|为)?(?:正确|正確|对的|對的)"
                   r"|\s+(?i:seems|looks)\s+(?i:the\s+)?(?i:most\s+)?(?i:likely|plausible|right|correct|best)\b"
                   r"|が正解|が正しい|が答え|が適切|が妥当|が該当|が当てはま|を選|です|でしょう|にします|だと思|と思|かな|かも)"),
    ]


def _choice_patterns(letters: str) -> list[re.Pattern[str]]:
    return [re.compile(r"(?i:\b(?:go(?:ing)?\s+with|pick|choose|chose|select|opt\s+for|lean(?:ing)?\s+towards?"
                       r"|vote\s+for|settle\s+on|points?\s+to|pointing\s+to|leads?\s+to|indicates?|say|guess(?:\s+is)?|probably|likely|perhaps|maybe|therefore|thus|hence"
                       r"|so|must\s+be|it'?s|it\s+(?:is|might\s+be|may\s+be|could\s+be|should\s+be|would\s+be|must\s+be))\b)[,:]?"
                       + OPENING + _letter(letters)),
            re.compile(r"(?:所以|因此|故|则|則|よって|したがって|従って|たぶん|おそらく|恐らく|多分|大概|可能是|可能|也许是|也許是"
                       r"|或许是|或許是|应该是|應該是|倾向于|傾向於|我猜是|我猜|猜是)[,，、:]?\s*"
                       r"[(\[【「]?\s*" + _letter(letters))]


def _format_patterns(letters: str) -> list[re.Pattern[str]]:
    cls = f"[{re.escape(letters)}]"
    return [re.compile(rf"(?<![A-Za-z0-9])[(\[【「]\s*({cls})\s*[)\]】」]"),
            re.compile(r"(?i:\b(?:option|choice)\s+)" + _letter(letters)),
            re.compile(rf"(?m)^[ \t]*(?:[*_>#-]+[ \t]*)?({cls})[*_]*[ \t]*(?:[):、。]|\.(?![ \t]*[a-z]))")]


def _alone_patterns(letters: str) -> list[re.Pattern[str]]:
    """A letter standing alone as the response's last clause, after punctuation ("Hmm, C.", "Not sure... C")."""
    return [re.compile(rf"(?:[,:;!?、，。：…]|\.\.)\s*[(\[]?\s*({'[' + re.escape(letters) + ']'})[)\]]?\s*[.!。]?\s*$")]


def _matches(patterns: list[re.Pattern[str]], text: str) -> list[re.Match[str]]:
    return sorted((m for p in patterns for m in p.finditer(text)), key=lambda m: m.start(1))


def _several(text: str, m: re.Match[str], letters: str) -> bool:
    """True when the letter read is one of a list ("A and C", "A, C", "A和C", "AとC", "B or C")."""
    cls = f"[{re.escape(letters)}]"
    word = r"(?:&|/|\+|和|与|與|及|或|と|や|か|(?i:and|or|as\s+well\s+as))"
    joined = (rf"\s*[)\]】]?\s*(?:{word}\s*(?:(?i:option)\s+)?[(\[【]?\s*{cls}(?![A-Za-z0-9])"
              rf"|[,、，]\s*{cls}(?=\s*(?:$|[.。!！]|都|が|は|です|(?i:are|and)\b)))")
    joined_before = rf"(?<![A-Za-z0-9]){cls}\s*[)\]】]?\s*(?:{word}|[,、，])\s*[(\[【]?\s*$"
    return re.match(joined, text[m.end(1):]) is not None or re.search(joined_before, text[:m.start(1)]) is not None


def option_text(response: str) -> str:
    """A response prepared for letter reading: NFKC (full-width Ｃ is C), Markdown emphasis, code and math marks and
    LaTeX text wrappers removed (`**C**`, `$\\text{C}$`), so the rules see the plain letter."""
    text = collapse_space(unicodedata.normalize("NFKC", response or ""))
    text = LATEX_WRAP_RE.sub(r"\1", text)
    return re.sub(r"[*`$]", "", text)


def collapse_space(text: str) -> str:
    """Runs of white space made one space (one line break where they hold one), so that no reading pattern meets a long
    run of white space (several of them allow white space in more than one place: bounded work on any response)."""
    return SPACE_RUN_RE.sub(lambda m: "\n" if "\n" in m.group() else " ", text)


def _bare(text: str, allowed: str) -> re.Match[str] | None:
    m = re.match(rf"\s*[_\"'#>\-\s]*([{re.escape(allowed)}])(?=$|[\s):,;!?、。，_\]）】」]|\.(?!\s*[a-z])|项|項|で|に)", text)
    if m is None or (m.group(1) == "A" and ARTICLE_FOLLOWS_RE.match(text, m.end())):
        return None
    return m


def _article(text: str, m: re.Match[str]) -> bool:
    """True for the English article read as a letter after a concluding word ("So A patient with ...")."""
    concluding = re.match(r"(?i:therefore|thus|hence|so)\b", m.group(0)) is not None
    return concluding and m.group(1) == "A" and re.match(r"[ \t]+[a-z]", text[m.end(1):]) is not None


@lru_cache(maxsize=1)
def _structured_re() -> re.Pattern[str]:
    fields = yaml.safe_load(ANSWER_FIELDS_FILE.read_text(encoding="utf-8"))["fields"]
    names = "|".join(sorted((re.escape(str(f)) for f in fields), key=len, reverse=True))
    json_value = r'"(?:' + names + r')"\s*:\s*(\[[^\]]*\]|"[^"]*"|[^,}\s]+)'
    xml_value = r"<\s*(" + names + r")\s*>([^<]*)<\s*/\s*\2\s*>"
    return re.compile(rf"(?i:{json_value}|{xml_value})")


def structured_answer(response: str) -> str | None:
    """The value of the last answer field of a structured answer ({"answer": "B"}, <answer>B</answer>, {"答案": "是"};
    field names in data/reading/answer_fields.yaml), a JSON list joined with ', ' (several options stay several);
    None when the response has no such field."""
    found = list(_structured_re().finditer(response or ""))
    if not found:
        return None
    m = found[-1]
    value = m.group(1) if m.group(1) is not None else m.group(3)
    return ", ".join(v.strip().strip('"') for v in value.strip("[]").split(",")) if value.startswith("[") \
        else value.strip().strip('"')


def read_option(response: str, letters: Iterable[str]) -> tuple[str | None, str]:
    """The option letter a response chooses and the rule that read it ('unread' when none, 'several' for a list); a
    structured answer is read on its answer field's value (`structured_answer`)."""
    allowed = "".join(sorted({str(x).strip().upper() for x in letters if len(str(x).strip()) == 1}))
    if not allowed:
        return None, "unread"
    value = structured_answer(response)
    if value is not None:
        letter, rule = _read_option_text(f"Answer: {value}", allowed)
        return letter, f"structured {rule}"
    return _read_option_text(response, allowed)


def _last_line_first(found: list[re.Match[str]], text: str) -> re.Match[str]:
    """The earliest match on the last line holding one: a final answer line wins over options walked through above
    it ("Answer B would need ... \nAnswer: A" reads A; "Answer: C. Option B is wrong" reads C)."""
    last_line = text.count("\n", 0, found[-1].start(1))
    return next(m for m in found if text.count("\n", 0, m.start(1)) == last_line)


def _read_option_text(response: str, allowed: str) -> tuple[str | None, str]:
    text = option_text(response)
    ordered = [("boxed", _boxed_patterns, -1), ("final", _final_patterns, -1), ("cue", _cue_patterns, 0),
               ("choice", _choice_patterns, -1), ("format", _format_patterns, 0)]
    for rule, patterns, pick in ordered:
        found = [m for m in _matches(patterns(allowed), text) if rule != "choice" or not _article(text, m)]
        if found:
            m = _last_line_first(found, text) if rule == "cue" else found[pick]
            return (None, "several") if _several(text, m, allowed) else (m.group(1), rule)
    lower = list(LOWER_CUE_RE.finditer(text))
    if lower and lower[-1].group(1).upper() in allowed:
        return lower[-1].group(1).upper(), "lower-case"
    last_resort: list[tuple[str, re.Match[str] | None]] = [
        ("bare", _bare(text, allowed)), ("alone", next(iter(_matches(_alone_patterns(allowed), text)), None))]
    for rule, maybe in last_resort:
        if maybe is not None:
            return (None, "several") if _several(text, maybe, allowed) else (maybe.group(1), rule)
    return None, "unread"


def extract_option(response: str, letters: Iterable[str]) -> str | None:
    """The option letter a response chooses (NFKC first, so full-width Ｃ is C; Markdown and LaTeX marks ignored), by the
    first rule that finds one:

    1. boxed: the last `\\boxed{C}`;
    2. final: the last letter after a final-answer cue ("Final answer: D", "最终答案：D", "最終的な答えは D");
    3. cue: the earliest letter after an answer cue ("Answer: C", "the answer is probably (C)", "the correct option is
       C", "答案是C", "正确选项：D", "选C", "正解はC") or before a confirmation ("C is correct", "C项", "Cが正解"); a
       negated cue ("the answer is not A") reads nothing;
    4. choice: the last letter after a choosing or concluding word ("I would go with C", "I'd pick C", "probably C",
       "so C", "所以C", "たぶんC");
    5. format: the earliest bracketed letter ("(C)", "[C]", "【C】"; not inside a word as in "V(D)J") or a letter opening a
       line followed by ) : 、 。 or . ("C. Paris", "C)"), but not "C." before a lower-case word ("C. difficile");
    6. bare: the response opens with the letter standing alone (not "D-glutamate", "E. coli", nor the article "A patient");
    7. alone: the response ends with the letter standing alone after punctuation ("Hmm, hard to say... C.").
    A letter that is one of a list ("A and C", "A、C", "AとC") reads nothing: several letters are not one choice.
    Only the instance's option letters count; cue words are case-insensitive, letters must be upper-case.
    None when no rule finds a letter (the metric records 'unparseable').
    """
    return read_option(response, letters)[0]


# --------------------------------------------------------------------------- yes / no (polarity)

POLARITY_GOLD = {"yes": "yes", "true": "yes", "correct": "yes", "是": "yes", "是的": "yes", "对": "yes", "對": "yes",
                 "はい": "yes", "no": "no", "false": "no", "incorrect": "no", "否": "no", "不是": "no", "不": "no",
                 "不对": "no", "不對": "no", "いいえ": "no"}
NO_WORDS = (r"(?i:no(?!\s+doubt)|nope|not\s+really|false|incorrect|(?:probably|likely|most\s+likely|almost\s+certainly|definitely"
            r"|certainly)\s+not|unlikely|i\s+don'?t\s+think\s+so|i\s+doubt\s+it|negative)\b"
            r"|不是|不对|不對|不会|不會|不能|没有|沒有|不|否|错误|錯誤|可能不|恐怕不|应该不|應該不"
            r"|いいえ|いや|違います|ちがいます|ではありません|じゃない|ありません|おそらく違|たぶん違")
YES_WORDS = (r"(?i:yes|yeah|yep|yup|true|correct|indeed|(?:probably|likely|most\s+likely|almost\s+certainly|definitely"
             r"|certainly)(?:\s+(?:yes|so|true))?|i\s+(?:think|believe)\s+so|affirmative|absolutely|of\s+course)\b"
             r"|应该是|應該是|可能是|大概是|也许是|也許是|是的|是|对|對|正确|正確|没错|沒錯|确实|確實|会|會|能|可以|有"
             r"|はい|ええ|そうです|その通り|正しい|あります")
POLARITY_LEAD_RE = re.compile(rf"[\s*_\"'#>`:-]*(?:(?i:answer|verdict)\s*[:：]?\s*|(?:答案|回答|答え|結論)\s*(?:是|は|:)?\s*)?"
                              rf"(?:({NO_WORDS})|({YES_WORDS}))")
POLARITY_CUE_RE = re.compile(r"(?:(?i:\b(?:final\s+)?answer(?:\s+is)?|\bso|\btherefore|\bthus)\s*[:：,]?\s*"
                             r"|(?:答案|回答|答え|結論|结论|所以|因此|よって)\s*(?:是|は|:|,|，)?\s*)[*_\"']*"
                             r"(?:((?i:no(?!\s+doubt)|false)\b|否|不是|いいえ)|((?i:yes|true)\b|是|はい))")
POLARITY_BOTH_RE = re.compile(r"(?i:\b(?:yes\s+(?:and|or)\s+no|no\s+(?:and|or)\s+yes)\b)|是也不是|是或否|是与否|はいともいいえとも")
POLARITY_WORD_RE = re.compile(r"(?i:\b(?:(no)|(yes))\b)|(いいえ|不是)|(はい)")


def read_polarity(response: str) -> str | None:
    """'yes' or 'no' read from a response by its polarity, not by containment: the last answer cue ("Answer: no",
    "so, yes", "答案是否", "結論はいいえ"), else the opening word or hedge ("Yes, there is no doubt" is yes; "No, it is
    not", "probably not", "不是", "いいえ" are no), else the one polarity word the response holds; None when it holds
    both or neither (unparseable)."""
    value = structured_answer(response)
    text = collapse_space(unify_marks(f"Answer: {value}" if value is not None else response)).strip()
    if POLARITY_BOTH_RE.search(text):
        return None
    cued = list(POLARITY_CUE_RE.finditer(text))
    if cued:
        return "no" if cued[-1].group(1) else "yes"
    lead = POLARITY_LEAD_RE.match(text)
    if lead:
        return "no" if lead.group(1) else "yes"
    found = {"no" if m.group(1) or m.group(3) else "yes" for m in POLARITY_WORD_RE.finditer(text)}
    return found.pop() if len(found) == 1 else None


def gold_polarity(ref: ReferenceSpec) -> str | None:
    """'yes' or 'no' when every accepted form of every answer is a polarity word (a yes/no question), else None."""
    forms = {POLARITY_GOLD.get(f.strip().strip(".!。").lower()) for a in ref.answers for f in answer_forms(a)}
    return forms.pop() if len(forms) == 1 and None not in forms else None


# --------------------------------------------------------------------------- metrics

@dataclass(frozen=True)
class Prepared:
    """A response ready for reference metrics: the reference, the scheme and the normalised response."""

    ref: ReferenceSpec
    response: str
    scheme: Scheme

    @property
    def kind(self) -> str:
        """'word' or 'character' (only called when the scheme is supported)."""
        return self.scheme.kind or "word"

    @property
    def norm(self) -> str:
        """The normalised response."""
        return normalize(self.response, self.kind)

    def gold_forms(self) -> list[str]:
        """Every normalised accepted form of every answer (empty forms dropped)."""
        return [n for a in self.ref.answers for f in answer_forms(a) if (n := normalize(f, self.kind))]

    def joined_gold(self) -> list[str]:
        """Gold tokens of a 'multi' reference: every answer's text, in stored order."""
        return [t for a in self.ref.answers for t in tokens(a.text, self.kind)]

    def key_text(self) -> str:
        """The text of the correct MCQ option."""
        return self.ref.choices.get(self.ref.answer_key or "", "")


MetricFn = Callable[[Prepared], MetricOutcome]


def _mcq_exact(p: Prepared) -> MetricOutcome:
    key = (p.ref.answer_key or "").upper()
    letter, rule = read_option(p.response, p.ref.choices)
    if letter:
        return scored(float(letter == key), f"option {letter} chosen, key {key}", option=letter, key=key)
    if rule == "several":
        return unparseable("several option letters: no single choice", option=None, key=key)
    forms = [normalize(p.key_text(), p.kind), *p.gold_forms()]
    hit = any(contains(p.norm, f, p.kind) for f in forms)
    rest = outside(p.norm, forms, p.kind)
    wrong = [k for k, t in p.ref.choices.items() if k.upper() != key and contains(rest, normalize(t, p.kind), p.kind)]
    if hit != bool(wrong):  # one reading by option text: the key's alone, or other options' alone
        return scored(float(hit), "no option letter; the key's option text is contained" if hit else
                      "no option letter; other options' text contained", option=None, key=key)
    return unparseable("no option letter, and the option texts name " + ("several options" if hit else "none"),
                       option=None, key=key)


def _polarity_exact(p: Prepared, gold: str) -> MetricOutcome:
    said = read_polarity(p.response)
    if said is None:  # a yes/no gold, whether imported as 'boolean' or as a 'short' answer
        return unparseable("no yes/no read (both or neither)", polarity=None, gold=gold)
    return scored(float(said == gold), f"reads {said}, gold {gold}", polarity=said, gold=gold)


def exact_match(p: Prepared) -> MetricOutcome:
    """Containment: the best answer's score (1 if it or an alias is contained, else its share of parts contained);
    for 'multi' the mean over all gold answers; for 'mcq' the chosen option letter (or the option text) equals the key;
    for a yes/no gold the polarity read by `read_polarity` equals it (none read: unparseable, whether the reference is
    'boolean' or a yes/no gold imported as 'short'); 'mcq' with no single letter nor a single option's text:
    unparseable."""
    if p.ref.answer_type == "mcq":
        return _mcq_exact(p)
    if p.ref.answer_type in ("short", "boolean") and (gold := gold_polarity(p.ref)):  # a yes/no question
        return _polarity_exact(p, gold)
    per_answer = [answer_score(p.norm, a, p.kind) for a in p.ref.answers]
    if p.ref.answer_type == "multi":
        value = sum(per_answer) / len(per_answer)
        return scored(value, f"{sum(s == 1 for s in per_answer)}/{len(per_answer)} gold answers contained",
                      per_answer=per_answer)
    best = max(per_answer)
    return scored(best, "an accepted answer is contained" if best == 1 else
                  f"best answer {best:.2f} contained (share of parts)" if best else "no accepted answer contained",
                  per_answer=per_answer)


def _strip_marks(text: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKC", text or "")
                   if not is_punctuation(ch) and not ch.isspace() and ch not in "*_`").upper()


def strict_exact_match(p: Prepared) -> MetricOutcome:
    """SQuAD exact match: the normalised response equals an accepted answer or alias; 'multi': the response is the gold
    answers and list connectors only; 'mcq': the response is the key letter or the key's option text."""
    if p.ref.answer_type == "mcq":
        key = (p.ref.answer_key or "").upper()
        forms = {normalize(p.key_text(), p.kind), *p.gold_forms()} - {""}
        ok = _strip_marks(p.response) == key or p.norm in forms
        return scored(float(ok), "response is the key" if ok else "response is not exactly the key", key=key)
    if p.ref.answer_type == "multi":
        present = [any(contains(p.norm, normalize(f, p.kind), p.kind) for f in answer_forms(a)) for a in p.ref.answers]
        rest = remove_all(p.norm, p.gold_forms(), p.kind)
        ok = all(present) and only_connectors(rest, p.kind)
        return scored(float(ok), "the gold answers and nothing else" if ok else
                      f"{sum(present)}/{len(present)} gold answers, extra text: {' | '.join(rest)[:120]}", extra=rest)
    ok = p.norm in set(p.gold_forms())
    return scored(float(ok), "equals an accepted answer" if ok else "differs from every accepted answer")


def best_overlap(p: Prepared, score: Callable[[list[str], list[str]], float]) -> float:
    """The best `score` of the response tokens against each answer and alias ('multi': all gold answers joined)."""
    pred = tokens(p.response, p.kind)
    golds = [p.joined_gold()] if p.ref.answer_type == "multi" else [
        tokens(f, p.kind) for a in p.ref.answers for f in answer_forms(a)]
    return max((score(pred, g) for g in golds if g), default=0.0)


def token_f1(p: Prepared) -> MetricOutcome:
    """SQuAD token F1, the maximum over answers and aliases ('multi': against all gold answers joined)."""
    if p.ref.answer_type == "mcq":
        return not_applicable(MCQ_TEXT_REASON)
    value = best_overlap(p, token_f1_score)
    return scored(value, f"token F1 {value:.3f} ({p.scheme.kind} tokens)")


def rouge_l(p: Prepared) -> MetricOutcome:
    """ROUGE-L F-measure on the same tokens, the maximum over answers and aliases ('multi': all gold answers joined)."""
    if p.ref.answer_type == "mcq":
        return not_applicable(MCQ_TEXT_REASON)
    value = best_overlap(p, rouge_l_score)
    return scored(value, f"ROUGE-L {value:.3f} ({p.scheme.kind} tokens)")


def mcq_accuracy(p: Prepared) -> MetricOutcome:
    """1 when the option letter extracted by `extract_option` equals the answer key, else 0; no letter: unparseable
    (value 0: counted as wrong by mcq_accuracy's declaration, and counted as unparseable)."""
    if p.ref.answer_type != "mcq":
        return not_applicable(NOT_MCQ_REASON)
    key = (p.ref.answer_key or "").upper()
    letter = extract_option(p.response, p.ref.choices)
    if letter is None:
        return unparseable("no option letter found", option=None, key=key)
    return scored(float(letter == key), f"option {letter} chosen, key {key}", option=letter, key=key)


def all_gold_no_wrong(p: Prepared) -> MetricOutcome:
    """'multi': 1 when every gold answer is contained and no wrong answer is (outside the gold answers' own text)."""
    if p.ref.answer_type != "multi":
        return not_applicable(NOT_MULTI_REASON)
    missing = [a.text for a in p.ref.answers if answer_score(p.norm, a, p.kind) < 1]
    rest = outside(p.norm, p.gold_forms(), p.kind)
    wrong = [w for w in p.ref.wrong_answers if contains(rest, normalize(w, p.kind), p.kind)]
    ok = not missing and not wrong
    why = "every gold answer, no wrong answer" if ok else "; ".join(
        x for x in (f"missing {missing}" if missing else "", f"wrong {wrong}" if wrong else "") if x)
    return scored(float(ok), why, missing=missing, wrong=wrong)


def wrong_answer(p: Prepared) -> MetricOutcome:
    """1 when the response gives a known wrong answer (`wrong_answers`): one is contained, by exact_match's
    language-aware containment, outside the gold answers' own text. 'mcq': the chosen option letter is an option whose
    text is a wrong answer (no letter: such an option's text is contained and the key's is not)."""
    if not p.ref.wrong_answers:
        return not_applicable(NO_WRONG_REASON)
    wrong = {n for w in p.ref.wrong_answers if (n := normalize(w, p.kind))}
    if p.ref.answer_type == "mcq":
        letters = sorted(k for k, t in p.ref.choices.items() if normalize(t, p.kind) in wrong)
        letter = extract_option(p.response, p.ref.choices)
        if letter:
            return scored(float(letter in letters), f"option {letter} chosen; wrong options {letters}",
                          option=letter, wrong=letters)
        key_forms = [f for f in (normalize(p.key_text(), p.kind), *p.gold_forms()) if f]
        rest = outside(p.norm, key_forms, p.kind)
        found = [k for k in letters if contains(rest, normalize(p.ref.choices[k], p.kind), p.kind)]
        ok = bool(found) and not any(contains(p.norm, f, p.kind) for f in key_forms)
        return scored(float(ok), f"no option letter; wrong options' text contained: {found}" if ok else
                      "no option letter; no wrong option's text alone", option=None, wrong=found)
    rest = outside(p.norm, p.gold_forms(), p.kind)
    found = [w for w in p.ref.wrong_answers if contains(rest, normalize(w, p.kind), p.kind)]
    return scored(float(bool(found)), f"wrong answer contained: {found}" if found else "no wrong answer contained",
                  wrong=found)


def response_language(response: str, instance_language: str | None) -> str:
    """The language a response is read in for refusals: zh/ja by script, else the instance's (English when zh/ja/none)."""
    tag = cjk_language(response or "")
    if tag:
        return tag
    own = primary_tag(instance_language)
    return "en" if own in ("und", *CHARACTER_LANGUAGES) else own


def rejection(ref: ReferenceSpec, response: str, language: str | None) -> MetricOutcome:
    """Unanswerable references: 1 when the response is a refusal overall (core.scoring.judges.refusal), else 0."""
    if ref.answer_type != "unanswerable":
        return not_applicable(ANSWERED_REASON)
    lang = response_language(response, language)
    if lang not in REFUSAL_LANGUAGES:
        return unsupported(lang)
    refused, phrases = detect_refusal(response)
    why = f"refusal phrases: {phrases}" if refused else (
        f"answers, with caveats {phrases}: not a refusal" if phrases else "answers instead of refusing")
    return scored(float(refused), why, phrases=phrases, language=lang)


TEXT_METRIC_FNS: dict[str, MetricFn] = {
    "exact_match": exact_match,
    "strict_exact_match": strict_exact_match,
    "token_f1": token_f1,
    "rouge_l": rouge_l,
    "mcq_accuracy": mcq_accuracy,
    "all_gold_no_wrong": all_gold_no_wrong,
    "wrong_answer": wrong_answer,
}
REFERENCE_METRICS: tuple[str, ...] = (*TEXT_METRIC_FNS, "rejection")


def reference_metric(name: str, ref: ReferenceSpec, response: str, language: str | None) -> MetricOutcome:
    """One reference metric of `response` (a name of REFERENCE_METRICS); not_applicable with a reason where it does not apply."""
    split = split_reasoning(response)
    if split.unfinished:
        return unparseable(UNFINISHED_REASON, reasoning="unfinished")
    response = split.answer
    if name == "rejection":
        return rejection(ref, response, language)
    if ref.answer_type == "unanswerable":
        return not_applicable(UNANSWERABLE_REASON)
    scheme = scheme_for(language, ref)
    if name != "mcq_accuracy" and scheme.kind is None:
        return unsupported(scheme.language)
    return TEXT_METRIC_FNS[name](Prepared(ref, response or "", scheme))


def reference_metrics(ref: ReferenceSpec, response: str, language: str | None) -> dict[str, MetricOutcome]:
    """Every reference metric of `response`, by name."""
    return {name: reference_metric(name, ref, response, language) for name in REFERENCE_METRICS}
