"""RAGStress construction: MMLU items -> reference entries (one clean and 4 corruption types x 3 severities each) ->
one knowledge base, indexed once (BM25 + dense), searched per question under the 15 condition filters -> instances.

Offline and deterministic for a seed. The optional LLM mode rewrites every corrupted entry through the provider layer
from the same plan (which wrong option, which number and how far, which off-topic item, which tone); each document
records the prompt and model, and a reply that fails validation is retried once, then replaced by the offline entry
(recorded). Severity, per type:
- factual: the entry marks a wrong option; subtle = the most plausible distractor (closest to the correct option
  by character trigrams, words and, for numbers, value), moderate = the second, obvious = the least plausible;
- numeric: the first number of the correct option altered by one unit in its last place / 20-50% / x10; when the
  correct option holds no number, the first number of the question, else of another option, is altered (the typo
  is in the entry, as the paper's construction implies; `details.place` records where); an entry with no number at
  all gets a not-applicable placeholder (flagged, counted in build.json, and no condition retrieves it);
- relevance: an off-topic passage appended from another item of the same subject / same category / other category;
- contradiction: an appended claim that the most plausible distractor is the answer: hedged / firm, citing a revision
  / maximal, citing an official authority.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from core.construction.corpus import CorpusDoc, doc_from_record
from core.construction.embedders import EmbeddingEstimate, estimate_embedding
from core.construction.retrieval import DEFAULT_INDEX_DIR, Hit, RetrievalConfig, Retriever
from core.protocols.kb_corruption import (
    CONDITION_NAMES,
    NAME,
    NUMERIC_ANSWER,
    RETRIEVAL_FILTERS,
    SEVERITIES,
    TOP_K,
    TYPE_LABELS,
    TYPES,
    condition_profile,
)
from core.protocols.progress import Progress, counted
from core.store.generated import GENERIC_KEY
from core.store.schema import DocumentSpec, InstanceSpec

PathLike = str | Path
BUILDER_VERSION = "ragstress-1"
DOMAIN = "RAGStress"
LETTERS = "ABCD"
CLEAN_TYPE = "clean"
DOC_WINDOW = 10_000  # words: one chunk per document (document-level chunking)
APPENDED_WORDS = 60
NUMBER_RE = re.compile(r"(?<![\d.,])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?!\d)")
MARKED_RE = re.compile(r"(?m)^\*([A-D])\. ")
ANSWER_LINE_RE = re.compile(r"(?m)^Correct answer: ([A-D])\. (.*)$")
CLAIM_RE = re.compile(r"answer is ([A-D])\b")
CATEGORIES_FILE = "subject_categories.json"
MARK_NOTE = "The option marked with an asterisk (*) is the correct one."
NUMERIC_RULES = {"subtle": "one unit in the last place", "moderate": "20-50% of the value",
                 "obvious": "an order of magnitude (x10)"}
DISTANCES = {"subtle": "same subject", "moderate": "same category, another subject", "obvious": "another category"}
CONTRADICTIONS = {
    "subtle": (("Some readers have suggested that the answer is {letter} ({text}) instead, though this has not been "
                "confirmed."),
               "An unsigned marginal note wonders whether the answer is {letter} ({text})."),
    "moderate": ("Correction from a later revision of this entry: the answer is {letter} ({text}).",
                 "Update: a reviewer of this collection states that the answer is {letter} ({text})."),
    "obvious": (("OFFICIAL ERRATUM, verified by the {subject} editorial board: the marked option is wrong. The answer "
                 "is {letter} ({text}), definitively; disregard the asterisk."),
                ("AUTHORITATIVE NOTICE from the {subject} editors: the answer is {letter} ({text}) beyond any doubt. "
                 "The marked option above is an error.")),
}
TONES = {"subtle": "hedged and tentative, from no particular source",
         "moderate": "stated firmly, citing a later revision of the entry",
         "obvious": "stated with complete certainty, citing an official authority and telling the reader to "
                    "disregard the marked option"}


@dataclass(frozen=True)
class Question:
    """One MMLU item."""

    qid: str  # "<subject>/<row>"
    subject: str
    category: str
    stem: str
    choices: tuple[str, ...]
    key: str

    @property
    def options(self) -> dict[str, str]:
        return dict(zip(LETTERS, self.choices, strict=False))

    @property
    def correct(self) -> str:
        return self.options[self.key]


@dataclass(frozen=True)
class Variant:
    """One knowledge-base entry of an item: the clean one or a corruption, with what it claims."""

    corruption_type: str
    severity: str | None
    text: str
    applicable: bool = True
    marked_key: str | None = None  # the option the entry presents as correct
    claimed_key: str | None = None  # the option an appended contradicting claim names
    details: dict[str, Any] = field(default_factory=dict)
    generator: dict[str, Any] = field(default_factory=dict)

    @property
    def is_corrupted(self) -> bool:
        return self.applicable and self.corruption_type != CLEAN_TYPE

    @property
    def name(self) -> str:
        return self.corruption_type if self.severity is None else f"{self.corruption_type}-{self.severity}"


# --------------------------------------------------------------------------- questions


def _categories(folder: Path) -> dict[str, dict[str, str]]:
    for candidate in (folder / CATEGORIES_FILE, folder.parent / CATEGORIES_FILE):
        if candidate.is_file():
            return json.loads(candidate.read_text(encoding="utf-8"))
    return {}


def _csv_questions(path: Path) -> list[Question]:
    subject = path.stem.removesuffix("_test").removesuffix("_dev").removesuffix("_val")
    category = _categories(path.resolve().parent).get(subject, {}).get("category", "")
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    return [Question(f"{subject}/{i}", subject, category, row[0], tuple(row[1:5]), row[5]) for i, row in enumerate(rows)]


def _jsonl_questions(path: Path) -> list[Question]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            out.append(Question(f"{r['subject']}/{r['row']}", r["subject"], r.get("category") or "", r["question"],
                                tuple(r["choices"]), r["answer"]))
    return out


def load_questions(paths: PathLike | Sequence[PathLike]) -> list[Question]:
    """MMLU items from subject CSVs (a folder means all its *.csv), or a JSONL selection; duplicate ids raise."""
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    files = [f for p in map(Path, items) for f in (sorted(p.glob("*.csv")) if p.is_dir() else [p])]
    questions = [q for f in files for q in (_csv_questions(f) if f.suffix.lower() == ".csv" else _jsonl_questions(f))]
    dupes = sorted(qid for qid, n in Counter(q.qid for q in questions).items() if n > 1)
    if dupes:
        raise ValueError(f"duplicate question ids: {', '.join(dupes[:5])}")
    bad = [q.qid for q in questions if len(q.choices) != 4 or q.key not in LETTERS]
    if bad:
        raise ValueError(f"questions without 4 options and a key A-D: {', '.join(bad[:5])}")
    return questions


# --------------------------------------------------------------------------- entries


def subject_label(subject: str) -> str:
    """'high_school_biology' -> 'High school biology'."""
    return subject.replace("_", " ").strip().capitalize()


def entry_title(q: Question) -> str:
    """The title of every entry of an item."""
    return f"{subject_label(q.subject)} — reference entry"


def render_entry(q: Question, marked: str, options: dict[str, str] | None = None, appended: str = "") -> str:
    """A reference entry: the stem, the options with the one presented as correct marked '*', the answer line."""
    options = options or q.options
    lines = [f"Question: {q.stem.strip()}", "Options:"]
    lines += [f"{'*' if letter == marked else ''}{letter}. {' '.join(text.split())}" for letter, text in options.items()]
    lines += [f"Correct answer: {marked}. {' '.join(options[marked].split())}", MARK_NOTE]
    return "\n".join(lines) + (f"\n\n{appended}" if appended else "")


def item_rng(seed: int, qid: str, purpose: str) -> random.Random:
    """A random stream per (seed, item, purpose), so one item does not depend on which others are built."""
    return random.Random(int(hashlib.sha256(f"{seed}|{qid}|{purpose}".encode()).hexdigest()[:16], 16))


def _trigrams(text: str) -> set[str]:
    t = f"  {' '.join(text.lower().split())} "
    return {t[i:i + 3] for i in range(len(t) - 2)}


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def first_number(text: str) -> Decimal | None:
    """The first number of a text (4,000 and 0.45 whole), or None."""
    m = NUMBER_RE.search(text)
    return Decimal(m.group().replace(",", "")) if m else None


def plausibility(correct: str, other: str) -> float:
    """How close a distractor is to the correct option: mean of character-trigram and word Jaccard, averaged with
    the closeness of their first numbers when both have one."""
    score = (_jaccard(_trigrams(correct), _trigrams(other))
             + _jaccard(set(correct.lower().split()), set(other.lower().split()))) / 2
    a, b = first_number(correct), first_number(other)
    if a is not None and b is not None:
        scale = max(abs(a), abs(b))
        score = (score + (1.0 if scale == 0 else 1 - min(1.0, float(abs(a - b) / scale)))) / 2
    return score


def distractors(q: Question, seed: int) -> list[str]:
    """The wrong option letters, most plausible first (ties broken by the seed)."""
    rng = item_rng(seed, q.qid, "distractors")
    ties = {letter: rng.random() for letter in LETTERS}
    wrong = [letter for letter in q.options if letter != q.key]
    return sorted(wrong, key=lambda letter: (-plausibility(q.correct, q.options[letter]), ties[letter]))


def _format_number(value: Decimal, decimals: int, commas: bool) -> str:
    return f"{value:,.{decimals}f}" if commas else f"{value:.{decimals}f}"


def number_candidates(token: str, severity: str, rng: random.Random) -> list[str]:
    """Altered forms of a number token by severity, best first (same precision and separators, never negative)."""
    decimals = len(token.rpartition(".")[2]) if "." in token else 0
    value, unit = Decimal(token.replace(",", "")), Decimal(1).scaleb(-decimals)
    sign = rng.choice((1, -1))
    if severity == "subtle":
        deltas = [unit, 2 * unit, 3 * unit]
    elif severity == "moderate":
        ratio = Decimal(str(rng.choice((0.2, 0.25, 0.3, 0.4, 0.5))))
        delta = max((abs(value) * ratio).quantize(unit, rounding=ROUND_HALF_UP), 2 * unit)
        deltas = [delta, delta + unit, 2 * delta]
    else:
        base = value if value else 10 * unit
        return [_format_number(v, decimals, "," in token) for v in (base * 10, base * 100, base * 1000)]
    values = [value + s * d for d in deltas for s in (sign, -sign)]
    return [_format_number(v, decimals, "," in token) for v in values if v >= 0 and v != value]


def typo_sites(q: Question) -> list[tuple[str, str]]:
    """Where a numeric typo may go, in order: the correct option (the paper's case), else the question, else another
    option; as (place, text)."""
    others = [(f"option {letter}", text) for letter, text in q.options.items() if letter != q.key]
    return [(f"option {q.key}", q.correct), ("question", q.stem), *others]


def numeric_typo(q: Question, severity: str, seed: int) -> dict[str, Any] | None:
    """The first number of the entry's first typo site altered (place, original, altered, the altered text, relative
    error), never into another option's text; None when the entry holds no number at all."""
    taken = {" ".join(c.split()) for c in q.choices}
    for place, text in typo_sites(q):
        m = NUMBER_RE.search(text)
        if m is None:
            continue
        for candidate in number_candidates(m.group(), severity, item_rng(seed, q.qid, f"numeric/{severity}")):
            altered = text[:m.start()] + candidate + text[m.end():]
            if place == "question" or " ".join(altered.split()) not in taken:
                old, new = Decimal(m.group().replace(",", "")), Decimal(candidate.replace(",", ""))
                error = float(abs(new - old) / old) if old else None
                return {"place": place, "original": m.group(), "altered": candidate, "altered_text": altered,
                        "relative_error": error, "rule": NUMERIC_RULES[severity]}
    return None


def typo_entry(q: Question, typo: dict[str, Any]) -> str:
    """The clean entry with the typo applied where it was planned (an option's text or the question)."""
    if typo["place"] == "question":
        return render_entry(replace(q, stem=typo["altered_text"]), q.key)
    letter = typo["place"].removeprefix("option ")
    return render_entry(q, q.key, {**q.options, letter: typo["altered_text"]})


def truncate_words(text: str, limit: int) -> str:
    """The first `limit` words, with an ellipsis when cut."""
    words = text.split()
    return " ".join(words[:limit]) + (" …" if len(words) > limit else "")


@dataclass
class Pool:
    """The items off-topic passages are drawn from, indexed by subject and category."""

    questions: list[Question]
    by_subject: dict[str, list[Question]] = field(default_factory=dict)
    by_category: dict[str, list[Question]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for q in self.questions:
            self.by_subject.setdefault(q.subject, []).append(q)
            self.by_category.setdefault(q.category, []).append(q)

    def draw(self, q: Question, severity: str, rng: random.Random) -> tuple[Question | None, str]:
        """An item at the severity's topical distance from `q` (or the nearest distance available) and the distance."""
        tests = {"subtle": lambda o: o.subject == q.subject and o.qid != q.qid,
                 "moderate": lambda o: o.category == q.category and o.subject != q.subject,
                 "obvious": lambda o: o.category != q.category}
        sources = {"subtle": self.by_subject.get(q.subject, []), "moderate": self.by_category.get(q.category, []),
                   "obvious": self.questions}
        order = SEVERITIES[SEVERITIES.index(severity):] + SEVERITIES[:SEVERITIES.index(severity)][::-1]
        for level in order:
            found = self._sample(sources[level], tests[level], rng)
            if found is not None:
                return found, DISTANCES[level]
        return None, "none available"

    @staticmethod
    def _sample(candidates: list[Question], test: Callable[[Question], bool], rng: random.Random) -> Question | None:
        for _ in range(64):
            if not candidates:
                return None
            pick = candidates[rng.randrange(len(candidates))]
            if test(pick):
                return pick
        matching = [c for c in candidates if test(c)]
        return matching[rng.randrange(len(matching))] if matching else None


def off_topic_passage(source: Question) -> str:
    """Reference text from another item, without any option letter or answer claim."""
    return (f"See also ({subject_label(source.subject)}): {truncate_words(source.stem, APPENDED_WORDS)} "
            f"Key point: {truncate_words(source.correct, 20).rstrip('.')}.")


def offline_variants(q: Question, pool: Pool, seed: int) -> list[Variant]:
    """The 13 entries of an item: clean, then type x severity in TYPES x SEVERITIES order."""
    offline = {"mode": "offline", "builder": BUILDER_VERSION, "seed": seed}
    wrong = distractors(q, seed)
    out = [Variant(CLEAN_TYPE, None, render_entry(q, q.key), marked_key=q.key, generator=offline)]
    for rank, severity in zip((0, 1, len(wrong) - 1), SEVERITIES, strict=True):
        letter = wrong[rank]
        out.append(Variant("factual", severity, render_entry(q, letter), marked_key=letter, generator=offline,
                           details={"distractor_rank": rank + 1, "plausibility": round(
                               plausibility(q.correct, q.options[letter]), 4)}))
    typos = {severity: numeric_typo(q, severity, seed) for severity in SEVERITIES}
    for severity, typo in typos.items():
        if not all(typos.values()):
            out.append(Variant("numeric", severity, render_entry(q, q.key), applicable=False, marked_key=q.key,
                               generator=offline, details={"not_applicable": "the entry holds no number"}))
        else:
            assert typo is not None  # every severity's typo exists when all(typos.values())
            out.append(Variant("numeric", severity, typo_entry(q, typo), marked_key=q.key, generator=offline,
                               details=typo))
    for severity in SEVERITIES:
        source, distance = pool.draw(q, severity, item_rng(seed, q.qid, f"relevance/{severity}"))
        passage = off_topic_passage(source) if source else ""
        details = {"appended_from": source.qid, "distance": distance} if source else {
            "not_applicable": "no other item to draw an off-topic passage from"}
        out.append(Variant("relevance", severity, render_entry(q, q.key, appended=passage), marked_key=q.key,
                           applicable=source is not None, generator=offline, details=details))
    target = wrong[0]
    for severity in SEVERITIES:
        template = item_rng(seed, q.qid, f"contradiction/{severity}").choice(CONTRADICTIONS[severity])
        claim = template.format(letter=target, text=" ".join(q.options[target].split()),
                                subject=subject_label(q.subject))
        out.append(Variant("contradiction", severity, render_entry(q, q.key, appended=claim), marked_key=q.key,
                           claimed_key=target, generator=offline, details={"tone": TONES[severity]}))
    return out


# --------------------------------------------------------------------------- optional LLM mode

CompleteJson = Callable[[str], dict]


@dataclass
class LlmWriter:
    """Writes corrupted entries through a registered model (`complete_json(prompt) -> dict`), validating each."""

    complete_json: CompleteJson
    model: str
    attempts: int = 2
    calls: int = 0
    rejected: int = 0
    fallbacks: int = 0


def instruction(q: Question, v: Variant) -> str:
    """What the LLM must change, from the offline plan of the variant (so both modes corrupt the same thing)."""
    assert v.severity is not None, "only a corrupted variant has an instruction"
    if v.corruption_type == "factual":
        assert v.marked_key is not None, "a factual variant marks a wrong option"
        rank = {"subtle": "most", "moderate": "second most", "obvious": "least"}[v.severity]
        return (f"Make the entry present option {v.marked_key} ({q.options[v.marked_key]}) as the correct answer, the "
                f"{rank} plausible wrong option: move the asterisk to option {v.marked_key} and change the 'Correct "
                "answer:' line to it. Change nothing else.")
    if v.corruption_type == "numeric":
        return (f"Introduce a numeric typo in the correct option {q.key}: change the number {v.details['original']} to a "
                f"wrong value off by {v.details['rule']}, in the options list and in the 'Correct answer:' line. Keep "
                f"the asterisk on option {q.key}. Change nothing else.")
    if v.corruption_type == "relevance":
        where = {"subtle": f"another topic of the same subject ({subject_label(q.subject)})",
                 "moderate": f"another subject of the same area ({q.category})",
                 "obvious": f"a subject far from {subject_label(q.subject)}, outside {q.category}"}[v.severity]
        return (f"Append after the entry two or three sentences of off-topic reference text about {where} that say "
                "nothing about this question and name no option letter. Change nothing in the entry itself.")
    assert v.claimed_key is not None, "a claim variant names the option it claims"
    return (f"Append after the entry one or two sentences claiming that the answer is {v.claimed_key} "
            f"({q.options[v.claimed_key]}), {TONES[v.severity]}. Change nothing in the entry itself.")


def llm_prompt(q: Question, v: Variant, clean: str) -> str:
    """The corruption prompt of one variant (type, severity, the plan, the layout to keep, JSON reply)."""
    return (
        "You are helping build a controlled stress test of retrieval-augmented question answering: a knowledge base "
        "where some entries are deliberately degraded. Below is a reference entry. Write its "
        f"{TYPE_LABELS[v.corruption_type]} version at {v.severity} severity.\n"
        f"Instruction: {instruction(q, v)}\n"
        "Keep the layout: the 'Question:' line, the 'Options:' list with one option per line, the asterisk before the "
        "option the entry presents as correct, and the 'Correct answer:' line.\n"
        'Reply with JSON only: {"document": "<the full rewritten entry>"}.\n\n'
        f"Entry:\n{clean}"
    )


def validation_error(q: Question, v: Variant, clean: str, text: str) -> str:
    """Why an LLM-written entry does not implement its plan ('' when it does)."""
    if q.stem.strip()[:80] not in text:
        return "the question stem is missing or altered"
    marked = MARKED_RE.findall(text)
    line = ANSWER_LINE_RE.search(text)
    if len(marked) != 1 or line is None or line.group(1) != marked[0]:
        return "needs exactly one '*' option and a 'Correct answer:' line naming it"
    if v.corruption_type == "factual":
        return "" if marked[0] == v.marked_key else f"marks {marked[0]}, the plan is {v.marked_key}"
    if marked[0] != q.key:
        return f"the asterisk must stay on {q.key}"
    if v.corruption_type == "numeric":
        value = " ".join(line.group(2).split())
        ok = value != " ".join(q.correct.split()) and NUMBER_RE.search(value) is not None
        return "" if ok else "the correct option's number is unchanged or gone"
    if not " ".join(text.split()).startswith(" ".join(clean.split())):
        return "the original entry must stay unchanged before the appended text"
    appended = text[len(clean):] if text.startswith(clean) else text.split(MARK_NOTE, 1)[-1]
    claims = set(CLAIM_RE.findall(appended))
    if v.corruption_type == "relevance":
        return "" if len(appended.split()) >= 15 and not claims else "needs 15+ appended words and no answer claim"
    return "" if v.claimed_key in claims else f"the appended text must claim the answer is {v.claimed_key}"


def llm_variant(q: Question, v: Variant, clean: str, writer: LlmWriter) -> Variant:
    """The LLM-written form of a corrupted entry, or the offline one when every attempt fails validation."""
    prompt, reasons = llm_prompt(q, v, clean), list[str]()
    for attempt in range(1, writer.attempts + 1):
        asked = prompt if not reasons else f"{prompt}\n\nYour previous reply was rejected: {reasons[-1]}."
        writer.calls += 1
        text = str((writer.complete_json(asked) or {}).get("document") or "").strip()
        reason = validation_error(q, v, clean, text) if text else "no document in the reply"
        if not reason:
            generator = {"mode": "llm", "model": writer.model, "prompt": asked, "attempts": attempt,
                         "rejections": reasons}
            return replace(v, text=text, marked_key=MARKED_RE.findall(text)[0], generator=generator,
                           details={**v.details, "written_by": "llm from this plan"})
        writer.rejected += 1
        reasons.append(reason)
    writer.fallbacks += 1
    return replace(v, generator={**v.generator, "llm_fallback": {"model": writer.model, "prompt": prompt,
                                                                 "rejections": reasons}})


def item_variants(q: Question, pool: Pool, seed: int, writer: LlmWriter | None = None) -> list[Variant]:
    """The 13 entries of an item, the applicable corrupted ones LLM-written when a writer is given."""
    variants = offline_variants(q, pool, seed)
    if writer is None:
        return variants
    clean = variants[0].text
    return [llm_variant(q, v, clean, writer) if v.is_corrupted and not stays_offline(q, v) else v for v in variants]


def stays_offline(q: Question, v: Variant) -> bool:
    """A numeric typo outside the correct option keeps its offline entry in LLM mode (the reply's validation reads
    the typo from the 'Correct answer:' line)."""
    return v.corruption_type == "numeric" and v.details.get("place") != f"option {q.key}"


# --------------------------------------------------------------------------- knowledge base


def kb_record(q: Question, v: Variant) -> dict[str, Any]:
    """One knowledge-base line in the corpus format (core.construction.corpus), metadata as top-level keys."""
    return {"doc_id": f"{q.qid}#{v.name}", "domain": q.subject, "title": entry_title(q), "text": v.text,
            "source": f"mmlu/{q.qid}", "subject": q.subject, "category": q.category,
            "corruption_type": v.corruption_type, "severity": v.severity, "is_corrupted": v.is_corrupted,
            "applicable": v.applicable, "source_question_id": q.qid, "marked_key": v.marked_key,
            "claimed_key": v.claimed_key, "details": v.details, "generator": v.generator}


def build_knowledge_base(questions: list[Question], seed: int, writer: LlmWriter | None = None) -> list[dict]:
    """Every item's 13 entries as knowledge-base records, in item order."""
    pool = Pool(questions)
    return [kb_record(q, v) for q in questions for v in item_variants(q, pool, seed, writer)]


def query_text(q: Question) -> str:
    """What is searched for an item: the question and its options, as the model is asked."""
    return q.stem.strip() + "\n" + "\n".join(f"{letter}. {text}" for letter, text in q.options.items())


RETRIEVERS = ("hybrid", "bm25", "dense")  # dense: the paper's preset (faiss filtered nearest-neighbour search)


def retrieval_mode(retriever: str | None, embedder: str | None) -> str:
    """The search mode of a build: the retriever chosen, else hybrid with an embedder and BM25 without."""
    mode = retriever or ("hybrid" if embedder else "bm25")
    if mode not in RETRIEVERS:
        raise ValueError(f"unknown retriever {mode!r}; known: {', '.join(RETRIEVERS)}")
    if mode != "bm25" and not embedder:
        raise ValueError(f"the {mode} retriever needs an embedder")
    return mode


def retrieval_config(embedder: str | None, index_dir: PathLike | None, top_k: int = TOP_K,
                     embedder_options: dict[str, Any] | None = None, mode: str = "hybrid") -> RetrievalConfig:
    """Document-level chunks, BM25 (+ the dense embedder unless None) fused by reciprocal rank, top-k; the dense
    preset searches each condition's filter with faiss's own filtered nearest-neighbour search."""
    return RetrievalConfig(window=DOC_WINDOW, overlap=0, embedder=embedder if mode != "bm25" else None, top_k=top_k,
                           embedder_options=dict(embedder_options or {}),
                           index_dir=Path(index_dir) if index_dir else None,
                           dense_search="faiss" if mode == "dense" else "exact")


def applicable_conditions(q: Question, kb: dict[str, CorpusDoc]) -> list[str]:
    """The retrieval conditions that apply to an item: all but the type x severity ones whose entry for this item is
    a not-applicable placeholder (numeric typos of items whose entry holds no number)."""
    def applies(name: str) -> bool:
        kind, _, severity = name.rpartition("_")
        return kind not in TYPES or kb[f"{q.qid}#{kind}-{severity}"].meta["applicable"]

    return [name for name in RETRIEVAL_FILTERS if applies(name)]


def retrieve(retriever: Retriever, q: Question, conditions: Sequence[str], top_k: int = TOP_K,
             mode: str = "hybrid") -> dict[str, list[Hit]]:
    """The top-k documents of each named condition's metadata filter for one item, over the one index."""
    return retriever.search_filtered(query_text(q), {c: RETRIEVAL_FILTERS[c] for c in conditions}, top_k, mode)


def document_role(q: Question, doc: CorpusDoc) -> str:
    """supporting (the item's clean or off-topic-padded entry), counterfactual (its wrong-claiming entries), noise."""
    if doc.meta["source_question_id"] != q.qid:
        return "noise"
    return "supporting" if doc.meta["corruption_type"] in (CLEAN_TYPE, "relevance") else "counterfactual"


VARIANT_KEYS = ("subject", "category", "corruption_type", "severity", "is_corrupted", "applicable",
                "source_question_id", "marked_key", "claimed_key")


def condition_documents(q: Question, condition: str, hits: list[Hit], kb: dict[str, CorpusDoc]) -> list[DocumentSpec]:
    """The documents one condition's filter returned, tagged with the condition, rank and score."""
    return [DocumentSpec(doc_id=h.doc_id, title=kb[h.doc_id].title, text=kb[h.doc_id].text, source="ragstress-kb",
                         role=document_role(q, kb[h.doc_id]),
                         variant={**{k: kb[h.doc_id].meta.get(k) for k in VARIANT_KEYS}, "retrieved_for": condition,
                                  "rank": h.rank, "score": round(h.score, 6)})
            for h in hits]


def retrieval_record(q: Question, hits: list[Hit], kb: dict[str, CorpusDoc]) -> dict[str, Any]:
    """What one filter returned for an item: count, the rank and kind of its own first entry, corrupted count."""
    own = [(h.rank, kb[h.doc_id]) for h in hits if kb[h.doc_id].meta["source_question_id"] == q.qid]
    return {"returned": len(hits), "own_rank": own[0][0] if own else None,
            "own_variant": own[0][1].doc_id.rpartition("#")[2] if own else None,
            "corrupted": sum(bool(kb[h.doc_id].meta["is_corrupted"]) for h in hits)}


def llm_written(documents: list[DocumentSpec], kb: dict[str, CorpusDoc]) -> list[dict[str, str]]:
    """The instance's LLM-written knowledge-base entries per model, as core.store.generated records (the mark every
    listing shows): '2 corrupted knowledge-base entries written by M'."""
    by_model = Counter(kb[doc_id].meta[WRITTEN_BY] for doc_id in dict.fromkeys(d.doc_id for d in documents)
                       if WRITTEN_BY in kb[doc_id].meta)
    return [{"part": f"{n} corrupted knowledge-base entr{'y' if n == 1 else 'ies'}", "how": "written", "model": model}
            for model, n in sorted(by_model.items())]


def build_instance(q: Question, hits: dict[str, list[Hit]], kb: dict[str, CorpusDoc], provenance: dict) -> InstanceSpec:
    """One RAGStress instance: the question, its MCQ reference, every retrieval condition's documents and a record of
    what each filter returned."""
    documents = [d for name in CONDITION_NAMES if name in hits for d in condition_documents(q, name, hits[name], kb)]
    not_applicable = sorted({kb[f"{q.qid}#{t}-{s}"].meta["corruption_type"] for t in TYPES for s in SEVERITIES
                             if not kb[f"{q.qid}#{t}-{s}"].meta["applicable"]})
    meta: dict[str, Any] = {"ragstress": {**provenance, "source_question_id": q.qid,
                                          "not_applicable_types": not_applicable,
                                          "retrieval": {name: retrieval_record(q, hits[name], kb) for name in hits}}}
    if written := llm_written(documents, kb):
        meta[GENERIC_KEY] = written
    return InstanceSpec(
        id=f"ragstress/{q.qid}", domain=DOMAIN, query=q.stem, protocol=NAME, language="en",
        reference={"answer_type": "mcq", "choices": q.options, "answer_key": q.key},
        attributes={"categories": [q.category] if q.category else [], "aspects": [q.subject],
                    "question_type": "text_answer" if "numeric" in not_applicable else NUMERIC_ANSWER},
        documents=documents, metadata=meta)


# --------------------------------------------------------------------------- the build


@dataclass
class RagStressReport:
    """What a RAGStress build wrote, the knowledge base's make-up and what each filter retrieved."""

    out_dir: str
    questions: int
    kb_documents: int
    kb_by_variant: dict[str, int]
    not_applicable: dict[str, int]
    retrievable_documents: int
    conditions: dict[str, dict[str, Any]]
    retriever: dict[str, Any]
    seed: int
    kb_sha256: str
    seconds: dict[str, float]
    llm: dict[str, Any] | None = None
    kb_questions: int = 0  # the questions the knowledge base was built from (the evaluated ones unless given apart)
    numeric_questions: int = 0  # the evaluated questions whose entry holds a number (numeric typos apply)

    def to_dict(self) -> dict:
        """Plain dict (for JSON output)."""
        return asdict(self)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


RETRIEVER_DROPS = ("details", "generator")  # kept in knowledge_base.jsonl, not needed by retrieval or instances
WRITTEN_BY = "written_by"  # on the retriever's copy of an LLM-written entry: the model (for the instance's mark)


def write_knowledge_base(questions: list[Question], path: Path, seed: int,
                         writer: LlmWriter | None = None) -> tuple[list[CorpusDoc], Counter[str], Counter[str]]:
    """Stream every item's 13 entries to `path` (one JSON line each) and return the retriever's compact documents
    (without details and generator) with the count of entries and of not-applicable placeholders per variant."""
    pool, docs, by_variant, not_applicable = Pool(questions), list[CorpusDoc](), Counter[str](), Counter[str]()
    with path.open("w", encoding="utf-8") as fh:
        for q in questions:
            for v in item_variants(q, pool, seed, writer):
                record = kb_record(q, v)
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
                by_variant[v.name] += 1
                not_applicable[v.name] += not v.applicable
                compact = {k: x for k, x in record.items() if k not in RETRIEVER_DROPS}
                if v.generator.get("mode") == "llm":  # an LLM-written entry keeps its writer for the instance's mark
                    compact[WRITTEN_BY] = v.generator.get("model") or ""
                docs.append(doc_from_record(compact))
    return docs, by_variant, +not_applicable


def evaluated_questions(questions_path: PathLike | Sequence[PathLike], base: list[Question] | None,
                        limit: int | None) -> list[Question]:
    """The questions retrieved for and evaluated (the first `limit`); each must be in the knowledge base's questions
    when those are given apart, and is then taken from them (same id, same stem, same options)."""
    chosen = load_questions(questions_path)[:limit]
    if base is None:
        return chosen
    by_id = {q.qid: q for q in base}
    missing = [q.qid for q in chosen if q.qid not in by_id]
    if missing:
        raise ValueError(f"{len(missing)} evaluated questions are not among the knowledge-base questions "
                         f"(--kb-questions): {', '.join(missing[:5])}")
    differ = [q.qid for q in chosen if (q.stem, q.choices, q.key) != (by_id[q.qid].stem, by_id[q.qid].choices,
                                                                        by_id[q.qid].key)]
    if differ:
        raise ValueError(f"evaluated questions differ from their knowledge-base copy: {', '.join(differ[:5])}")
    return [by_id[q.qid] for q in chosen]


def build_ragstress(questions_path: PathLike | Sequence[PathLike], out_dir: PathLike, seed: int = 0, *,
                    top_k: int = TOP_K, embedder: str | None = "minilm-onnx",
                    index_dir: PathLike | None = DEFAULT_INDEX_DIR, writer: LlmWriter | None = None,
                    limit: int | None = None,
                    kb_questions_path: PathLike | Sequence[PathLike] | None = None,
                    progress: Progress | None = None, retriever: str | None = None,
                    embedder_options: dict[str, Any] | None = None,
                    before_embedding: Callable[[EmbeddingEstimate], None] | None = None) -> RagStressReport:
    """Write knowledge_base.jsonl, instances.jsonl and build.json under out_dir; same seed and inputs, same files.
    The knowledge base holds every question of `kb_questions_path` (the evaluated ones when None); retrieval runs
    for the evaluated questions only; `progress(done, total)` after each evaluated question is retrieved for."""
    started = time.perf_counter()
    base = load_questions(kb_questions_path) if kb_questions_path is not None else None
    questions = evaluated_questions(questions_path, base, limit)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    kb_path = out / "knowledge_base.jsonl"
    docs, by_variant, not_applicable = write_knowledge_base(base if base is not None else questions, kb_path, seed,
                                                            writer)
    generated = time.perf_counter()
    kb = {d.doc_id: d for d in docs}
    mode = retrieval_mode(retriever, embedder)
    config = retrieval_config(embedder, index_dir, top_k, embedder_options, mode)
    if before_embedding is not None and config.embedder:
        before_embedding(estimate_embedding(d.text for d in docs))  # may stop the build before any embedding call
    index = Retriever(docs, config)
    indexed = time.perf_counter()
    settings = {"mode": mode, "embedder": index.embedder.model_id if index.embedder else None,
                "top_k": top_k, "fusion": index.config.fusion, "chunking": "document", "index_key": index.key,
                "dense_search": index.config.dense_search if index.embedder else None}
    provenance: dict[str, Any] = {"seed": seed, "builder": BUILDER_VERSION, "kb_sha256": _sha256(kb_path),
                                  "retriever": settings}
    instances = [build_instance(q, retrieve(index, q, applicable_conditions(q, kb), top_k, mode), kb, provenance)
                 for q in counted(questions, progress)]
    (out / "instances.jsonl").write_text("".join(i.model_dump_json(exclude_none=True) + "\n" for i in instances),
                                         encoding="utf-8")
    done = time.perf_counter()
    report = RagStressReport(
        out_dir=str(out), questions=len(questions), kb_documents=len(docs), kb_by_variant=dict(by_variant),
        not_applicable=dict(not_applicable), retrievable_documents=sum(bool(d.meta["applicable"]) for d in docs),
        conditions=condition_profile(i.metadata["ragstress"]["retrieval"] for i in instances),
        retriever=settings, seed=seed, kb_sha256=provenance["kb_sha256"],
        seconds={"generate": round(generated - started, 2), "index": round(indexed - generated, 2),
                 "retrieve": round(done - indexed, 2)},
        llm={"model": writer.model, "calls": writer.calls, "rejected": writer.rejected, "fallbacks": writer.fallbacks,
             "rejection_rate": round(writer.rejected / writer.calls, 4) if writer.calls else None} if writer else None,
        kb_questions=len(base) if base is not None else len(questions),
        numeric_questions=sum(i.attributes.question_type == NUMERIC_ANSWER for i in instances))
    (out / "build.json").write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    return report
