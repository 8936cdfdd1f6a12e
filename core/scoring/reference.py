"""Reference metrics: a response against InstanceSpec.reference, language-aware, pure (no database, no model calls).

Normalisation (docs/metrics.md, "Reference metrics"):
- **By word** (English and other space-delimited languages): SQuAD v1.1 normalisation: lowercase, punctuation removed
  (ASCII punctuation deleted as in SQuAD; other Unicode punctuation, such as curly quotes and dashes, replaced by a
  space), the articles a / an / the removed, whitespace collapsed; tokens are the words.
- **By character** (Chinese `zh`, Japanese `ja`): NFKC (full-width letters and digits become ASCII), lowercase,
  punctuation removed (ASCII, full-width and CJK punctuation), whitespace ignored; tokens are the characters, so
  segmented and unsegmented text score the same.
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

from core.language import cjk_language
from core.scoring.judges.base import MetricOutcome
from core.scoring.judges.refusal import detect_refusal
from core.store.schema import AnswerSpec, ReferenceSpec

METHOD = "reference"
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


def squad_normalize(text: str) -> str:
    """SQuAD v1.1 answer normalisation (lowercase, punctuation, articles, whitespace); ASCII punctuation is deleted as in
    SQuAD, other Unicode punctuation (curly quotes, dashes, CJK marks) becomes a space so it never joins two words."""
    text = "".join("" if ch in ASCII_PUNCTUATION else " " if is_punctuation(ch) else ch for ch in (text or "").lower())
    return " ".join(ARTICLES_RE.sub(" ", text).split())


def character_normalize(text: str) -> str:
    """NFKC, lowercase, punctuation and whitespace removed: one string whose characters are the tokens."""
    text = unicodedata.normalize("NFKC", text or "").lower()
    return "".join(ch for ch in text if not is_punctuation(ch) and not ch.isspace())


def normalize(text: str, kind: str) -> str:
    """`text` normalised for the scheme ('word': space-joined words, 'character': characters without spaces)."""
    return squad_normalize(text) if kind == "word" else character_normalize(text)


def tokens(text: str, kind: str) -> list[str]:
    """The tokens metrics count: words after SQuAD normalisation, or characters."""
    norm = normalize(text, kind)
    return norm.split() if kind == "word" else list(norm)


def contains(haystack: str, needle: str, kind: str) -> bool:
    """True when normalised `needle` occurs in normalised `haystack`, on word boundaries for 'word'; empty never does."""
    if not needle:
        return False
    return f" {needle} " in f" {haystack} " if kind == "word" else needle in haystack


def remove_all(haystack: str, needles: Iterable[str], kind: str) -> list[str]:
    """The pieces of normalised `haystack` left after removing every occurrence of the needles (longest first)."""
    text = f" {haystack} " if kind == "word" else haystack
    for needle in sorted({n for n in needles if n}, key=len, reverse=True):
        text = text.replace(f" {needle} " if kind == "word" else needle, f" {CUT} " if kind == "word" else CUT)
    return [p.strip() for p in text.split(CUT) if p.strip()]


def outside(haystack: str, needles: Iterable[str], kind: str) -> str:
    """Normalised `haystack` without the needles, pieces kept apart so nothing matches across a removed needle."""
    return f" {CUT} ".join(remove_all(haystack, needles, kind))


def only_connectors(pieces: list[str], kind: str) -> bool:
    """True when the leftover pieces are list connectors only ('and', 'or'; 和, 与, 及; と, や)."""
    if kind == "word":
        return all(w in CONNECTORS["word"] for p in pieces for w in p.split())
    return all(re.fullmatch("(?:" + "|".join(CONNECTORS["character"]) + ")+", p) for p in pieces)


def answer_forms(answer: AnswerSpec) -> list[str]:
    """An answer's accepted surface forms: its text and its aliases."""
    return [answer.text, *answer.aliases]


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

def _cue_patterns(letters: str) -> list[re.Pattern[str]]:
    cls = f"[{re.escape(letters)}]"
    after = r"(?![A-Za-z0-9])"
    return [
        re.compile(r"(?i:\b(?:answer|option|choice)s?\b)(?:\s+(?i:is|would be|should be|will be))?\s*[:=-]?\s*"
                   rf"(?:(?i:option|choice)\s+)?[(\[【]?\s*({cls}){after}"),
        re.compile(r"(?:正确答案|正確答案|答案|答え|正解|解答|应选|應選|故选|故選|选择|選擇|选|選|答)\s*"
                   rf"(?:应该|應該|应|應)?\s*(?:是|为|為|は|:)?\s*(?:选项|選項)?\s*[(\[【]?\s*({cls}){after}"),
        re.compile(rf"(?<![A-Za-z0-9])({cls})\s*(?:(?i:is|was)\s+(?i:the\s+)?(?i:correct|right|best)\b|项|項|选项|選項"
                   r"|が正解|が正しい)"),
    ]


def _format_patterns(letters: str) -> list[re.Pattern[str]]:
    cls = f"[{re.escape(letters)}]"
    return [re.compile(rf"(?<![A-Za-z0-9])[(\[【]\s*({cls})\s*[)\]】]"),
            re.compile(rf"(?m)^[ \t]*(?:[*_>#-]+[ \t]*)?({cls})[*_]*[ \t]*(?:[):、。]|\.(?![ \t]*[a-z]))")]


def _earliest(patterns: list[re.Pattern[str]], text: str) -> str | None:
    found = [(m.start(), m.group(1)) for p in patterns for m in [p.search(text)] if m]
    return min(found)[1] if found else None


def extract_option(response: str, letters: Iterable[str]) -> str | None:
    """The option letter a response chooses, by the first rule that finds one (NFKC first, so full-width Ｃ is C):

    1. cue: the earliest letter after an answer cue ("Answer: C", "the answer is (C)", "option C", "答案是C",
       "答案：C", "选C", "故选C", "正解はC", "答えは C") or before a confirmation ("C is correct", "C项", "Cが正解");
    2. format: the earliest bracketed letter ("(C)", "[C]", "【C】"; not inside a word as in "V(D)J") or a letter opening a line followed by
       ) : 、 。 or . ("C. Paris", "C)"), but not "C." before a lower-case word (the abbreviation in "C. difficile");
    3. bare: the response opens with the letter standing alone: followed by the end, a space, a line break or
       ) : , ; ! ? 、 。 ("C", "**C**", "C\\nbecause ..."), not by a hyphen or a letter ("D-glutamate"), not by ". "
       and a lower-case word ("E. coli"), and not "A" followed by a word (the English article: "A patient", "A 45-year-old").
    Only the instance's option letters count; cue words are case-insensitive, letters must be upper-case.
    None when no rule finds a letter.
    """
    allowed = "".join(sorted({str(x).strip().upper() for x in letters if len(str(x).strip()) == 1}))
    if not allowed:
        return None
    text = unicodedata.normalize("NFKC", response or "")
    found = _earliest(_cue_patterns(allowed), text) or _earliest(_format_patterns(allowed), text)
    if found:
        return found
    m = re.match(rf"\s*[*_\"'`]*([{re.escape(allowed)}])(?=$|[\s):,;!?、。，*_\]）】]|\.(?!\s*[a-z]))", text)
    if m is None or (m.group(1) == "A" and ARTICLE_FOLLOWS_RE.match(text, m.end())):
        return None
    return m.group(1)


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
    letter = extract_option(p.response, p.ref.choices)
    if letter:
        return scored(float(letter == key), f"option {letter} chosen, key {key}", option=letter, key=key)
    forms = [normalize(p.key_text(), p.kind), *p.gold_forms()]
    hit = any(contains(p.norm, f, p.kind) for f in forms)
    rest = outside(p.norm, forms, p.kind)
    wrong = [k for k, t in p.ref.choices.items() if k.upper() != key and contains(rest, normalize(t, p.kind), p.kind)]
    ok = hit and not wrong
    why = "no option letter; the key's option text is contained" if ok else (
        "no option letter; other options' text contained" if wrong else "no option letter and no option text")
    return scored(float(ok), why, option=None, key=key)


def exact_match(p: Prepared) -> MetricOutcome:
    """Containment: the best answer's score (1 if it or an alias is contained, else its share of parts contained);
    for 'multi' the mean over all gold answers; for 'mcq' the chosen option letter (or the option text) equals the key."""
    if p.ref.answer_type == "mcq":
        return _mcq_exact(p)
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
