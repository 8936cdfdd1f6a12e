"""Misleading evidence for open-domain QA over ranked passages (TriviaQA-RC evidence pages, SearchQA search snippets).

- **Evidence.** The first sentence, in the passages' published order, that states the answer (the answer or one of its
  aliases, once, as a whole phrase) with the other sentences of its paragraph that do not mention the answer, at most
  `WINDOW` on each side.
- **The edit.** The answer span in that sentence is replaced by an entity of the same type found in the other passages
  of the item: a figure of the same shape (`numeric_shape`, `same_format`), or a name of the same kind (person, place,
  organisation, work, event: the question's wording, the answer's head words or the words before it in its sentence,
  as for HotpotQA) that the other passages introduce as that kind (its head words, the words before it, or a Wikipedia
  entity page about it). Candidates pass the HotpotQA checks (`_usable`: not the answer, not in the question, not
  already in the evidence).
- **No safe edit** is said with the reason ("no evidence sentence states the answer", ...), never dropped.
"""

from __future__ import annotations

import re

from core.language import wordlists
from core.protocols.misleading_evidence.builder import (
    CONTEXT_CUES,
    MAX_ANSWER_WORDS,
    NAME_HEADS,
    Edit,
    Evidence,
    NoSafeEdit,
    Plan,
    _earliest_kind,
    _usable,
    answer_kind,
    describe,
    numeric_shape,
    rng_for,
    same_format,
    split_sentences,
    title_base,
)
from core.store.schema import InstanceSpec

FORMATS = ("triviaqa", "searchqa")
WINDOW = 3  # sentences kept on each side of the answer sentence
_WORDS = wordlists("misleading_evidence")  # data/wordlists/misleading_evidence.en.json
FUNCTION_WORD = f"(?!(?:{'|'.join(_WORDS['function_words'])})\\b)"
_PARTICLES = "|".join(rf"{w}\s+" for w in _WORDS["name_particles"])
NAME = re.compile(rf"(?<![\w'’-]){FUNCTION_WORD}[A-Z][a-z][\w'’-]*"
                  rf"(?:\s+(?:{_PARTICLES})?{FUNCTION_WORD}[A-Z][a-z][\w'’-]*){{0,3}}")
CLUE_PERSON = re.compile(rf"\b(?:{'|'.join(_WORDS['clue_person_nouns'])})s?\b", re.IGNORECASE)
PERSON_AFTER = re.compile(r"\s*\((?:born\b|b\.|\d{3,4}\s*[–-])")


def paragraphs(text: str) -> list[list[str]]:
    """A passage's paragraphs (its non-empty lines) as sentences, whitespace collapsed."""
    return [s for line in text.splitlines() if (s := split_sentences(" ".join(line.split()), "en"))]


def mentions(text: str, form: str) -> list[re.Match[str]]:
    """Where `form` stands in `text` as a whole phrase (case as written), not inside a longer name ('York' in 'York
    Mystery Plays')."""
    return [m for m in re.finditer(rf"(?<![\w]){re.escape(form)}(?![\w])", text)
            if not re.match(r"\s+[A-Z]", text[m.end():]) and not re.search(r"[A-Z][\w'’-]*\s+$", text[:m.start()])]


def _mentions_any(text: str, forms: list[str]) -> bool:
    lowered = text.lower()
    return any(re.search(rf"(?<![\w]){re.escape(f.lower())}(?![\w])", lowered) for f in forms)


def answer_forms(spec: InstanceSpec) -> list[str]:
    """The answer and its aliases that can be edited (at most MAX_ANSWER_WORDS words): the gold text first when it
    can, then the aliases longest first."""
    assert spec.reference is not None, "an open QA instance carries its reference"
    gold = spec.reference.answers[0]
    forms = [f.strip() for f in dict.fromkeys([gold.text, *gold.aliases]) if f.strip()[:1].isalnum()]
    short = [f for f in forms if len(f.split()) <= MAX_ANSWER_WORDS]
    return short[:1] + sorted(short[1:], key=lambda f: (-len(f), f)) if short[:1] == forms[:1] else \
        sorted(short, key=lambda f: (-len(f), f))


def locate(spec: InstanceSpec, forms: list[str]) -> tuple[int, int, int, str]:
    """(passage, paragraph, sentence, form): among the sentences stating the answer exactly once, the one sharing the
    most words with the question, the first in published order on ties."""
    asked = content_words(spec.query)
    found = []
    for d, doc in enumerate(spec.documents):
        for p, para in enumerate(paragraphs(doc.text)):
            for s, sentence in enumerate(para):
                hits = [(f, m) for f in forms for m in mentions(sentence, f)]
                if _one_span({(m.start(), m.end()) for _, m in hits}):
                    found.append((-len(asked & content_words(sentence)), d, p, s, _form(hits, forms)))
    if not found:
        raise NoSafeEdit("no evidence sentence states the answer")
    _, d, p, s, form = min(found)
    return d, p, s, form


def _form(hits: list[tuple[str, re.Match[str]]], forms: list[str]) -> str:
    """The form edited: the gold answer as written when it is among the hits, else the longest form found."""
    found = [f for f, _ in hits]
    return forms[0] if forms[0] in found else max(found, key=len)


def content_words(text: str) -> set[str]:
    """The lower-cased words of four letters or more."""
    return {w.lower() for w in re.findall(r"[A-Za-z]{4,}", text)}


def _one_span(spans: set[tuple[int, int]]) -> bool:
    """Several forms found, all nested inside the longest one (e.g. 'Lou Gehrig' and 'Gehrig')."""
    if not spans:
        return False
    a, b = max(spans, key=lambda s: s[1] - s[0])
    return all(a <= x and y <= b for x, y in spans)


def window(para: list[str], s: int, forms: list[str]) -> Evidence:
    """The answer sentence with up to WINDOW sentences each side that do not mention the answer."""
    before = [x for x in para[max(0, s - WINDOW):s] if not _mentions_any(x, forms)]
    after = [x for x in para[s + 1:s + 1 + WINDOW] if not _mentions_any(x, forms)]
    return Evidence((*before, para[s], *after), len(before))


def _kind_at(text: str, m: re.Match[str]) -> str | None:
    """The kind a name's own text tells: its last word a head word ('Preston County'), the words before it, or life
    dates after it."""
    words = m.group(0).split()
    if len(words) > 1 and (kind := next((k for k, heads in NAME_HEADS.items() if words[-1] in heads), None)):
        return kind
    before = text[max(0, m.start() - 60):m.start()]
    if kind := next((k for k, cue in CONTEXT_CUES.items() if re.search(cue, before, re.IGNORECASE)), None):
        return kind
    return "person" if PERSON_AFTER.match(text, m.end()) else None


def clue_kind(question: str, categories: list[str]) -> str | None:
    """The kind a Jeopardy!-style clue asks for: 'he' / 'she' / 'this star' -> person, else the first cue noun after
    'this' / 'these' ('this state' -> place) or of 'the <noun> on which / that / ...' ('the island on which' -> place),
    else the first cue noun of its category ('ALL-TIME ATHLETES' -> person)."""
    if re.search(r"\b(?:he|she|him|his|her)\b|\bthis (?:man|woman|person|lady|guy)\b", question, re.IGNORECASE):
        return "person"
    phrases = [m.group(1) for m in re.finditer(r"\b(?:this|these)\s+((?:\S+\s+){0,2}\S+)", question, re.IGNORECASE)]
    phrases += re.findall(r"\bthe\s+(\w+)\s+(?:on|in|at|where|which|that|who|whose)\b", question, re.IGNORECASE)
    for phrase in phrases:
        if kind := "person" if CLUE_PERSON.search(phrase) else _earliest_kind(phrase):
            return kind
    return next((kind for category in categories if (kind := _earliest_kind(category))), None)


def entity_kind(spec: InstanceSpec, answer: str, sentence: str) -> str | None:
    """The answer's kind: from a Jeopardy! clue's own wording first for SearchQA (its 'which' is rarely a question
    word), from the question's wording, the answer's head words or its sentence first otherwise."""
    clue = clue_kind(spec.query, spec.attributes.categories)
    if spec.metadata.get("format") == "searchqa" and clue:
        return clue
    return answer_kind(answer, spec.query, [], {}, sentence) or clue


def named_entities(spec: InstanceSpec, keep: int) -> dict[str, set[str]]:
    """Names of each kind in the item's passages other than passage `keep`'s evidence: Wikipedia page titles typed
    by their first sentence, and names typed by their own words or context."""
    found: dict[str, set[str]] = {}
    for d, doc in enumerate(spec.documents):
        if doc.variant.get("evidence_source") == "wikipedia" and (kind := describe(doc.text)):
            found.setdefault(kind, set()).add(title_base(doc.title))
        text = " ".join(doc.text.split())
        for m in NAME.finditer(text):
            if d != keep and (kind := _kind_at(text, m)):
                found.setdefault(kind, set()).add(m.group(0))
    return found


def figures(spec: InstanceSpec, keep: int, pattern: str) -> set[str]:
    """Figures matching `pattern` in the passages other than passage `keep`."""
    return {c for d, doc in enumerate(spec.documents) if d != keep for c in re.findall(pattern, doc.text)}


def _options(spec: InstanceSpec, keep: int, form: str, sentence: str) -> tuple[str, list[tuple[str, ...]]]:
    """(kind, candidate wrong forms) for the answer `form`: figures of its shape, else names of its kind, from the
    passages other than passage `keep`."""
    if shape := numeric_shape(form):
        kind, pattern, m = shape
        figure = m.group(0)
        alike = sorted(c for c in figures(spec, keep, pattern)
                       if c != figure and (kind != "number" or same_format(figure, c)))
        return kind, [(form[:m.start()] + c + form[m.end():], c) for c in alike]
    if not form[:1].isupper():
        raise NoSafeEdit("not a named entity, date or number")
    if (named := entity_kind(spec, form, sentence)) is None:
        raise NoSafeEdit("the answer's entity type cannot be told offline")
    return named, [(n,) for n in sorted(named_entities(spec, keep).get(named, set()))]


def plan_passages(spec: InstanceSpec, seed: int = 0) -> Plan:
    """The edit of a ranked-passage item (TriviaQA-RC, SearchQA); NoSafeEdit says why there is none."""
    forms = answer_forms(spec)
    if not forms:
        raise NoSafeEdit(f"long answer (more than {MAX_ANSWER_WORDS} words)")
    d, p, s, form = locate(spec, forms)
    para = paragraphs(spec.documents[d].text)[p]
    evidence = window(para, s, forms)
    sentence = para[s]
    clean = evidence.text()
    kind, options = _options(spec, d, form, sentence)
    options = [o for o in options if all(_usable(f, a, spec.query, clean) for f in o for a in forms)]
    if not options:
        raise NoSafeEdit(f"no same-type entity in the other passages ({kind})")
    choice = rng_for(seed, spec.id).choice(options)
    edit = Edit(mentions(sentence, form)[0].start(), form, choice[0])
    return Plan(evidence, edit, choice[0], tuple(dict.fromkeys(choice)), None, kind,
                {"passage": d, "passage_rank": spec.documents[d].variant.get("rank", d), "gold_mentions_left": 0})
