"""Misleading evidence for RAG-Stress: exactly one assertion of the evidence edited to support a designated wrong
answer, offline and deterministic for a seed (optionally re-worded by an LLM through the provider layer).

- **Evidence.** HotpotQA: the gold paragraphs' sentences in stored order (distractors are not shown). MCQ (MedQA has
  no passages): a short review note of our own wording, in the question's language: an opening line, the vignette's
  findings (its sentences before the question), a line on how the options were checked, and one assertion naming the
  correct option's text.
- **TriviaQA-RC and SearchQA** (ranked passages): planned in `builder_passages.py`, chosen in `builder_plans.py` (the
  answer-bearing sentence of the passages and its paragraph neighbours; the answer span replaced by a same-type
  entity of the other passages).
- **The edit.** Open QA: the gold answer span in its supporting sentence is replaced by an entity of the same type
  taken from the distractor paragraphs (a date, year or number of the same shape found in their text, or a
  distractor paragraph's title of the same kind: person, place, organisation, work, event). When no distractor
  paragraph is about that kind: a distractor title ending in a head word of it ('... County'), or for a person a full
  name a distractor sentence credits ('directed by Jane Roe,'; titled and company-like names refused). A question
  asks for a person also through 'whose', 'whom', a 'who' clause after a comma, or a person noun after 'what /
  which' or 'the name of' (founder, attorney, role, sister, ...), for a work through 'what ... show / speech /
  story / essay / ballad', and for the kind of the noun before a closing '... of / named what?'. A nationality
  ('Dutch'), country ('Ghana'), month or weekday answer is swapped for another of its closed list (one the
  distractors' text names, else any), only when stated once in the evidence, as a whole word, not after a place
  inside it ('Lancashire, England'); an article before it follows the new word. A count or amount with no figure of
  its shape in the distractors is scaled (x0.5 to x2, written alike; never a percentage). MCQ: the correct option's
  text in the assertion is replaced by a wrong option's text. The designated wrong answer goes to
  `reference.wrong_answers`; the before/after span is recorded on every evidence document.
- **Places in a region and closed-kind words** (HotpotQA open answers once skipped as lists or as not named): a
  "City, Region" answer ('Boston, Massachusetts', 'Lee County, Mississippi'; one or two US states or countries after
  the comma) stated once, its place named nowhere else in the evidence, becomes another "City, Region" name a
  distractor sentence states after a lower-case word (same region first, then same shape, else any city for a city;
  a county only for a county; a three-part answer with no three-part name found keeps its country); a list of
  countries ('Spain, Mexico and France', not for 'both' questions) has its last country, stated once in the
  evidence, replaced by another (distractor-named first), the wrong answer being the edited list; a lower-case
  answer of a closed kind (sport, compass direction, male / female relative, football position, coaching role,
  office, cooking method, literary or music genre, clergy, trade, fast food, a number word two to twelve before
  lower-case words: 'ten years of probation'; 'a priest' keeps its article, fitted to the new word) stated once in the evidence as a whole word, the question not asking what
  two things have in common, becomes another word of its list that neither the question nor the evidence names and
  that neither contains it nor is contained in it, "a/an" following.
- **Fallback figures** (only where the rules above leave no option): a count whose distractor figures are all
  unusable (inside the clean evidence or the question) is scaled as above; an ordinal standing alone as the answer
  ('8th') becomes another ordinal of 2nd to 20th. An ordinal inside a longer answer and percentages stay refused.
- **US television networks and channels** ('CBS', 'Nickelodeon'): swapped like a nationality, within their own
  closed list (6 broadcast networks, 18 cable channels); an article before an acronym follows how it is read ('an
  HBO').
- **People named with a cue in distractor text** (only where no person is found above): a full name after a title
  or occupation noun, before 'is / was a(n) ... <occupation>', or opening a sentence before a birth or life dates;
  only for an answer that is itself a full name, not named in the question, whose surname its sentence states once.
- **Names sharing a head word, and first names** (only where no option is found above): '... War' / '... Battle' /
  'USS ...' / 'HMS ...' / '...saurus' become a name of that head in the distractors' text (not inside a longer
  name); a one-word
  answer to 'the first name of ...' becomes the first name of a distractor person referred to by the same pronoun.
- **Religious orders** ('Norbertine monks'): swapped like a nationality within a closed list of 9 orders (no
  synonyms or branches of one another).
- **Periodicals** (only where no option is found above): an answer its sentence calls a magazine / newspaper /
  journal ('the magazine India Today') becomes a name the distractors' text calls one ('Fortune magazine').
- **Quoted works** (only where no work is found above): a title the distractors' text quotes after the work noun
  the question asks for ('Which ... album' -> 'album "Made In Jamaica"'; film and movie alike; also for an answer
  of unknown kind when the question asks for such a noun, e.g. a 'story').
- **Answers with a lead-in** (HotpotQA, lower-case, of no closed kind): 'aired on' / 'located in' / 'on' / 'in' /
  'the' before a core opening with a closed-list word (US broadcast network, digital store, Russian 'the ...
  Republic', German 'the ... group', college football team, college athletic conference, terrorist group; the
  lead-in may be absent) or naming one US state before a capitalised word ('the 2002 Rhode Island Children's Book
  Award'; another state, neither containing the other), stated once in the evidence: the word becomes another of its
  list named neither in the question nor in the evidence; the whole answer is the edited span, the wrong answer the
  answer with the word replaced. A core that is a county ('located in Hillsborough County'), stated once in the
  evidence, becomes a county the distractors' text names (not after 'The'), in neither the question nor the
  evidence.
- **Positions.** The answer-bearing sentence (edited or not) is placed first, in the middle or last of the evidence;
  the clean condition keeps the natural order. Clean and misleading evidence at the same position differ in exactly
  one span, inside one sentence.
- **Comparison and yes/no questions** (HotpotQA), only where one sentence decides: a comparison decided by a year
  moves the answer entity's year past the other entity's (the wrong answer is the other entity; the compared names
  are blanked before looking for time and death cues; an answer is matched to its paragraph by name or surname;
  decades in the sentence stay in order); a comparison decided by one figure of a compared unit ('more species',
  'fewer members', 'taller' in m/ft) moves the answer entity's figure past the other's, written alike, when each
  paragraph states exactly one such figure (no range) and the two agree with the gold answer; a yes to "both
  <occupation>" has that occupation word replaced in one entity's sentence, and a yes to "both <nationality /
  continent / US state>" or "of the same nationality / country" has that word replaced where one entity's paragraph
  states it once (not a continent beside its countries, nor a state after its city); the wrong answer is "no". A
  "no" to "both <nationality> ..." or "the same nationality" where one entity's paragraph states one other
  nationality once (and the question's other words stand in both entities' text) has that word made the asked one:
  the wrong answer is "yes".
- **Lists of people or battles** (HotpotQA, not 'what do both share'): the last name of a list stated once becomes
  a distractor paragraph's person (he / she, a plain full name) or a 'Battle of ...' the distractors name.
- **Yes/no by one count or by year order** (HotpotQA): a "no" to "both <...> with <number word> <noun>s" where each
  entity's paragraph states one count of that noun (one the asked) and both state the question's other words has the
  other count, in a supporting sentence, made the asked one (wrong answer "yes"); a yes / no to "Was A <time cue>
  before / after B?" decided by the entities' first years has A's year moved past B's (wrong answer flipped).
- **No safe edit.** Items where one edit cannot support a wrong answer (other comparison and yes/no questions, list
  answers, answers that cannot be typed, no same-type entity in the distractors, ...) are returned with the reason,
  never dropped silently.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from itertools import pairwise
from typing import Any

from core.language import cjk_language, wordlists
from core.protocols.misleading_evidence import CLEAN, EVIDENCE_KEY, NAME, POSITIONS
from core.scoring.reference import contains, normalize, scheme_for
from core.store.schema import DocumentSpec, InstanceSpec

_WORDS = wordlists("misleading_evidence")  # data/wordlists/misleading_evidence.en.json

CompleteJson = Callable[[str], dict]
MAX_ANSWER_WORDS = 8

# --------------------------------------------------------------------------- evidence text


@dataclass(frozen=True)
class Evidence:
    """Evidence as sentences in natural order, with the index of the answer-bearing sentence."""

    sentences: tuple[str, ...]
    answer: int
    joiner: str = " "

    def index(self, position: str | None = None) -> int:
        """Where the answer sentence stands: its own index (None), else first, in the middle of the others, or last."""
        rest = len(self.sentences) - 1
        return self.answer if position is None else {"beginning": 0, "middle": rest // 2, "end": rest}[position]

    def ordered(self, position: str | None = None) -> list[str]:
        """The sentences in natural order (None) or with the answer sentence at the beginning, middle or end."""
        rest = [s for i, s in enumerate(self.sentences) if i != self.answer]
        at = self.index(position)
        return [*rest[:at], self.sentences[self.answer], *rest[at:]]

    def text(self, position: str | None = None) -> str:
        """The evidence text (natural order, or the answer sentence placed at `position`)."""
        return self.joiner.join(self.ordered(position))

    def sentence_start(self, position: str | None = None) -> int:
        """Where the answer sentence starts in `text(position)`."""
        return sum(len(s) + len(self.joiner) for s in self.ordered(position)[:self.index(position)])

    def with_answer_sentence(self, sentence: str) -> Evidence:
        """The same evidence with the answer sentence replaced."""
        sentences = list(self.sentences)
        sentences[self.answer] = sentence
        return replace(self, sentences=tuple(sentences))


@dataclass(frozen=True)
class Edit:
    """One edit of the answer sentence: `before` at `offset` becomes `after`."""

    offset: int
    before: str
    after: str
    method: str = "rule"

    def apply(self, sentence: str) -> str:
        """The sentence with the edit applied."""
        if sentence[self.offset:self.offset + len(self.before)] != self.before:
            raise ValueError("the edit does not match its sentence")
        return sentence[:self.offset] + self.after + sentence[self.offset + len(self.before):]


@dataclass(frozen=True)
class Plan:
    """What the generator decided for one item: the clean evidence, the edit and the designated wrong answer."""

    evidence: Evidence
    edit: Edit
    wrong_answer: str
    wrong_forms: tuple[str, ...]
    wrong_key: str | None = None
    entity_type: str = ""
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def misleading(self) -> Evidence:
        """The evidence with the edit applied."""
        return self.evidence.with_answer_sentence(self.edit.apply(self.evidence.sentences[self.evidence.answer]))


class NoSafeEdit(Exception):
    """No edit of one assertion can support a designated wrong answer for this item (the message says why)."""


@dataclass(frozen=True)
class Skipped:
    """An item with no safe edit and the reason."""

    id: str
    reason: str


@dataclass
class StressBuild:
    """The instances built, the items skipped with their reason, and what the optional LLM edit did."""

    instances: list[InstanceSpec] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    llm_edits: int = 0
    llm_rejected: list[Skipped] = field(default_factory=list)
    generated: int = 0  # items whose edit the generator wrote (the rules skipped them or they failed a check)
    regenerated: int = 0  # generator attempts retried after failing a check
    dropped: list[Skipped] = field(default_factory=list)  # items that failed a check and were not rebuilt
    checks: dict[str, dict[str, int]] = field(default_factory=dict)  # per check: passed / failed verdicts

    def reasons(self) -> dict[str, int]:
        """Skipped items per reason (the reason's text before any detail in parentheses)."""
        counts: dict[str, int] = {}
        for item in self.skipped:
            key = item.reason.split(" (")[0]
            counts[key] = counts.get(key, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: -kv[1]))

    def to_dict(self) -> dict[str, Any]:
        """The build summary as plain data (every skipped item listed with its reason)."""
        return {"built": len(self.instances), "skipped": len(self.skipped), "skipped_by_reason": self.reasons(),
                "llm_edits": self.llm_edits, "llm_rejected": [asdict(s) for s in self.llm_rejected],
                "generated": self.generated, "regenerated": self.regenerated,
                "dropped_by_checks": [asdict(s) for s in self.dropped], "checks": self.checks,
                "skipped_items": [asdict(s) for s in self.skipped]}


def rng_for(seed: int, item_id: str) -> random.Random:
    """A generator seeded by the build seed and the item id (same seed, same choices, whatever the file order)."""
    return random.Random(int.from_bytes(hashlib.sha256(f"{seed}:{item_id}".encode()).digest()[:8], "big"))


def one_span_diff(clean: str, edited: str) -> tuple[int, int, int]:
    """(start, clean_end, edited_end): the single differing span of two texts after their common prefix and suffix."""
    start = 0
    while start < min(len(clean), len(edited)) and clean[start] == edited[start]:
        start += 1
    end = 0
    while end < min(len(clean), len(edited)) - start and clean[-1 - end] == edited[-1 - end]:
        end += 1
    return start, len(clean) - end, len(edited) - end


# --------------------------------------------------------------------------- entity types (open QA)

MONTHS = ("January|February|March|April|May|June|July|August|September|October|November|December")
SHAPES: tuple[tuple[str, str], ...] = (
    ("date", rf"\b\d{{1,2}} (?:{MONTHS}) \d{{4}}\b"),
    ("date", rf"\b(?:{MONTHS}) \d{{1,2}}, \d{{4}}\b"),
    ("month_year", rf"\b(?:{MONTHS}) \d{{4}}\b"),
    ("day_month", rf"\b\d{{1,2}} (?:{MONTHS})\b"),
    ("month_day", rf"\b(?:{MONTHS}) \d{{1,2}}\b"),
    ("ordinal", r"\b\d+(?:st|nd|rd|th)\b"),
    ("year", r"\b(?:1[0-9]{3}|20[0-9]{2})\b"),
    ("number", r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])|(?<![\d.,])\d+(?:\.\d+)?(?![\d.,]?\d)"),
)
KIND_CUES: dict[str, str] = dict(_WORDS["kind_cues"])
NAME_HEADS: dict[str, set[str]] = {k: set(v) for k, v in _WORDS["name_heads"].items()}
CONTEXT_CUES: dict[str, str] = dict(_WORDS["context_cues"])


def _any(name: str) -> str:
    """The words of list `name` as one regex alternation, in their listed order (regex syntax kept as written)."""
    return "|".join(_WORDS[name])


def _any_literal(name: str) -> str:
    """The words of list `name` as one regex alternation of literal texts, in their listed order."""
    return "|".join(map(re.escape, _WORDS[name]))


QUESTION_PERSON = re.compile(rf"\b(?:{_any('question_person_nouns')})s?\b", re.IGNORECASE)
QUESTION_WORK = re.compile(rf"(?!the\b)(?:\S+\s+){{0,2}}(?:{_any('question_work_nouns')})s?\b", re.IGNORECASE)
WHO_CLAUSE = re.compile(r"(?:^|[,;]\s*|\bwith\s+)(?:who|whom|whose)\b", re.IGNORECASE)
DEMONYMS: tuple[str, ...] = tuple(_WORDS["demonyms"])
COUNTRIES: tuple[str, ...] = tuple(_WORDS["countries"])
WEEKDAYS = tuple(_WORDS["weekdays"])
BROADCAST_NETWORKS = tuple(_WORDS["broadcast_networks"])
CABLE_CHANNELS = tuple(_WORDS["cable_channels"])
RELIGIOUS_ORDERS = tuple(_WORDS["religious_orders"])  # no synonyms or branches of one another (Premonstratensian, Trappist)
VOCABULARY: dict[str, tuple[str, ...]] = {"nationality": DEMONYMS, "country": COUNTRIES,
                                          "month": tuple(MONTHS.split("|")), "weekday": WEEKDAYS,
                                          "US broadcast network": BROADCAST_NETWORKS,
                                          "US cable channel": CABLE_CHANNELS, "religious order": RELIGIOUS_ORDERS}
PERSON_IN_TEXT = re.compile(
    rf"\b(?:(?:{_any('credit_verbs')}) by|{_any('credit_words')})\s+((?:[A-Z][a-z]+|[A-Z]\.)(?:\s(?:[A-Z][a-z]+|"
    r"[A-Z]\.)){1,2})\b(?=\s*(?:\(|,|\.|;|\sand\b|\sas\b|\sin\b))")
NOT_A_PERSONAL_NAME = re.compile(rf"^(?:{_any('not_personal_openers')})\b|\b(?:{_any('company_endings')})$")
LIFE_DATES = re.compile(r"\(\s*(?:born\b|b\.|[^()]*\b\d{3,4}\s*[–-]\s*(?:\d{1,2}\s+\w+\s+)?\d{3,4}\s*\))")
LIST_TITLE = re.compile(rf"\b(?:{_any('list_title_words')})\b|^List of\b", re.IGNORECASE)
LIST_RE = re.compile(r",\s|\s(?:and|&)\s")


def title_base(title: str) -> str:
    """A paragraph title without its disambiguation ('Careers (board game)' -> 'Careers')."""
    return re.sub(r"\s*\([^)]*\)$", "", title).strip()


def _earliest_kind(text: str) -> str | None:
    found = [(m.start(), kind) for kind, cue in KIND_CUES.items() if (m := re.search(cue, text, re.IGNORECASE))]
    return min(found)[1] if found else None


def describe(paragraph: str) -> str | None:
    """The kind of entity a paragraph is about: a person when its first sentence gives a birth or life dates, else
    the earliest cue word within the 15 words after its first 'is / was / are / were'."""
    first = re.split(r"(?<=[.!?])\s", paragraph.strip(), maxsplit=1)[0]
    if LIFE_DATES.search(first):
        return "person"
    copula = re.search(r"\b(?:is|was|are|were)\b", first)
    return _earliest_kind(" ".join(first[copula.end():].split()[:15])) if copula else None


def question_kind(question: str) -> str | None:
    """The kind of entity a question asks for: who -> person, where -> place, else the first cue noun within the five
    words after 'what' / 'which' ('what West Virginia county' -> place); None for 'what kind of ...'."""
    if re.search(r"\b(?:kind|type|sort|form) of\b|\bnationality\b|\b(?:first |nick|mono)name\b", question,
                 re.IGNORECASE):
        return None
    if re.match(r"\s*(?:who|whom|whose)\b", question, re.IGNORECASE):
        return "person"
    if re.match(r"\s*where\b", question, re.IGNORECASE):
        return "place"
    if (who := WHO_CLAUSE.search(question)) and not re.search(r"\b(?:what|which|where|when|how)\b",
                                                             question[who.end():], re.IGNORECASE):
        return "person"
    for m in re.finditer(r"\b(?:what|which)\s+((?:\S+\s+){0,4}\S+)", question, re.IGNORECASE):
        if kind := _earliest_kind(m.group(1)):
            return kind
    asked = [m.group(1) for m in re.finditer(r"\b(?:what|which)\s+((?:\S+\s+){0,4}\S+)", question, re.IGNORECASE)]
    asked += [m.group(1) for m in re.finditer(r"\bname of (?:the |a |an )?((?:\S+\s+){0,2}\S+)", question)]
    if any(QUESTION_PERSON.search(words) for words in asked) or re.search(r"\bwho(?:se|m)\b", question, re.IGNORECASE):
        return "person"
    if any(QUESTION_WORK.match(words) for words in asked):
        return "work"
    return _kind_before_last_what(question)


def _kind_before_last_what(question: str) -> str | None:
    """The kind of the noun just before a question's closing 'what?' ('a team in the autonomous community of what?'
    -> place, 'has a sister named what?' -> person)."""
    m = re.search(r"((?:\S+\s+){1,3})(?:named |called |of |as )?what\s*\?*\s*$", question, re.IGNORECASE)
    if m is None:
        return None
    if QUESTION_PERSON.search(m.group(1)):
        return "person"
    return _earliest_kind(m.group(1))


def name_shape(name: str) -> str | None:
    """The kind a name's head words tell ('Preston County' -> place, 'Berklee College of Music' -> organisation)."""
    words = name.replace(",", " ").split()
    return next((kind for kind, heads in NAME_HEADS.items() if any(w in heads for w in words)), None)


def numeric_shape(answer: str) -> tuple[str, str, re.Match[str]] | None:
    """(shape, pattern, match) of the one figure an answer is built on; None when it has no digits or is a name
    with a figure in it ('2000 Summer Olympic Games')."""
    if not re.search(r"\d", answer) or re.search(rf"\b(?!(?:{MONTHS})\b)[A-Z]", answer):
        return None
    for shape, pattern in SHAPES:
        found = list(re.finditer(pattern, answer))
        if len(found) == 1:
            m = found[0]
            if re.search(r"\d", answer[:m.start()] + answer[m.end():]):
                raise NoSafeEdit("several figures in the answer")
            return shape, pattern, m
    raise NoSafeEdit("several figures in the answer")


FIGURE_FACTORS = (0.5, 0.6, 0.75, 1.3, 1.5, 2.0)


def nearby_figures(shape: str, core: str, answer: str) -> list[str]:
    """Figures written like `core` when the distractors hold none of its shape: a count or amount scaled by half to
    twice (same decimals and separators); other shapes, and percentages (which sum with others in their sentence),
    get none."""
    if shape != "number" or "%" in answer:
        return []
    decimals = len(core.split(".")[1]) if "." in core else 0
    value = float(core.replace(",", ""))
    written = [f"{value * f:{',' if ',' in core else ''}.{decimals}f}" for f in FIGURE_FACTORS]
    return sorted({w for w in written if w != core and same_format(core, w)})


def figure_fallbacks(shape: str, core: str, answer: str) -> list[str]:
    """Figures for an answer whose distractor figures are absent or all unusable: a count or amount scaled (as in
    `nearby_figures`), and an ordinal standing alone ('8th') another ordinal of 2 to 20."""
    if shape == "ordinal" and answer == core:
        return [_ordinal(n) for n in range(2, 21) if _ordinal(n) != core]
    return nearby_figures(shape, core, answer)


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _figure_options(answer: str, m: re.Match[str], found: list[str], question: str,
                    clean: str) -> list[tuple[str, ...]]:
    """The answer with its figure replaced by each found figure, kept where answer and figure are usable."""
    options = [(answer[:m.start()] + c + answer[m.end():], c) for c in found]
    return [o for o in options if all(_usable(f, answer, question, clean) for f in o)]


def same_format(core: str, other: str) -> bool:
    """Two numbers written alike: thousands separators and decimals agree, digit counts within one, and a year-like
    number only stands in for another 4-digit number."""
    digits = lambda s: len(re.sub(r"\D", "", s.split(".")[0]))  # noqa: E731
    year_like = re.fullmatch(r"1[0-9]{3}|20[0-9]{2}", other) is not None
    return ("," in core) == ("," in other) and ("." in core) == ("." in other) \
        and abs(digits(core) - digits(other)) <= 1 and (not year_like or digits(core) == 4)


# --------------------------------------------------------------------------- open QA (HotpotQA)


@dataclass(frozen=True)
class Paragraph:
    """A HotpotQA paragraph: title, sentences and its supporting-sentence indices."""

    title: str
    sentences: tuple[str, ...]
    supporting: tuple[int, ...]


def paragraphs(spec: InstanceSpec, role: str) -> list[Paragraph]:
    """The instance's paragraphs of `role`, split into sentences by their stored offsets."""
    out = []
    for doc in spec.documents:
        if doc.role != role:
            continue
        cuts = [*doc.variant.get("sentence_offsets", [0]), len(doc.text)]
        sentences = tuple(doc.text[a:b].strip() for a, b in pairwise(cuts))
        out.append(Paragraph(doc.title, sentences, tuple(doc.variant.get("supporting_sentences", []))))
    return out


def answer_sentence(gold: list[Paragraph], answer: str) -> tuple[int, int]:
    """(paragraph, sentence) of the supporting sentence to edit: it states the answer exactly once; sentences of a
    paragraph not about the answer itself come first (they carry the link from question to answer)."""
    found, repeated = [], False
    for p, para in enumerate(gold):
        for s in para.supporting:
            if s < len(para.sentences) and (count := para.sentences[s].count(answer)):
                repeated |= count > 1
                if count == 1:
                    found.append((title_base(para.title) == answer, p, s))
    if not found:
        raise NoSafeEdit("the answer occurs more than once in its supporting sentence" if repeated else
                         "the answer is not a span of a supporting sentence")
    _, p, s = min(found)
    return p, s


def answer_kind(answer: str, question: str, all_paragraphs: list[Paragraph], texts: dict[str, str],
                sentence: str) -> str | None:
    """The kind of a name answer: the paragraph about it, else the question's wording, its head words, or the words
    just before it in its sentence."""
    for para in all_paragraphs:
        if title_base(para.title) == answer and (kind := describe(texts[para.title])):
            return kind
    if kind := question_kind(question) or name_shape(answer):
        return kind
    before = sentence[:sentence.find(answer)]
    return next((kind for kind, cue in CONTEXT_CUES.items() if re.search(cue, before, re.IGNORECASE)), None)


def _evidence_at(gold: list[Paragraph], paragraph: Paragraph, sentence: int) -> Evidence:
    """The gold paragraphs' sentences in stored order, the answer sentence being `sentence` of `paragraph`."""
    flat = [(para, j) for para in gold for j, x in enumerate(para.sentences) if x]
    return Evidence(tuple(para.sentences[j] for para, j in flat),
                    next(i for i, (para, j) in enumerate(flat) if para is paragraph and j == sentence))


YEAR = re.compile(r"\b(?:1[0-9]{3}|20[0-9]{2})\b")
LATEST_YEAR = 2025
TIME_CUES = re.compile(rf"\b(?:{_any('time_cues')})\b", re.IGNORECASE)
DEATH_CUES = re.compile(rf"\b(?:{_any('death_cues')})\b", re.IGNORECASE)


def _about(gold: list[Paragraph], answer: str) -> tuple[Paragraph, Paragraph]:
    """(the paragraph about the answer entity, the other one) of a comparison of two entities."""
    a = normalize(answer, "word")
    about = [p for p in gold if (t := normalize(title_base(p.title), "word"))
             and (contains(a, t, "word") or contains(t, a, "word"))]
    if not about and len(gold) == 2:  # 'David Michael Draiman' answers for the paragraph 'David Draiman'
        last = lambda text: normalize(text, "word").split()[-1:]  # noqa: E731
        about = [p for p in gold if last(title_base(p.title)) == last(answer)]
    if len(gold) != 2 or len(about) != 1:
        raise NoSafeEdit("comparison question whose answer is not one of its two entities")
    return about[0], next(p for p in gold if p is not about[0])


def _first_year(para: Paragraph) -> tuple[int, re.Match[str]]:
    """(sentence, match) of the first year in a paragraph's supporting sentences."""
    for s in para.supporting:
        if s < len(para.sentences) and (m := YEAR.search(para.sentences[s])):
            return s, m
    raise NoSafeEdit("comparison question: no year in an entity's supporting sentences")


def _moved_year(sentence: str, m: re.Match[str], target: int, rng: random.Random) -> int:
    """A year 1-5 years past `target` on the side away from the year `m` holds, keeping the sentence's own dates in
    order (a birth year stays before a death year)."""
    year = int(m.group(0))
    new = target + (1 if year < target else -1) * rng.randint(1, 5)
    others = [int(x.group(0)) for x in YEAR.finditer(sentence) if x.start() != m.start()]
    others += [int(x.group(1)) + 9 for x in re.finditer(r"\b(1[0-9]{3}|20[0-9]{2})s\b", sentence)]  # '1930s'
    if not 1000 <= new <= LATEST_YEAR or any((new < y) != (year < y) or new == y for y in others):
        raise NoSafeEdit("comparison question: no year past the other entity's keeps the sentence's own dates")
    return new


def plan_comparison(spec: InstanceSpec, answer: str, seed: int = 0) -> Plan:
    """A comparison of two entities decided by a year ('who was born first, A or B?', 'which was founded
    earlier?'): the first year in the answer entity's supporting sentences moves past the other entity's first year,
    so the one edited sentence now decides for the other entity whichever way the question compares; the designated
    wrong answer is the other entity's name. Other comparisons (two assertions, no year) have no safe edit."""
    gold = paragraphs(spec, "supporting")
    asked = _without_names(spec.query, gold)
    if not TIME_CUES.search(asked) or DEATH_CUES.search(asked):
        if COMPARATIVE.search(asked):
            return plan_comparison_figure(spec, answer, asked, seed)
        raise NoSafeEdit("comparison question not decided by one year (the answer rests on two assertions)")
    mine, other = _about(gold, answer)
    s, m = _first_year(mine)
    _, o = _first_year(other)
    if m.group(0) == o.group(0):
        raise NoSafeEdit("comparison question: both entities have the same year")
    sentence = mine.sentences[s]
    new = _moved_year(sentence, m, int(o.group(0)), rng_for(seed, spec.id))
    wrong = title_base(other.title)
    return Plan(_evidence_at(gold, mine, s), Edit(m.start(), m.group(0), str(new)), wrong, (wrong,), None,
                "comparison (year)", {"gold_mentions_left": 0})


def _without_names(question: str, gold: list[Paragraph]) -> str:
    """The question with the compared entities' names blanked ('The Last Lions' does not ask about a death)."""
    for para in gold:
        question = question.replace(title_base(para.title), " ")
    return question


MORE_WORDS = _any("more_words")
LESS_WORDS = _any("less_words")
COMPARATIVE = re.compile(rf"\b(?:{MORE_WORDS}|{LESS_WORDS})\b", re.IGNORECASE)
LENGTH_UNITS = f"(?:{_any('length_units')})"
UNIT_OF: dict[str, str] = dict.fromkeys(_WORDS["length_comparatives"], LENGTH_UNITS)
NUMBER_WORDS = tuple(_WORDS["number_words"])
FIGURE = rf"(?<![\d.,])(\d{{1,3}}(?:,\d{{3}})+|\d+|{'|'.join(NUMBER_WORDS)})(?![\d.,]?\d)"


def _compared_unit(asked: str) -> tuple[str, bool] | None:
    """(unit pattern, whether the answer has the larger figure) of 'more species', 'fewer members', 'taller', ..."""
    m = COMPARATIVE.search(asked)
    if m is None:
        return None
    word, larger = m.group(0).lower(), re.fullmatch(MORE_WORDS, m.group(0).lower()) is not None
    if word in UNIT_OF:
        return UNIT_OF[word], larger
    noun = re.match(r"\s+([a-z]+)", asked[m.end():])
    if noun is None or noun.group(1) in _WORDS["not_a_unit"]:
        return None
    stem = re.sub(r"(?:es|s)$", "", noun.group(1))
    return rf"{stem}(?:s|es)?", larger


def _value(figure: str) -> int:
    return NUMBER_WORDS.index(figure) + 1 if figure in NUMBER_WORDS else int(figure.replace(",", ""))


def _figure(para: Paragraph, unit: str) -> tuple[int, re.Match[str]]:
    """(sentence, match) of the one figure with `unit` the paragraph states (in a supporting sentence)."""
    pattern = re.compile(rf"{FIGURE}\s+(?:[a-z-]+\s+)?{unit}\b")
    found = [(j, m) for j, x in enumerate(para.sentences) for m in pattern.finditer(x)
             if not re.search(r"\d\s*(?:to|-|–|or)\s*$", x[:m.start()])]
    if len(found) != 1 or found[0][0] not in para.supporting:
        raise NoSafeEdit("comparison question: not one figure of the compared unit in each entity's paragraph")
    return found[0]


def _written_like(value: int, figure: str) -> str:
    """`value` written as `figure` is (a word, digits with or without thousands separators)."""
    if figure in NUMBER_WORDS:
        return NUMBER_WORDS[value - 1]
    return f"{value:,}" if "," in figure else str(value)


def plan_comparison_figure(spec: InstanceSpec, answer: str, asked: str, seed: int = 0) -> Plan:
    """A comparison decided by one figure of each entity ('which genus has more species?', 'which band has more
    members?', 'which is taller?'): each paragraph states exactly one figure of the compared unit and the figures
    agree with the gold answer; the answer entity's figure moves past the other's, so the edited sentence decides
    for the other entity (the designated wrong answer)."""
    unit = _compared_unit(asked)
    if unit is None:
        raise NoSafeEdit("comparison question not decided by one year or one figure")
    pattern, larger = unit
    gold = paragraphs(spec, "supporting")
    mine, other = _about(gold, answer)
    s, m = _figure(mine, pattern)
    _, o = _figure(other, pattern)
    a, b = _value(m.group(1)), _value(o.group(1))
    if (a > b) != larger or a == b:
        raise NoSafeEdit("comparison question: the figures found do not decide the gold answer")
    rng = rng_for(seed, spec.id)
    new = rng.randint(max(1, (b + 1) // 2), b - 1) if larger else rng.randint(b + 1, b + max(1, b // 2) + 1)
    words = m.group(1) in NUMBER_WORDS
    if new < 1 or words and new > len(NUMBER_WORDS):
        raise NoSafeEdit("comparison question: no figure past the other entity's can be written alike")
    wrong = title_base(other.title)
    return Plan(_evidence_at(gold, mine, s), Edit(m.start(1), m.group(1), _written_like(new, m.group(1))), wrong,
                (wrong,), None, "comparison (figure)", {"gold_mentions_left": 0})


OCCUPATIONS: tuple[str, ...] = tuple(_WORDS["occupations"])


def plan_yes_no(spec: InstanceSpec, answer: str, seed: int = 0) -> Plan:
    """'Are A and B both <occupation>s?' answered yes: the occupation word in one entity's supporting sentence
    becomes another occupation, so that sentence alone now makes the answer 'no' (the designated wrong answer). Other
    yes/no questions (a 'no' to undo, a property that is not one word) have no safe edit."""
    asked = [o for o in OCCUPATIONS if re.search(rf"\bboth\b.*\b{o}s?\b", spec.query, re.IGNORECASE)]
    if answer == "yes" and len(asked) != 1:
        return plan_yes_no_word(spec, seed)
    if answer == "no":
        return plan_no_nationality(spec, seed)
    if answer != "yes" or len(asked) != 1:
        raise NoSafeEdit("yes/no answer not decided by one occupation word in one sentence")
    word = asked[0]
    found = [(para, j, m) for para in reversed(paragraphs(spec, "supporting")) for j in para.supporting
             if j < len(para.sentences) and len(ms := list(re.finditer(rf"\b{word}\b", para.sentences[j]))) == 1
             for m in ms]
    if not found:
        raise NoSafeEdit("yes/no answer: the occupation is not stated once in a supporting sentence")
    para, j, m = found[0]
    gold = paragraphs(spec, "supporting")
    para = next(p for p in gold if p.title == para.title)
    others = [o for o in OCCUPATIONS if o != word and not re.search(rf"\b{o}", spec.query + " " + para.sentences[j],
                                                                     re.IGNORECASE)]
    new = rng_for(seed, spec.id).choice(others)
    return Plan(_evidence_at(gold, para, j), Edit(m.start(), word, new), "no", ("no",), None, "yes/no (occupation)",
                {"gold_mentions_left": 0})


def vocabulary_kind(answer: str) -> str | None:
    """'nationality' or 'country' when the answer is one word of those closed lists ('Dutch', 'South Korea')."""
    return next((kind for kind, words in VOCABULARY.items() if answer in words), None)


def vocabulary_options(kind: str, answer: str, question: str, clean: str, noise_text: str) -> list[tuple[str, ...]]:
    """Other words of the answer's closed list: those the distractors' text names, else any of the list."""
    usable = [w for w in VOCABULARY[kind] if _usable(w, answer, question, clean)]
    named: list[tuple[str, ...]] = [(w,) for w in usable if re.search(rf"\b{w}\b", noise_text)]
    return named or [(w,) for w in usable]


_NAME_WORD = r"(?:[A-Z][a-zà-ÿ'-]+|[A-Z]\.)"
FULL_NAME = rf"{_NAME_WORD}(?:\s{_NAME_WORD}){{1,3}}"
_OCCUPATION = KIND_CUES["person"][KIND_CUES["person"].index("(?:actor"):]
PERSON_CUED = re.compile(
    rf"(?:\b(?:{_any_literal('person_titles')})|\b{_OCCUPATION})\s({FULL_NAME})\b"
    rf"|(?:^|(?<=\.\s))({FULL_NAME})(?=\s*\((?:born\b|b\.|[^()]*\d{{3,4}}\s*[–-]))"
    rf"|({FULL_NAME}),?\s+(?:is|was)\s+an?\s+(?:[\w-]+\s+){{0,4}}?{_OCCUPATION}")


def cued_person_names(noise: list[Paragraph], texts: dict[str, str]) -> list[str]:
    """Full names (2-4 capitalised words) distractor text marks as people: after a title or occupation noun
    ('architect Richard C. Biberstein', 'Professor Alexander Lippisch'), before 'is / was a(n) ... <occupation>', or
    opening a sentence before a birth or life dates; titled, company-like and place-like names refused."""
    found = {next(g for g in m.groups() if g) for x in noise for m in PERSON_CUED.finditer(texts[x.title])}
    return sorted(n for n in found if name_shape(n) is None and not NOT_A_PERSONAL_NAME.search(n)
                  and not vocabulary_kind(n.split()[0]))


def person_fallback(answer: str, question: str, sentence: str, noise: list[Paragraph],
                    texts: dict[str, str]) -> list[str]:
    """Cued person names for a person answer that is itself a full name, not one of the question's own choices, and
    whose surname its sentence does not state again ('Banneker Recreation Center ... named for Benjamin Banneker')."""
    surname = rf"\b{re.escape(answer.split()[-1])}\b"
    if not re.fullmatch(FULL_NAME, answer) or answer in question or len(re.findall(surname, sentence)) > 1:
        return []
    return cued_person_names(noise, texts)


SHARED_HEADS: dict[str, str] = dict(_WORDS["shared_heads"])
FIRST_NAME_QUESTION = re.compile(r"\bfirst name of\b", re.IGNORECASE)


def _pronoun(text: str) -> str | None:
    """'she' or 'he' when a paragraph refers to its subject by one of them more than by the other."""
    she = len(re.findall(rf"\b(?:{_any('female_pronouns')})\b", text, re.IGNORECASE))
    he = len(re.findall(rf"\b(?:{_any('male_pronouns')})\b", text, re.IGNORECASE))
    return "she" if she > he else "he" if he > she else None


def _asked_pronoun(question: str, gold_text: str) -> str | None:
    """'he' or 'she' for the person a question asks about: by its noun ('father', 'the woman'), else by the
    pronouns of the answer's paragraph."""
    if re.search(rf"\b(?:{_any('male_nouns')})\b", question, re.IGNORECASE):
        return "he"
    if re.search(rf"\b(?:{_any('female_nouns')})\b", question, re.IGNORECASE):
        return "she"
    return _pronoun(gold_text)


def first_names(question: str, gold_text: str, noise: list[Paragraph], texts: dict[str, str]) -> list[str]:
    """First names of distractor paragraphs about a person referred to by the same pronoun as the one asked about."""
    pronoun = _asked_pronoun(question, gold_text)
    return sorted({title_base(x.title).split()[0] for x in noise if describe(texts[x.title]) == "person"
                   and pronoun is not None and _pronoun(texts[x.title]) == pronoun
                   and re.fullmatch(r"[A-Z][a-z]+", title_base(x.title).split()[0]) and " " in title_base(x.title)})


def shared_head_names(answer: str, noise_text: str) -> tuple[str, list[str]] | None:
    """(kind, names) for an answer named by a head word it shares with names in the distractors' text: '... War' or
    '... Battle' (an event; not inside a longer name such as 'World War II'), a 'USS / HMS ...' ship, a '...saurus'
    dinosaur genus."""
    words = answer.split()
    if re.fullmatch(r"[A-Z][a-z]+saurus", answer):
        return "dinosaur genus", sorted(set(re.findall(r"\b[A-Z][a-z]+saurus\b", noise_text)))
    if len(words) < 2 or not (kind := SHARED_HEADS.get(words[-1]) or SHARED_HEADS.get(words[0])):
        return None
    if words[0] in SHARED_HEADS:
        pattern = rf"\b{words[0]} [A-Z][a-z]+\b(?! [A-Z0-9])"
    else:
        pattern = rf"(?<![\w-])(?:[A-Z][\w'-]*\s){{1,3}}{words[-1]}\b(?!\s[A-Z0-9])"
    return kind, sorted({m.group(0).removeprefix("The ") for m in re.finditer(pattern, noise_text)})


PERIODICAL = f"(?:{_any('periodical_nouns')})"
_TITLE_WORDS = r"[A-Z][\w'&.-]*(?:\s[A-Z][\w'&.-]*){0,2}"


def periodical_names(answer: str, sentence: str, noise_text: str) -> list[str]:
    """Names the distractors' text calls a magazine / newspaper / journal, for an answer its sentence calls one
    ('The magazine India Today featured him' -> 'Fortune', from 'Fortune magazine')."""
    if not re.search(rf"\b{PERIODICAL}\s+{re.escape(answer)}\b|\b{re.escape(answer)}\s+{PERIODICAL}\b", sentence):
        return []
    found = re.finditer(rf"\b{PERIODICAL}\s+({_TITLE_WORDS})\b|\b({_TITLE_WORDS})\s+{PERIODICAL}\b", noise_text)
    return sorted({(m.group(1) or m.group(2)).removeprefix("The ") for m in found})


WORK_NOUNS: tuple[tuple[str, ...], ...] = tuple(tuple(nouns) for nouns in _WORDS["work_nouns"])


def quoted_works(question: str, noise_text: str) -> list[str]:
    """Titles the distractors' text quotes after the work noun the question asks for ('Which Grammy Nominated album'
    -> 'album "Back To Love"'; film and movie alike); a quote ending in a lowercase word is not a title."""
    every = "|".join(noun for group in WORK_NOUNS for noun in group)
    asked = re.search(rf"\b(?:what|which)\s+(?:\S+\s+){{0,4}}?({every})s?\b", question, re.IGNORECASE)
    nouns = next((group for group in WORK_NOUNS if asked and asked.group(1).lower() in group), None)
    if nouns is None:
        return []
    found = re.findall(rf'\b(?:{"|".join(nouns)})\s+"([A-Z][^"]{{0,80}})"', noise_text)
    return sorted({t.strip(" ,.") for t in found if re.search(r"[A-Z0-9][^\s]*$", t.strip(" ,."))})


def more_names(kind: str, noise: list[Paragraph], texts: dict[str, str]) -> list[str]:
    """Names of `kind` among the distractors when no paragraph is about one: titles named like it (a head word such as
    'County'), and for people the full names their sentences credit ('directed by Jane Roe,')."""
    titles = {title_base(x.title) for x in noise if title_base(x.title).split()[-1] in NAME_HEADS.get(kind, ())}
    if kind == "person":
        titles |= {m.group(1) for x in noise for m in PERSON_IN_TEXT.finditer(texts[x.title])
                   if name_shape(m.group(1)) is None and not vocabulary_kind(m.group(1).split()[0])}
        titles = {t for t in titles if not NOT_A_PERSONAL_NAME.search(t)}
    return sorted(titles)


CONTINENTS: tuple[str, ...] = tuple(_WORDS["continents"])
US_STATES: tuple[str, ...] = tuple(_WORDS["us_states"])
PROPERTY_WORDS: dict[str, tuple[str, ...]] = {"nationality": DEMONYMS, "continent": CONTINENTS, "state": US_STATES}
SAME_NATIONALITY = re.compile("|".join(rf"\b{w}\b" for w in _WORDS["same_nationality"]), re.IGNORECASE)


def _said_once(para: Paragraph, word: str) -> int | None:
    """The supporting sentence of `para` that states `word`, when the paragraph states it there and nowhere else."""
    pattern = rf"\b{re.escape(word)}\b"
    if sum(len(re.findall(pattern, x)) for x in para.sentences) != 1:
        return None
    return next((j for j in para.supporting if j < len(para.sentences) and re.search(pattern, para.sentences[j])),
                None)


def _property_asked(spec: InstanceSpec, gold: list[Paragraph]) -> tuple[str, str] | None:
    """(group, word) of the one property a yes question asks of both entities: a nationality, continent or US state
    named in the question, or for 'the same nationality / country' the nationality both entities' sentences state."""
    if SAME_NATIONALITY.search(spec.query):
        shared = [w for w in DEMONYMS if all(re.search(rf"\b{w}\b", " ".join(p.sentences[j] for j in p.supporting
                                                                           if j < len(p.sentences))) for p in gold)]
        return ("nationality", shared[0]) if len(shared) == 1 else None
    asked = [(group, w) for group, words in PROPERTY_WORDS.items() for w in words
             if re.search(rf"\b{w}\b", spec.query)]
    return asked[0] if len(asked) == 1 else None


def plan_yes_no_word(spec: InstanceSpec, seed: int = 0) -> Plan:
    """'Are A and B both American?', 'both native to Asia?', 'based in Maryland?', 'of the same nationality?'
    answered yes: the property word in one entity's supporting sentence (the only place its paragraph states it)
    becomes another of its kind, so that sentence alone now makes the answer 'no' (the designated wrong answer)."""
    gold = paragraphs(spec, "supporting")
    asked = _property_asked(spec, gold)
    if len(gold) == 2 and asked is None and (plan := plan_yes_no_order(spec, gold, "yes", seed)):
        return plan
    if len(gold) != 2 or asked is None:
        raise NoSafeEdit("yes/no answer not decided by one occupation, nationality or place word in one sentence")
    group, word = asked
    found = [(para, j) for para in reversed(gold) if (j := _said_once(para, word)) is not None]
    if not found:
        raise NoSafeEdit(f"yes/no answer: the {group} is not stated once in one entity's paragraph")
    para, j = found[0]
    sentence = para.sentences[j]
    at = re.search(rf"\b{re.escape(word)}\b", sentence)
    assert at is not None, "the sentence states the property"
    if group == "state" and sentence[:at.start()].endswith(", ") or \
            group == "continent" and any(re.search(rf"\b{c}\b", sentence) for c in COUNTRIES):
        raise NoSafeEdit(f"yes/no answer: the sentence also names a place inside the {group} (a city or country)")
    others = [w for w in PROPERTY_WORDS[group] if w != word and w not in spec.query and w not in sentence]
    new = rng_for(seed, spec.id).choice(others)
    return Plan(_evidence_at(gold, para, j), Edit(at.start(), word, new), "no", ("no",), None, f"yes/no ({group})",
                {"gold_mentions_left": 0})


def _vocabulary_edit(sentence: str, answer: str, wrong: str, kind: str, left: int) -> Edit:
    """The edit of a nationality or country stated once, as a whole word, not after a place it contains ('Lancashire,
    England'); an article before it follows the new word ('an Argentine' -> 'a Russian')."""
    at = re.search(rf"\b{re.escape(answer)}\b", sentence)
    if left or at is None:
        raise NoSafeEdit(f"the {kind} is stated elsewhere in the evidence or only inside a longer word")
    if re.search(r"[A-Z][\w.'-]*, $", sentence[:at.start()]):
        raise NoSafeEdit(f"the {kind} follows a place inside it (a city or region)")
    article = re.search(r"\b(an?) $", sentence[:at.start()])
    if article is None:
        return Edit(at.start(), answer, wrong)
    new = indefinite_article(wrong)
    return Edit(article.start(), sentence[article.start():at.end()], f"{new} {wrong}")


def indefinite_article(word: str) -> str:
    """'a' or 'an' before a word, an acronym read letter by letter ('an HBO', 'a CBS', 'an Argentine')."""
    if re.fullmatch(r"[A-Z&]{2,}", word):
        return "an" if word[0] in "AEFHILMNORSX" else "a"
    return "an" if word[0] in "AEIOU" else "a"


def _nationalities(para: Paragraph) -> list[str]:
    """The nationalities a paragraph states anywhere."""
    return [w for w in DEMONYMS if any(re.search(rf"\b{w}\b", x) for x in para.sentences)]


def _no_to_yes(spec: InstanceSpec, gold: list[Paragraph]) -> tuple[Paragraph, str, str] | None:
    """(paragraph to edit, its nationality, the nationality that makes the answer yes) of a 'no' decided by one
    entity's one nationality: 'same nationality / country' with each paragraph stating one, different; or 'both
    <nationality> ...' where one paragraph states it and the other states one other nationality."""
    stated = [_nationalities(p) for p in gold]
    if SAME_NATIONALITY.search(spec.query):
        if all(len(w) == 1 for w in stated) and stated[0] != stated[1]:
            return gold[1], stated[1][0], stated[0][0]
        return None
    asked = [w for w in DEMONYMS if re.search(rf"\bboth\b.*\b{w}\b", spec.query)]
    if len(asked) != 1:
        return None
    has = [asked[0] in w for w in stated]
    if sum(has) != 1 or len(stated[has.index(False)]) != 1:
        return None
    return gold[has.index(False)], stated[has.index(False)][0], asked[0]


def _states_the_rest(question: str, word: str, text: str) -> bool:
    """The question's words after the nationality ('American film directors') all stand in `text`."""
    tail = re.split(rf"\b{word}\b", question, maxsplit=1)[-1]
    return all(re.sub(r"s$", "", w) in text.lower() for w in re.findall(r"[a-z]+", tail.lower()))


def plan_no_nationality(spec: InstanceSpec, seed: int = 0) -> Plan:
    """'Are A and B both American film directors?' / 'of the same nationality?' answered no, where one entity's
    paragraph states one other nationality once: that word becomes the asked (or the other entity's) nationality, so
    the edited sentence makes the answer 'yes' (the designated wrong answer)."""
    gold = paragraphs(spec, "supporting")
    found = _no_to_yes(spec, gold) if len(gold) == 2 else None
    if found is None and (SAME_NATIONALITY.search(spec.query) or re.search(rf"\b(?:{'|'.join(DEMONYMS)})\b",
                                                                          spec.query)):
        raise NoSafeEdit("yes/no answer 'no': not one nationality stated per entity (or the asked one by neither)")
    if found is None and len(gold) == 2 and (plan := plan_no_count(spec, gold) or
                                             plan_yes_no_order(spec, gold, "no", seed)):
        return plan
    if found is None:
        raise NoSafeEdit("yes/no answer not decided by one occupation word in one sentence")
    para, word, new = found
    j = _said_once(para, word)
    if j is None:
        raise NoSafeEdit("yes/no answer 'no': the nationality is not stated once in the entity's paragraph")
    asked = next((w for w in DEMONYMS if re.search(rf"\bboth\b.*\b{w}\b", spec.query)), None)
    other = " ".join(next(p for p in gold if p is not para).sentences)
    if asked and not (_states_the_rest(spec.query, asked, para.sentences[j])
                      and _states_the_rest(spec.query, asked, other)):
        raise NoSafeEdit("yes/no answer 'no': the entities' sentences do not state every other property asked")
    edit = _vocabulary_edit(para.sentences[j], word, new, "nationality", 0)
    return Plan(_evidence_at(gold, para, j), edit, "yes", ("yes",), None, "yes/no (nationality, no to yes)",
                {"gold_mentions_left": 0})


COUNTED = re.compile(rf"\b({'|'.join(NUMBER_WORDS)}) ([a-z]+?)s?\b")
_QUESTION_WORDS = set(_WORDS["question_words"])


def _counts(para: Paragraph, noun: str) -> list[tuple[int, re.Match[str]]]:
    """(sentence, match) of every '<number word> <noun>(s)' a paragraph states ('two acts')."""
    return [(j, m) for j, x in enumerate(para.sentences) for m in COUNTED.finditer(x) if m.group(2) == noun]


def plan_no_count(spec: InstanceSpec, gold: list[Paragraph]) -> Plan | None:
    """'Are both A and B operas with three acts?' answered no, where one entity's paragraph states 'three acts' once
    and the other's states one other count of acts once, in a supporting sentence, and both paragraphs state the
    question's other words ('opera'): that count becomes the asked one, so the sentence makes the answer 'yes'."""
    asked = COUNTED.search(_without_names(spec.query, gold))
    if asked is None or not re.search(r"\bboth\b", spec.query, re.IGNORECASE):
        return None
    number, noun = asked.groups()
    counts = [_counts(para, noun) for para in gold]
    has = [any(m.group(1) == number for _, m in c) for c in counts]
    if sum(has) != 1 or any(len(c) != 1 for c in counts):
        raise NoSafeEdit("yes/no answer 'no': not one count stated per entity (or the asked one by neither)")
    rest = {re.sub(r"s$", "", w) for w in re.findall(r"[a-z]+", _without_names(spec.query, gold).lower())}
    rest -= _QUESTION_WORDS | {number, noun}
    if not all(w in " ".join(p.sentences).lower() for w in rest for p in gold):
        raise NoSafeEdit("yes/no answer 'no': the entities' sentences do not state every other property asked")
    para = gold[has.index(False)]
    j, m = counts[has.index(False)][0]
    if j not in para.supporting:
        raise NoSafeEdit("yes/no answer 'no': the count is not stated in a supporting sentence")
    return Plan(_evidence_at(gold, para, j), Edit(m.start(1), m.group(1), number), "yes", ("yes",), None,
                "yes/no (count, no to yes)", {"gold_mentions_left": 0})


ORDER_WORD = re.compile(r"\b(before|after)\b", re.IGNORECASE)


def plan_yes_no_order(spec: InstanceSpec, gold: list[Paragraph], answer: str, seed: int = 0) -> Plan | None:
    """'Was the film A released before the film B?' answered yes or no, decided by the first year in each entity's
    supporting sentences: A's year moves past B's (as in a comparison by year), so the edited sentence flips the
    answer (the designated wrong answer is the other of yes / no)."""
    asked = _without_names(spec.query, gold)
    order = ORDER_WORD.findall(asked)
    if len(order) != 1 or not TIME_CUES.search(asked) or DEATH_CUES.search(asked):
        return None
    at = [spec.query.find(title_base(p.title)) for p in gold]
    if -1 in at:
        raise NoSafeEdit("yes/no answer: an entity of the order question is not named by its title")
    first, second = sorted(gold, key=lambda p: at[gold.index(p)])
    s, m = _first_year(first)
    _, o = _first_year(second)
    mine, theirs = int(m.group(0)), int(o.group(0))
    if mine == theirs or ((mine < theirs) == (order[0].lower() == "before")) != (answer == "yes"):
        raise NoSafeEdit("yes/no answer: the entities' first years do not decide the gold answer")
    new = _moved_year(first.sentences[s], m, theirs, rng_for(seed, spec.id))
    wrong = "no" if answer == "yes" else "yes"
    return Plan(_evidence_at(gold, first, s), Edit(m.start(), m.group(0), str(new)), wrong, (wrong,), None,
                "yes/no (year order)", {"gold_mentions_left": 0})


def _usable(candidate: str, answer: str, question: str, evidence: str) -> bool:
    a, c = normalize(answer, "word"), normalize(candidate, "word")
    return bool(c) and not contains(a, c, "word") and not contains(c, a, "word") \
        and not contains(normalize(question, "word"), c, "word") and candidate not in evidence


def plan_open(spec: InstanceSpec, seed: int = 0) -> Plan:
    """The edit of a HotpotQA-style instance (gold paragraphs with supporting sentences, distractors as noise)."""
    assert spec.reference is not None, "a HotpotQA-style instance carries its reference answer"
    answer = spec.reference.answers[0].text.strip()
    if spec.reference.answer_type == "boolean" or answer.lower() in ("yes", "no"):
        return plan_yes_no(spec, answer.lower(), seed)
    if spec.attributes.question_type == "comparison":
        return plan_comparison(spec, answer, seed)
    if len(answer.split()) > MAX_ANSWER_WORDS:
        raise NoSafeEdit(f"long answer (more than {MAX_ANSWER_WORDS} words)")
    gold, noise = paragraphs(spec, "supporting"), paragraphs(spec, "noise")
    p, s = answer_sentence(gold, answer)
    sentences = [x for para in gold for x in para.sentences if x]
    flat = [(i, j) for i, para in enumerate(gold) for j, x in enumerate(para.sentences) if x]
    evidence = Evidence(tuple(sentences), flat.index((p, s)))
    sentence = gold[p].sentences[s]
    clean = evidence.text()
    rng = rng_for(seed, spec.id)
    texts = {d.title: d.text for d in spec.documents}
    noise_text = "\n".join(texts[para.title] for para in noise)
    shape = numeric_shape(answer)
    kind: str | None
    options: list[tuple[str, ...]]
    if shape:
        kind, pattern, m = shape
        core = m.group(0)
        found = sorted({c for c in re.findall(pattern, noise_text)
                        if c != core and (kind != "number" or same_format(core, c))}) or nearby_figures(kind, core, answer)
        options = _figure_options(answer, m, found, spec.query, clean) \
            or _figure_options(answer, m, figure_fallbacks(kind, core, answer), spec.query, clean)
    else:
        if not answer[:1].isupper():
            return plan_kind_word(spec, answer, evidence, seed)
        if LIST_RE.search(answer) and not any(title_base(x.title) == answer for x in gold + noise):
            return plan_list_answer(spec, answer, noise_text, evidence, seed)
        kind = answer_kind(answer, spec.query, gold + noise, texts, sentence)
        titled = sorted({title_base(x.title) for x in noise if describe(texts[x.title]) == kind
                         and not LIST_TITLE.search(x.title)}) if kind else []
        options = [(t,) for t in titled if _usable(t, answer, spec.query, clean)]
        if not options and (word_kind := vocabulary_kind(answer)):
            kind, options = word_kind, vocabulary_options(word_kind, answer, spec.query, clean, noise_text)
        elif not options and kind:
            if re.match(rf"{re.escape(answer)}\s*\(", sentence[sentence.find(answer):]) and LIFE_DATES.search(sentence):
                kind = "person"  # 'James Lapine (born 1949) is ...' answers 'What Tony Award winner ...?'
            options = [(t,) for t in more_names(kind, noise, texts) if _usable(t, answer, spec.query, clean)]
        if not options and kind in ("work", None) and (works := quoted_works(spec.query, noise_text)):
            kind, options = "work", [(t,) for t in works if _usable(t, answer, spec.query, clean)]
        if not options and kind == "person":
            options = [(t,) for t in person_fallback(answer, spec.query, sentence, noise, texts)
                       if _usable(t, answer, spec.query, clean)]
        if not options and (shared := shared_head_names(answer, noise_text)):
            kind, options = shared[0], [(t,) for t in shared[1] if _usable(t, answer, spec.query, clean)]
        if not options and (periodicals := periodical_names(answer, sentence, noise_text)):
            kind, options = "periodical", [(t,) for t in periodicals if _usable(t, answer, spec.query, clean)]
        if not options and FIRST_NAME_QUESTION.search(spec.query) and re.fullmatch(r"[A-Z][a-z]+", answer):
            names = first_names(spec.query, texts[gold[p].title], noise, texts)
            kind, options = "first name", [(t,) for t in names if _usable(t, answer, spec.query, clean)]
        if kind is None:
            raise NoSafeEdit("the answer's entity type cannot be told offline")
    if not options:
        raise NoSafeEdit(f"no same-type entity in the distractor paragraphs ({kind})")
    forms = rng.choice(options)
    edit = Edit(sentence.index(answer), answer, forms[0])
    left = sum(x.count(answer) for x in sentences) - 1
    if left > 0:  # one edit cannot leave the gold unsaid: the item goes to the generative path, or is skipped
        raise NoSafeEdit(f"the gold answer is stated elsewhere in the evidence ({left} more mentions)")
    if kind in VOCABULARY:
        edit = _vocabulary_edit(sentence, answer, forms[0], kind, left)
    return Plan(evidence, edit, forms[0], tuple(dict.fromkeys(forms)), None, kind, {"gold_mentions_left": left})


# --------------------------------------------------------------------------- place-in-region and closed-kind words

REGIONS: frozenset[str] = frozenset(US_STATES) | frozenset(COUNTRIES)
PLACE_PART = r"[A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,3}"
NOT_A_PLACE = re.compile(rf"^(?:{_any('not_place_openers')})\b")


def region_parts(name: str) -> list[str] | None:
    """The parts of a 'City, Region' name ('Warsaw, Poland', 'Lee County, Mississippi', 'Midland, Michigan, United
    States'): a capitalised place not itself a region, then one or two US states or countries; None otherwise."""
    parts = name.split(", ")
    if not 2 <= len(parts) <= 3 or any(not re.fullmatch(PLACE_PART, p) for p in parts):
        return None
    if parts[0] in REGIONS or NOT_A_PLACE.match(parts[0]) or name_shape(parts[0]) not in (None, "place"):
        return None
    return parts if all(p in REGIONS for p in parts[1:]) else None


def _region_shape(parts: list[str]) -> tuple[bool, tuple[bool, ...]]:
    """(a county?, each region part a US state?): two 'City, Region' names of one shape are places of one kind."""
    return parts[0].endswith(" County"), tuple(p in US_STATES for p in parts[1:])


REGION_ALTERNATION = "|".join(sorted(map(re.escape, REGIONS), key=len, reverse=True))
REGION_NAME = re.compile(rf"(?<=[a-z] )([A-Z][\w'-]*(?: [A-Z][\w'-]*){{0,3}})((?:, (?:{REGION_ALTERNATION})\b){{1,2}})")


def region_places(parts: list[str], noise_text: str, keep: Callable[[str], bool]) -> list[str]:
    """'City, Region' names the distractors' text states after a lower-case word, with as many region parts as the
    answer and passing `keep`: those of its shape first (same region, then a state for a state and a country for a
    country), else for a city any city in a region (a county only ever stands for a county)."""
    found = set()
    for m in REGION_NAME.finditer(noise_text):
        name = ", ".join([m.group(1), *m.group(2).split(", ")[1:len(parts)]])
        if (other := region_parts(name)) and len(other) == len(parts) and keep(name):
            found.add(name)
    county, regions = _region_shape(parts)
    tiers = [[f for f in found if f.split(", ")[1:] == parts[1:]],
             [f for f in found if _region_shape(f.split(", ")) == (county, regions)],
             [f for f in found if not county and not _region_shape(f.split(", "))[0]]]
    return next((sorted(tier) for tier in tiers if tier), [])


def plan_place_in_region(spec: InstanceSpec, answer: str, noise_text: str, evidence: Evidence, seed: int) -> Plan:
    """A 'City, Region' answer ('Boston, Massachusetts') stated once, its place named nowhere else in the evidence:
    it becomes another 'City, Region' name the distractors state (for 'Midland, Michigan, United States' with no
    three-part name found, its 'Midland, Michigan' only); the wrong answer is the edited span."""
    parts = region_parts(answer)
    if parts is None:
        raise NoSafeEdit("list answer (several entities)")
    clean = evidence.text()
    if len(re.findall(rf"\b{re.escape(parts[0])}\b", clean)) != 1:
        raise NoSafeEdit("the place of a 'City, Region' answer is named elsewhere in the evidence")
    keep = lambda name: _usable(name, answer, spec.query, clean) and \
        _usable(name.split(", ")[0], parts[0], spec.query, clean)  # noqa: E731
    span, options = answer, region_places(parts, noise_text, keep)
    if not options and len(parts) == 3:
        span, options = ", ".join(parts[:2]), region_places(parts[:2], noise_text, keep)
    if not options:
        raise NoSafeEdit("no same-type entity in the distractor paragraphs (place in a region)")
    new = rng_for(seed, spec.id).choice(options)
    wrong = new + answer[len(span):]
    sentence = evidence.sentences[evidence.answer]
    return Plan(evidence, Edit(sentence.index(answer), answer, wrong), wrong, (wrong,), None, "place in a region",
                {"gold_mentions_left": 0})


def plan_list_answer(spec: InstanceSpec, answer: str, noise_text: str, evidence: Evidence, seed: int) -> Plan:
    """An answer with commas or 'and': a 'City, Region' place, else a list of countries, else no safe edit."""
    if region_parts(answer):
        return plan_place_in_region(spec, answer, noise_text, evidence, seed)
    return plan_country_list(spec, answer, noise_text, evidence, seed)


def plan_country_list(spec: InstanceSpec, answer: str, noise_text: str, evidence: Evidence, seed: int) -> Plan:
    """A list of countries ('Spain, Mexico and France'), the question not asking what two things share: its last
    country, stated once in the evidence, becomes another country (one the distractors name, else any) that neither
    the question nor the evidence names; the wrong answer is the edited list."""
    countries = re.split(r", (?:and )?| and ", answer)
    if len(countries) < 2 or any(c not in COUNTRIES for c in countries) or IN_COMMON.search(spec.query):
        return plan_name_list(spec, answer, evidence, seed)
    clean, last = evidence.text(), countries[-1]
    if len(re.findall(rf"\b{re.escape(last)}\b", clean)) != 1:
        raise NoSafeEdit("the country is stated elsewhere in the evidence or only inside a longer word")
    new = rng_for(seed, spec.id).choice(vocabulary_options("country", last, spec.query, clean, noise_text))[0]
    wrong = answer[:len(answer) - len(last)] + new
    sentence = evidence.sentences[evidence.answer]
    return Plan(evidence, Edit(sentence.index(answer), answer, wrong), wrong, (wrong, new), None, "list of countries",
                {"gold_mentions_left": 0})


BATTLE = r"Battle of [A-Z][a-z]+(?: [A-Z][a-z]+)?"


def _list_options(names: list[str], spec: InstanceSpec) -> tuple[str, list[str]] | None:
    """(kind, names) that may replace the last of a list of people (distractor paragraphs about a person, who is
    referred to as he or she, titled by a plain full name) or of
    battles ('the Battle of Malta': 'Battle of ...' names in the distractors' text); None for other lists."""
    texts = {d.title: d.text for d in spec.documents}
    noise = paragraphs(spec, "noise")
    if all(re.fullmatch(FULL_NAME, n) for n in names):
        return "list of people", sorted(t for x in noise if describe(texts[x.title]) == "person"
                                        and _pronoun(texts[x.title]) and re.fullmatch(FULL_NAME, t := title_base(x.title))
                                        and name_shape(t) is None and not NOT_A_PERSONAL_NAME.search(t))
    if all(re.fullmatch(rf"(?:the )?{BATTLE}", n) for n in names):
        found = re.findall(rf"\b{BATTLE}\b(?! [A-Z0-9])", "\n".join(texts[x.title] for x in noise))
        return "list of battles", sorted(set(found))
    return None


def plan_name_list(spec: InstanceSpec, answer: str, evidence: Evidence, seed: int) -> Plan:
    """A list of people ('Robert Smigel, Michael Koman and David Feldman') or battles, the question not asking what
    two things share, stated once in its sentence: its last name, stated once in the evidence, becomes a name of the
    same kind from the distractors that neither the question nor the evidence names; the wrong answer is the edited
    list."""
    names = re.split(r", (?:and )?| and ", answer)
    found = _list_options(names, spec) if len(names) >= 2 and not IN_COMMON.search(spec.query) else None
    if found is None:
        raise NoSafeEdit("list answer (several entities)")
    kind, candidates = found
    clean, last = evidence.text(), names[-1].removeprefix("the ")
    if len(re.findall(rf"\b{re.escape(last)}\b", clean)) != 1 or \
            len(re.findall(rf"\b{re.escape(last.split()[-1])}\b", clean)) != 1:
        raise NoSafeEdit(f"the last name of the {kind} is stated elsewhere in the evidence")
    options = [n for n in candidates if _usable(n, answer, spec.query, clean)]
    if not options:
        raise NoSafeEdit(f"no same-type entity in the distractor paragraphs ({kind})")
    new = rng_for(seed, spec.id).choice(options)
    wrong = answer[:len(answer) - len(last)] + new
    sentence = evidence.sentences[evidence.answer]
    return Plan(evidence, Edit(sentence.index(answer), answer, wrong), wrong, (wrong, new), None, kind,
                {"gold_mentions_left": 0})


KIND_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = tuple((kind, tuple(words)) for kind, words in _WORDS["kind_words"])
KIND_SUFFIXES: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in _WORDS["kind_suffixes"].items()}
IN_COMMON = re.compile(rf"\b(?:{_any('in_common')})\b", re.IGNORECASE)


def kind_word(answer: str) -> tuple[str, str, str, str] | None:
    """(kind, article, word, suffix) of a lower-case answer from a closed kind: 'uncle', 'a priest', 'romance
    genre', 'dream pop influence', or a number word before lower-case words ('ten years of probation')."""
    article = m.group(0) if (m := re.match(r"an? ", answer)) else ""
    rest = answer[len(article):]
    for kind, words in KIND_WORDS:
        for word in (w for w in words if rest.startswith(w)):
            suffix = rest[len(word):]
            if not suffix or suffix in KIND_SUFFIXES.get(kind, ()) or \
                    kind == "count" and not article and re.fullmatch(r"(?: [a-z]+)+", suffix):
                return kind, article, word, suffix
    return None


def _whole_word(word: str) -> str:
    return rf"(?<![\w-]){re.escape(word)}(?![\w-])"


def _with_article(word: str) -> str:
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"


def plan_kind_word(spec: InstanceSpec, answer: str, evidence: Evidence, seed: int) -> Plan:
    """A lower-case answer of a closed kind (see KIND_WORDS) stated once as a whole word in the evidence, the
    question not asking what two things have in common: the word becomes another of its kind that neither the
    question nor the evidence names, nor contains it or is contained in it (article a / an follows)."""
    found = kind_word(answer)
    if found is None or IN_COMMON.search(spec.query):
        return plan_lead_in(spec, answer, evidence, seed)
    kind, article, word, suffix = found
    clean, sentence = evidence.text(), evidence.sentences[evidence.answer]
    at = re.search(_whole_word(answer), sentence)
    if at is None or len(re.findall(_whole_word(word), clean)) != 1:
        raise NoSafeEdit(f"the {kind} is stated elsewhere in the evidence or only inside a longer word")
    words = next(w for k, w in KIND_WORDS if k == kind)
    others = [w for w in words if word not in w and w not in word and not re.search(_whole_word(w), clean, re.IGNORECASE)
              and not re.search(_whole_word(w), spec.query, re.IGNORECASE)]
    new = rng_for(seed, spec.id).choice(others)
    wrong = (_with_article(new) if article else new) + suffix
    before = re.search(r"\b(an?) $", sentence[:at.start()]) if not article else None
    edit = Edit(at.start(), answer, wrong) if before is None else \
        Edit(before.start(), sentence[before.start():at.end()], _with_article(new) + suffix)
    return Plan(evidence, edit, wrong, tuple(dict.fromkeys((wrong, new + suffix, new))), None, kind,
                {"gold_mentions_left": 0})


# --------------------------------------------------------------------------- answers with a lead-in

LEAD_IN = re.compile(r"(?P<lead>(?:aired on|located in|on|in|the) |)(?P<core>\w[^,;:()]*?)(?P<tail>\.?)")
LEAD_IN_WORDS: dict[str, tuple[str, ...]] = {
    "US broadcast network": BROADCAST_NETWORKS, **{kind: tuple(words) for kind, words in _WORDS["lead_in_words"].items()}}


def _closed_core(core: str) -> tuple[str, str, tuple[str, ...]] | None:
    """(kind, word, words) when the core of a lead-in answer is, or opens with, a word of a closed list, or names
    one US state before a capitalised word ('2002 Rhode Island Children's Book Award')."""
    found = next(((kind, w, words) for kind, words in LEAD_IN_WORDS.items() for w in words
                  if core == w or core.startswith(w + " ")), None)
    states = [w for w in US_STATES if re.search(_whole_word(w) + " [A-Z]", core)]
    return found or (("US state in a name", states[0], US_STATES) if len(states) == 1 else None)


def plan_lead_in(spec: InstanceSpec, answer: str, evidence: Evidence, seed: int) -> Plan:
    """A lower-case answer that is a lead-in ('aired on', 'located in', 'on', 'in', 'the') before a capitalised
    core: a core opening with a closed-list word (US broadcast network, digital store, Russian republic) has that
    word replaced by another of its list that neither the question nor the evidence names; the wrong answer is the
    answer with the word replaced."""
    m = LEAD_IN.fullmatch(answer)
    closed = _closed_core(m.group("core")) if m else None
    if m is not None and closed is None and COUNTY.fullmatch(m.group("core")):
        return plan_lead_in_county(spec, answer, m, evidence, seed)
    if m is None or closed is None:
        raise NoSafeEdit("not a named entity, date or number")
    kind, word, words = closed
    clean, sentence = evidence.text(), evidence.sentences[evidence.answer]
    if len(re.findall(_whole_word(word), clean)) != 1:
        raise NoSafeEdit(f"the {kind} is stated elsewhere in the evidence or only inside a longer word")
    others = [w for w in words if word not in w and w not in word and w not in clean
              and w.lower() not in spec.query.lower()]
    new = rng_for(seed, spec.id).choice(others)
    at = len(m.group("lead")) + m.group("core").index(word)
    wrong = answer[:at] + new + answer[at + len(word):]
    forms = (wrong, wrong.rstrip(".")) if at > len(m.group("lead")) else (wrong, m.group("lead") + new, new)
    return Plan(evidence, Edit(sentence.index(answer), answer, wrong), wrong, tuple(dict.fromkeys(forms)),
                None, kind, {"gold_mentions_left": 0})

COUNTY = re.compile(r"(?<![\w-])(?!(?:The|In|Of|And|A|An) )[A-Z][a-z]+(?: [A-Z][a-z]+)? County(?![\w-])")


def plan_lead_in_county(spec: InstanceSpec, answer: str, m: re.Match[str], evidence: Evidence, seed: int) -> Plan:
    """'located in Hillsborough County': the county, stated once in the evidence, becomes a county the distractors'
    text names, named neither in the question nor in the evidence; the wrong answer keeps the lead-in."""
    clean, sentence = evidence.text(), evidence.sentences[evidence.answer]
    core = m.group("core")
    if clean.count(core) != 1:
        raise NoSafeEdit("the county is stated elsewhere in the evidence or only inside a longer word")
    noise_text = "\n".join(d.text for d in spec.documents if d.role == "noise")
    others = sorted({c for c in COUNTY.findall(noise_text) if _usable(c, core, spec.query, clean)})
    if not others:
        raise NoSafeEdit("no same-type entity in the distractor paragraphs (county)")
    new = rng_for(seed, spec.id).choice(others)
    wrong = m.group("lead") + new + m.group("tail")
    return Plan(evidence, Edit(sentence.index(answer), answer, wrong), wrong, (wrong, new), None, "county",
                {"gold_mentions_left": 0})

# --------------------------------------------------------------------------- MCQ (MedQA)

NOTE_LANGUAGES = ("en", "zh")  # data/wordlists/review_note.<language>.json
META_OPTIONS = re.compile("(?i)" + "|".join(wordlists("review_note", lang)["meta_options"] for lang in NOTE_LANGUAGES))


def split_sentences(text: str, language: str) -> list[str]:
    """Sentences of a vignette: after 。！？； for Chinese, after . ? ! before a capital or digit otherwise."""
    pattern = r"(?<=[。！？；])" if language == "zh" else r"(?<=[.?!])\s+(?=[A-Z0-9])"
    return [s.strip() for s in re.split(pattern, text) if s.strip()]


def plan_mcq(spec: InstanceSpec, seed: int = 0) -> Plan:
    """The edit of an MCQ instance: the review note's assertion names a wrong option's text instead of the key's."""
    ref = spec.reference
    assert ref is not None and ref.answer_key is not None, "an MCQ instance carries its choices and key"
    language = "zh" if (spec.language or "").startswith("zh") or cjk_language(spec.query) == "zh" else "en"
    kind = scheme_for(language, ref).kind or "word"
    key_text = ref.choices[ref.answer_key].strip()
    key_norm = normalize(key_text, kind)
    if not key_norm or META_OPTIONS.search(key_text):
        raise NoSafeEdit("the key option has no text of its own")
    options = []
    for letter, text in sorted(ref.choices.items()):
        norm = normalize(text, kind)
        if letter == ref.answer_key or not norm or META_OPTIONS.search(text):
            continue
        if contains(norm, key_norm, kind) or contains(key_norm, norm, kind):
            continue
        if any(contains(normalize(t, kind), norm, kind) for k, t in ref.choices.items() if k != letter):
            continue
        options.append(letter)
    if not options:
        raise NoSafeEdit("no wrong option whose text is distinct from the key's and the other options'")
    wrong_key = rng_for(seed, spec.id).choice(options)
    wrong = ref.choices[wrong_key].strip()
    lines = wordlists("review_note", language)
    findings = split_sentences(spec.query, language)[:-1]
    assertion = lines["assertion"].format(answer=key_text)
    sentences = (lines["opening"], *findings, lines["method"], assertion)
    evidence = Evidence(sentences, len(sentences) - 1, "" if language == "zh" else " ")
    edit = Edit(assertion.index(key_text), key_text, wrong)
    return Plan(evidence, edit, wrong, (wrong,), wrong_key, "option", {})


# --------------------------------------------------------------------------- optional LLM edit

LLM_EDIT_PROMPT = """You edit one sentence of an evidence passage for a robustness test.
Rewrite the sentence so that it asserts "{wrong}" where it now asserts "{gold}". Change as few words as possible,
keep the rest of the sentence word for word, and keep its language. The rewritten sentence must contain "{wrong}"
exactly and must not contain "{gold}".

Sentence: {sentence}

Reply with JSON only: {{"sentence": "<the rewritten sentence>"}}"""


def llm_edit(plan: Plan, complete_json: CompleteJson, method: str) -> tuple[Plan, str | None]:
    """The plan with its edit re-worded by an LLM, or the rule edit and why the LLM's was rejected. The rewrite must
    stay one sentence, contain the wrong answer and not the gold one; its edit is the one span where it differs."""
    from core.generation.runner import BudgetReached

    sentence = plan.evidence.sentences[plan.evidence.answer]
    try:
        reply = complete_json(LLM_EDIT_PROMPT.format(wrong=plan.wrong_answer, gold=plan.edit.before,
                                                     sentence=sentence))
    except BudgetReached:
        raise  # the build stops: a call past its budget is not sent
    except Exception as exc:  # noqa: BLE001 - a failed call keeps the rule edit, with the reason
        return plan, f"call failed: {type(exc).__name__}: {str(exc)[:120]}"
    new = str((reply or {}).get("sentence", "")).strip()
    if not new or "\n" in new:
        return plan, "no single rewritten sentence in the reply"
    if plan.wrong_answer not in new or plan.edit.before in new:
        return plan, "the rewrite does not swap the gold answer for the wrong one"
    start, end, new_end = one_span_diff(sentence, new)
    at = new.find(plan.wrong_answer)
    start, new_end = min(start, at), max(new_end, at + len(plan.wrong_answer))
    end = len(sentence) - (len(new) - new_end)
    if not (0 <= start <= end <= len(sentence)) or sentence[:start] + new[start:new_end] + sentence[end:] != new:
        return plan, "the rewrite's change is not one span"
    return replace(plan, edit=Edit(start, sentence[start:end], new[start:new_end], method)), None


# --------------------------------------------------------------------------- instances


def evidence_document(iid: str, name: str, text: str, role: str, variant: dict[str, Any]) -> DocumentSpec:
    """One evidence document of a RAG-Stress instance."""
    return DocumentSpec(doc_id=f"{iid}#evidence-{name}", title="", text=text, role=role, variant=variant)


def edit_record(evidence: Evidence, edit: Edit, span: str, position: str | None = None) -> dict[str, Any]:
    """Where the edit sits in `evidence.text(position)`: the span (`start`, `end`, holding `span`), the sentence it is
    in (`sentence_start`, `sentence_end`), and the text before and after the edit."""
    sentence = evidence.sentence_start(position)
    start = sentence + edit.offset
    length = len(evidence.sentences[evidence.answer])
    return {"start": start, "end": start + len(span), "sentence_start": sentence, "sentence_end": sentence + length,
            "before": edit.before, "after": edit.after}


def stress_instance(spec: InstanceSpec, plan: Plan, seed: int = 0) -> InstanceSpec:
    """The RAG-Stress instance of a reference instance: same question and reference (plus the designated wrong
    answer), clean evidence and misleading evidence at each position, each recording the edit's span."""
    iid = f"{NAME}/{spec.id}"
    clean, misleading = plan.evidence, plan.misleading
    documents = [evidence_document(iid, CLEAN, clean.text(), "supporting", {
        EVIDENCE_KEY: CLEAN, "edit": edit_record(clean, plan.edit, plan.edit.before)})]
    documents += [evidence_document(iid, f"misleading-{position}", misleading.text(position), "counterfactual", {
        EVIDENCE_KEY: "misleading", "position": position, "answer": plan.wrong_answer,
        "edit": edit_record(misleading, plan.edit, plan.edit.after, position)}) for position in POSITIONS]
    assert spec.reference is not None, "a stress instance keeps its source's reference"
    reference = spec.reference.model_copy(update={"wrong_answers": list(plan.wrong_forms)})
    meta = {"source_id": spec.id, "source_format": spec.metadata.get("format", ""), "seed": seed,
            "wrong_answer": plan.wrong_answer, "wrong_key": plan.wrong_key, "entity_type": plan.entity_type,
            "method": plan.edit.method, "answer_sentence": plan.evidence.answer,
            "sentences": len(plan.evidence.sentences), **plan.notes}
    return InstanceSpec(id=iid, domain=f"RAG-Stress {spec.domain}", query=spec.query, protocol=NAME,
                        language=spec.language, documents=documents, reference=reference,
                        attributes=spec.attributes, metadata={"rag_stress": meta})
