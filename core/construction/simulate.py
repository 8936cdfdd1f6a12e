"""Non-ideal retrieval simulation: build the document bundle of one instance in noisy, gap or conflict mode.

noisy    - supporting documents at seeded, recorded positions among the top retrieved non-supporting ones,
           the highest-ranked (near-miss) documents placed next to them.
gap      - every document carrying the answer removed and replaced by related retrieved ones; an offline
           check (answer strings + BM25 score) drops any remaining document that could still answer.
conflict - the supporting documents plus one contradicting document: a natural earlier version when the
           corpus has one, else a copy of a supporting document with one key fact (number, date, time,
           name or status) edited by a deterministic rule.
"""

from __future__ import annotations

import difflib
import hashlib
import random
import re
from dataclasses import dataclass, field

from core.construction.corpus import CorpusDoc
from core.construction.fact_checks import (
    MAX_ATTEMPTS,
    Assist,
    CheckFailed,
    Verdict,
    check_conflict,
    check_gap,
    failures,
    generate_conflict,
    generate_gap,
    stored,
)
from core.construction.retrieval import Retriever
from core.language import wordlists
from core.store.schema import DocumentSpec

_WORDS = wordlists("fact_edits")
MONTHS: list[str] = _WORDS["months"]
STATUS_SWAPS: list[tuple[str, str]] = [(a, b) for a, b in _WORDS["status_swaps"]]
SUBSTITUTE_NAMES: list[str] = _WORDS["substitute_names"]
_DATE = re.compile(r"\b(\d{1,2}) (" + "|".join(MONTHS) + r")( \d{4})?\b")
_TIME = re.compile(r"\b([01]\d|2[0-3]):([0-5]\d)\b")
_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
_NAME = re.compile(r"\b[A-Z][a-z]+ [A-Z][a-z]+\b")


@dataclass
class Bundle:
    """Documents of one instance plus what the simulation recorded about them."""

    documents: list[DocumentSpec]
    origin: str = "natural"
    meta: dict = field(default_factory=dict)


def norm(text: str) -> str:
    """Lower-case, single-spaced text for answer-string matching."""
    return re.sub(r"\s+", " ", text.lower()).strip()


def to_spec(doc: CorpusDoc, role: str, **extra) -> DocumentSpec:
    """A corpus document as a bundle document with a role (markdown tables keep their type)."""
    ctype = doc.content_type
    if ctype == "markdown":
        ctype = "markdown_table" if re.search(r"^\s*\|.*\|\s*$", doc.text, re.MULTILINE) else "text"
    text = doc.text
    if ctype == "html":
        from core.store.sanitize import sanitize_html

        text = sanitize_html(doc.text)
    return DocumentSpec(doc_id=doc.doc_id, title=doc.title, text=text, source=doc.source, content_type=ctype,
                        role=role, **extra)


# ---- deterministic fact edits -------------------------------------------------------------------------------


def _shift_number(token: str) -> str:
    value = float(token.replace(",", ""))
    if "." not in token and 1900 <= value <= 2100:
        return str(int(value) + 1)  # a year
    decimals = len(token.split(".")[1]) if "." in token else 0
    step = max(10 ** -decimals, round(abs(value) * 0.25, decimals)) if value else 1
    new = value + step if value < 1000 else value - step
    text = f"{new:,.{decimals}f}" if "," in token else f"{new:.{decimals}f}"
    return text


def edit_number(fact: str) -> str | None:
    """Shift the first number in the fact by about 25% (keeping its format)."""
    m = _NUMBER.search(fact)
    return fact[: m.start()] + _shift_number(m.group()) + fact[m.end():] if m else None


def edit_date(fact: str) -> str | None:
    """Move a 'day Month [year]' date forward by one month (day kept, clamped to 28)."""
    m = _DATE.search(fact)
    if not m:
        return None
    day, month, year = int(m.group(1)), MONTHS.index(m.group(2)), m.group(3) or ""
    if month == 11 and year:
        year = f" {int(year) + 1}"
    new = f"{min(day, 28)} {MONTHS[(month + 1) % 12]}{year}"
    return fact[: m.start()] + new + fact[m.end():]


def edit_time(fact: str) -> str | None:
    """Move an HH:MM time two hours later."""
    m = _TIME.search(fact)
    return fact[: m.start()] + f"{(int(m.group(1)) + 2) % 24:02d}:{m.group(2)}" + fact[m.end():] if m else None


NUMBER_WORDS: list[str] = _WORDS["number_words"]
FRACTIONS: dict[str, str] = _WORDS["fractions"]


def edit_number_word(fact: str) -> str | None:
    """Replace a fraction or spelled-out number word with the next one ('third' -> 'quarter', 'two' -> 'three')."""
    nxt = {**{w: NUMBER_WORDS[(i + 1) % len(NUMBER_WORDS)] for i, w in enumerate(NUMBER_WORDS)}, **FRACTIONS}
    for words in (list(FRACTIONS), NUMBER_WORDS):
        m = re.search(r"\b(" + "|".join(words) + r")\b", fact, re.IGNORECASE)
        if m:
            return fact[: m.start()] + nxt[m.group(1).lower()] + fact[m.end():]
    return None


def edit_status(fact: str) -> str | None:
    """Swap a status phrase for its opposite (e.g. 'not required' -> 'required')."""
    low = fact.lower()
    for a, b in STATUS_SWAPS:
        for old, new in ((a, b), (b, a)):
            if re.search(rf"\b{re.escape(old)}\b", low):
                i = low.index(old)
                return fact[:i] + new + fact[i + len(old):]
    return None


def edit_name(fact: str) -> str | None:
    """Replace a 'Firstname Lastname' with a fixed substitute name."""
    m = _NAME.search(fact)
    if not m:
        return None
    sub = SUBSTITUTE_NAMES[int(hashlib.sha256(m.group().encode()).hexdigest(), 16) % len(SUBSTITUTE_NAMES)]
    return fact[: m.start()] + sub + fact[m.end():]


EDITS = (("date", edit_date), ("time", edit_time), ("number", edit_number), ("number", edit_number_word),
         ("status", edit_status), ("name", edit_name))


def edit_fact(fact: str) -> tuple[str, str] | None:
    """(kind, edited fact) by the first rule that applies, or None when no rule applies."""
    for kind, rule in EDITS:
        new = rule(fact)
        if new and new != fact:
            return kind, new
    return None


def candidate_facts(text: str, answer_facts: list[str]) -> list[str]:
    """Facts to edit: the query's answer facts found in the text, else dates and numbers in the text."""
    found = [f for f in answer_facts if f in text]
    return found + [m.group() for m in _DATE.finditer(text)] + [m.group() for m in _NUMBER.finditer(text)]


def make_conflict(doc: CorpusDoc, answer_facts: list[str], group: str) -> tuple[DocumentSpec, dict] | None:
    """A contradicting copy of `doc` with one key fact edited; None if no fact can be edited."""
    for fact in candidate_facts(doc.text, answer_facts):
        edit = edit_fact(fact)
        if edit:
            kind, new = edit
            digest = hashlib.sha256(f"{doc.doc_id}|{fact}|{new}".encode()).hexdigest()[:8]
            summary = f"'{fact}' in {doc.doc_id} changed to '{new}' ({kind} edit)"
            spec = to_spec(
                CorpusDoc(f"{doc.doc_id}-x{digest}", doc.domain, doc.title, doc.text.replace(fact, new),
                          doc.source, doc.content_type),
                "conflicting", conflict_group=group, conflict_summary=summary,
            )
            return spec, {"edited_doc": doc.doc_id, "original_fact": fact, "edited_fact": new, "edit_kind": kind}
    return None


def diff_summary(a: str, b: str) -> str:
    """Short description of how text b differs from text a (word-level replacements)."""
    wa, wb = a.split(), b.split()
    changes = [f"'{' '.join(wa[i1:i2]).strip(',.;:')}' vs '{' '.join(wb[j1:j2]).strip(',.;:')}'"
               for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, wa, wb, autojunk=False).get_opcodes()
               if op == "replace"]
    return "; ".join(changes[:4]) or "the documents state different values"


# ---- bundle assembly --------------------------------------------------------------------------------------


def place(supporting: list[str], noise: list[str], k: int, rng: random.Random) -> tuple[list[str], list[int]]:
    """Put supporting ids at seeded positions in a k-slot list; fill the slots nearest to them with noise
    in retrieval order so near-misses sit around the supporting documents."""
    k = max(k, len(supporting))
    noise = noise[: k - len(supporting)]
    size = len(supporting) + len(noise)
    positions = sorted(rng.sample(range(size), len(supporting)))
    slots = [i for i in range(size) if i not in positions]
    slots.sort(key=lambda s: (min((abs(s - p) for p in positions), default=0), s))
    order: list[str | None] = [None] * size
    for pos, doc_id in zip(positions, supporting, strict=True):
        order[pos] = doc_id
    for slot, doc_id in zip(slots, noise, strict=False):
        order[slot] = doc_id
    return [d for d in order if d is not None], positions


def retrieved_ids(retriever: Retriever, query: str, depth: int, exclude: set[str]) -> list[str]:
    """Retrieved doc ids in rank order, skipping `exclude`."""
    return [h.doc_id for h in retriever.search(query, depth) if h.doc_id not in exclude]


def noisy_bundle(q: dict, retriever: Retriever, k: int, rng: random.Random, assist: Assist | None = None) -> Bundle:
    """Supporting documents at recorded positions among retrieved noise (conflicting versions excluded)."""
    support = [d for d in q["supporting_doc_ids"] if d in retriever.docs]
    exclude = set(support) | set(q.get("conflicting_doc_ids", []))
    noise = retrieved_ids(retriever, q["query"], k * 3, exclude)
    order, positions = place(support, noise, k, rng)
    docs = [to_spec(retriever.docs[d], "supporting" if d in support else "noise") for d in order]
    return Bundle(docs, "natural", {"supporting_positions": dict(zip(support, positions, strict=True))})


def answers_query(doc: CorpusDoc, q: dict, bm25: float, threshold: float) -> bool:
    """Offline gap check for one document: does it still carry the answer?"""
    text = norm(doc.title + " " + doc.plain)
    facts = [norm(f) for f in q.get("answer_facts", [])]
    if facts:
        present = [f for f in facts if f in text]
        return len(present) == len(facts) or (bool(present) and bm25 >= threshold)
    probe = [norm(p) for p in q.get("gap_probe", [])]
    return bool(probe) and all(p in text for p in probe)


def gap_bundle(q: dict, retriever: Retriever, k: int, rng: random.Random, assist: Assist | None = None) -> Bundle:
    """Related-but-insufficient documents only; anything that could still answer is dropped (rules), then the bundle
    is checked (the judge reads meaning when one is configured) and, with a generator, a document that still answers
    (or, when nothing is left, a supporting one) is rewritten so that it no longer does."""
    removed = set(q["supporting_doc_ids"]) | set(q.get("conflicting_doc_ids", []))
    bm25 = retriever.bm25_scores(q["query"])
    threshold = 0.8 * min((bm25.get(d, 0.0) for d in removed if d in bm25), default=float("inf"))
    kept, dropped = list[str](), list[str]()
    for doc_id in retrieved_ids(retriever, q["query"], k * 3, removed):
        if len(kept) >= k:
            break
        doc = retriever.docs[doc_id]
        (dropped if answers_query(doc, q, bm25.get(doc_id, 0.0), threshold) else kept).append(doc_id)
    related = set(q.get("related_doc_ids", []))
    docs = [retriever.docs[d] for d in kept]
    origin = "augmented" if q.get("answerable") else "natural"
    meta: dict = {"removed_supporting": sorted(removed), "gap_check_dropped": dropped, "gap_check_passed": True}
    docs, rewritten, checks = _checked_gap(q, docs, [retriever.docs[d] for d in q["supporting_doc_ids"]
                                                      if d in retriever.docs], assist)
    meta.update(checks)
    specs = [to_spec(d, "partial" if d.doc_id in related or d.doc_id in rewritten else "noise") for d in docs]
    return Bundle(specs, origin, meta)


def _rewritten(doc: CorpusDoc, text: str) -> CorpusDoc:
    digest = hashlib.sha256(f"{doc.doc_id}|{text}".encode()).hexdigest()[:8]
    return CorpusDoc(f"{doc.doc_id}-g{digest}", doc.domain, doc.title, text, doc.source, "text")


def _checked_gap(q: dict, docs: list[CorpusDoc], support: list[CorpusDoc],
                 assist: Assist | None) -> tuple[list[CorpusDoc], set[str], dict]:
    """The gap bundle after its checks (and the generator's rewrites where a check failed): documents, the ids of
    rewritten ones, and what to record; CheckFailed when it still fails."""
    gold = list(q.get("answer_facts", []))
    verdicts, answering = check_gap(q["query"], gold, [d.plain for d in docs], assist=assist)
    generate = assist.generate if assist else None
    attempts, first, edited = 0, failures(verdicts), None
    rewritten: set[str] = set()
    while (failures(verdicts) or not docs) and generate is not None and attempts < MAX_ATTEMPTS:
        attempts += 1
        targets = answering or ([] if docs else [-1])
        if -1 in targets:
            if not support:
                break
            docs = [support[0]]
            targets = [0]
        try:
            for i in targets:
                new = _rewritten(docs[i], generate_gap(q["query"], gold, docs[i].plain, generate, failures(verdicts)))
                edited, docs[i] = (docs[i].plain, new.plain), new
                rewritten.add(new.doc_id)
        except ValueError as exc:
            verdicts = {"generated": Verdict(False, str(exc), "rule")}
            continue
        verdicts, answering = check_gap(q["query"], gold, [d.plain for d in docs], edited, assist)
    if not docs:
        raise ValueError(f"{q['query_id']} gap: empty bundle")
    if failures(verdicts):
        raise CheckFailed(f"{q['query_id']} gap: dropped by checks ({failures(verdicts)})", verdicts, attempts)
    meta = {"checks": stored(verdicts), "generated": bool(rewritten), "attempts": attempts}
    if first and attempts:
        meta["rule_failed"] = first
    return docs, rewritten, meta


def _checked_conflict(q: dict, main: CorpusDoc, group: str, assist: Assist | None) -> tuple[DocumentSpec, dict]:
    """The rule's contradicting copy of `main` if it passes every check, else the generator's (told what failed);
    CheckFailed with the last verdicts when none passes, ValueError when nothing could be edited."""
    gold = list(q.get("answer_facts", []))
    made = make_conflict(main, gold, group)
    verdicts: dict[str, Verdict] = {}
    if made is not None:
        spec, meta = made
        verdicts = check_conflict(q["query"], gold, main.text, main.text.replace(meta["original_fact"], meta["edited_fact"]),
                                  meta["original_fact"], meta["edited_fact"], meta["edit_kind"], assist)
        if not failures(verdicts):
            return spec, {**meta, "checks": stored(verdicts), "generated": False}
    generate = assist.generate if assist else None
    if generate is None:
        if made is None:
            raise ValueError(f"query {q['query_id']}: no editable fact in {main.doc_id}")
        raise CheckFailed(f"{q['query_id']} conflict: dropped by checks ({failures(verdicts)})", verdicts)
    first, attempts = failures(verdicts) or "no rule could edit a fact", 0
    while attempts < MAX_ATTEMPTS:
        attempts += 1
        try:
            text, original, edited, kind = generate_conflict(q["query"], gold, main.text, generate,
                                                             failures(verdicts) if verdicts else "")
        except ValueError as exc:
            verdicts = {"generated": Verdict(False, str(exc), "rule")}
            continue
        verdicts = check_conflict(q["query"], gold, main.text, text, original, edited, "generated", assist)
        if not failures(verdicts):
            digest = hashlib.sha256(f"{main.doc_id}|{original}|{edited}".encode()).hexdigest()[:8]
            spec = to_spec(CorpusDoc(f"{main.doc_id}-x{digest}", main.domain, main.title, text, main.source,
                                     main.content_type), "conflicting", conflict_group=group,
                           conflict_summary=f"'{original}' in {main.doc_id} changed to '{edited}' (generated edit)")
            return spec, {"edited_doc": main.doc_id, "original_fact": original, "edited_fact": edited,
                          "edit_kind": "generated", "fact_type": kind, "checks": stored(verdicts), "generated": True,
                          "attempts": attempts, "rule_failed": first}
    raise CheckFailed(f"{q['query_id']} conflict: dropped by checks ({failures(verdicts)})", verdicts, attempts)


def conflict_bundle(q: dict, retriever: Retriever, k: int, rng: random.Random, assist: Assist | None = None,
                    natural_share: float = 0.2) -> Bundle:
    """Supporting documents plus one contradicting document (natural earlier version or rule-based edit)."""
    support = [d for d in q["supporting_doc_ids"] if d in retriever.docs]
    natural = [d for d in q.get("conflicting_doc_ids", []) if d in retriever.docs]
    group = "g1"
    main = retriever.docs[support[0]]
    if natural and rng.random() < natural_share:
        other = retriever.docs[natural[0]]
        conflict = to_spec(other, "conflicting", conflict_group=group,
                           conflict_summary=f"{support[0]} vs {other.doc_id}: " + diff_summary(main.plain, other.plain))
        origin, meta = "natural", {"conflict_source": other.doc_id}
    else:
        conflict, meta = _checked_conflict(q, main, group, assist)
        origin = "augmented"
    exclude = set(support) | set(natural)
    noise = retrieved_ids(retriever, q["query"], k * 3, exclude)
    order, positions = place(support + [conflict.doc_id], noise, k, rng)
    specs = {conflict.doc_id: conflict}
    docs = [specs.get(d) or to_spec(retriever.docs[d], "supporting" if d in support else "noise",
                                    **({"conflict_group": group} if d == support[0] else {}))
            for d in order]
    placed = dict(zip(support + [conflict.doc_id], positions, strict=True))
    return Bundle(docs, origin, {**meta, "conflict_group": group, "positions": placed})


MODE_BUILDERS = {"noisy": noisy_bundle, "gap": gap_bundle, "conflict": conflict_bundle}


def simulate(mode: str, q: dict, retriever: Retriever, k: int, rng: random.Random,
             assist: Assist | None = None) -> Bundle:
    """The bundle for one query under one mode (conflicts and gaps checked; `assist` brings the generator and judge)."""
    return MODE_BUILDERS[mode](q, retriever, k, rng, assist)
