"""The offline `heuristic` judge: lexical refusal / conflict cues, number- and negation-aware claim support, key-content
coverage; English only (Chinese / Japanese content is not applicable); no model calls."""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from itertools import permutations
from typing import Any

from core.language import cjk_language
from core.scoring import reference  # module import: core.scoring.reference imports this package
from core.scoring.judges.base import (
    UNJUDGED_REASON,
    ConstraintMode,
    ConstraintOutcome,
    ConstraintView,
    ContextClaimsOutcome,
    DocumentView,
    JudgeInput,
    MetricOutcome,
    coverage_outcome,
    faithfulness_outcome,
)
from core.scoring.judges.refusal import MIN_CLAIM_TOKENS, claim_size, detect_refusal
from core.scoring.judges.text import (
    WORD_RE,
    clauses,
    conflict_matches,
    content_words,
    key_terms,
    meaning_words,
    negated,
    numbers,
    overlap,
    plain,
    quantities,
    quantity_found,
    refusal_matches,
    sentences,
    spelled_quantities,
    tokens,
)

SUPPORT_THRESHOLD = 0.5
FIGURE_ANCHOR_OVERLAP = 0.34
COLON_SPLIT_RE = re.compile(r":\s+")
IDENTIFIER_RE = re.compile(r"\b[a-z]+-[a-z0-9-]*\d[a-z0-9-]*", re.IGNORECASE)
COVER_SHARE = 0.5
FIGURES_SHARE = 0.5
WORDS_WITH_FIGURES = 0.25
WORDS_WITH_TERMS = 0.4
MIN_NEW_CONTENT = 2
NEGATION_MATCH = 0.5
CORE_CLAIMS = 3
MAX_SUPPLEMENTARY = 10
ANSWER_ROLES = ("supporting", "partial", "conflicting")
QUOTED_RE = re.compile(r"[\"“'‘]([^\"”'’]{8,})[\"”'’]")
METHOD = "heuristic"
UNSUPPORTED_LANGUAGE_REASON = "heuristic judge: unsupported for language zh/ja"
Quantity = tuple[str, str | None]


def plain_input(item: JudgeInput) -> JudgeInput:
    """The item with HTML markup taken out of the response and the documents (the rules read plain text)."""
    docs = [d.model_copy(update={"text": plain(d.text), "title": plain(d.title)}) for d in item.documents]
    return item.model_copy(update={"response": plain(item.response), "documents": docs})


def unsupported_language(item: JudgeInput) -> str | None:
    """'zh' or 'ja' when the response or the documents are mostly Chinese / Japanese script, else None."""
    return cjk_language(item.response) or cjk_language(" ".join(d.text for d in item.documents))


def language_outcome(language: str) -> MetricOutcome:
    """Not applicable: the lexical rules are English-only."""
    return MetricOutcome(status="not_applicable", reason=UNSUPPORTED_LANGUAGE_REASON, method=METHOD,
                         details={"language": language})


def doc_reference_patterns(index: int, doc: DocumentView) -> list[re.Pattern[str]]:
    """Ways a response may name a document: [k], doc/document/source k, its title or its id."""
    pats = [rf"\[{index}\]", rf"\b(?:doc(?:ument)?|source|passage|reference)\s*#?\s*{index}\b"]
    pats += [re.escape(s) for s in (doc.title.strip(), doc.doc_uid.strip()) if len(s) >= 4]
    return [re.compile(p, re.IGNORECASE) for p in pats]


def names_document(response: str, index: int, doc: DocumentView) -> bool:
    """True if `response` refers to document number `index` (1-based) by number, title or id."""
    return any(p.search(response) for p in doc_reference_patterns(index, doc))


SUMMARY_SPLIT_RE = re.compile(r"\s+(?:vs\.?|versus)\s+", re.IGNORECASE)
PAREN_RE = re.compile(r"\(([^()]*)\)")


def split_parentheticals(text: str) -> tuple[str, str]:
    """(text outside parentheses, text inside them), nested parentheses included."""
    inside = []
    while (m := PAREN_RE.search(text)) is not None:
        inside.append(m.group(1))
        text = text[: m.start()] + " " + text[m.end():]
    return text, " ".join(inside)


def summary_sides(summary: str) -> list[tuple[set[str], set[str]]]:
    """'topic: value A (source A) vs value B (source B)' -> per side (value markers only it states, source tokens)."""
    parts = SUMMARY_SPLIT_RE.split(summary or "")
    if len(parts) < 2:
        return []
    parts[0] = parts[0].rsplit(": ", 1)[-1]
    split = [split_parentheticals(p) for p in parts]
    sides = [(numbers(value) | tokens(value), tokens(source)) for value, source in split]
    shared = set.intersection(*(markers for markers, _ in sides))
    return [(markers - shared, source) for markers, source in sides]


def side_match(doc: DocumentView, side: tuple[set[str], set[str]]) -> int:
    """How well a summary side fits a document: its source words in the title/source, its values in the text."""
    markers, source = side
    return len(source & tokens(f"{doc.title} {doc.source}")) + len(markers & (tokens(doc.text) | numbers(doc.text)))


def summary_values(docs: list[DocumentView]) -> list[set[str]] | None:
    """Each document's side values from the group's conflict summary (best assignment), or None if it has no sides."""
    sides = summary_sides(docs[0].conflict_summary or "")
    if len(sides) != len(docs) or not all(markers for markers, _ in sides):
        return None
    best = max(permutations(sides), key=lambda order: sum(side_match(d, s) for d, s in zip(docs, order, strict=True)))
    return [markers for markers, _ in best]


def conflict_values(doc: DocumentView, others: list[DocumentView]) -> set[str]:
    """Figures stated by `doc` and by none of the other documents of its conflict group (narrowed by its summary)."""
    own = numbers(doc.text) - set().union(*(numbers(o.text) for o in others))
    in_summary = own & numbers(doc.conflict_summary or "")
    return in_summary or own


def group_values(docs: list[DocumentView]) -> list[set[str]]:
    """The values that identify each side of a conflict group: from its summary, else figures only that side states."""
    return summary_values(docs) or [conflict_values(d, [o for o in docs if o is not d]) for d in docs]


def conflict_evidence(item: JudgeInput) -> dict:
    """Conflict words, and per conflict group (whatever the roles) which sides the response names or quotes."""
    words = conflict_matches(item.response)
    said = numbers(item.response) | tokens(item.response)
    groups: dict[str, list[tuple[int, DocumentView]]] = {}
    for i, d in enumerate(item.documents, start=1):
        if d.conflict_group:
            groups.setdefault(d.conflict_group, []).append((i, d))
    sides: dict[str, dict[str, Any]] = {}
    for group, members in groups.items():
        docs = [d for _, d in members]
        valued = [d.doc_uid for d, values in zip(docs, group_values(docs), strict=True) if values & said]
        named = [d.doc_uid for i, d in members if names_document(item.response, i, d)]
        sides[group] = {"values_quoted": valued, "sources_named": named, "size": len(members)}
    both = any(len(s["values_quoted"]) >= 2 or len(s["sources_named"]) >= 2 for s in sides.values())
    return {"conflict_words": words, "groups": sides, "both_sides": both}


def has_conflict(documents: list[DocumentView]) -> bool:
    """True when two or more documents share a conflict group."""
    groups = [d.conflict_group for d in documents if d.conflict_group]
    return len(groups) > len(set(groups))


def response_claims(response: str) -> list[str]:
    """Response sentences that state something (not refusal sentences, at least 3 content words and figures)."""
    return [s for s in sentences(response) if not refusal_matches(s) and claim_size(s) >= MIN_CLAIM_TOKENS]


def claim_support(claim: str, doc_sentences: list[str]) -> tuple[float, list[str]]:
    """Best content-word overlap of the claim with any document sentence, and every sentence reaching it."""
    ct = meaning_words(claim)
    scored = [(overlap(ct, meaning_words(s)), s) for s in doc_sentences]
    best = max((score for score, _ in scored), default=0.0)
    return best, [s for score, s in scored if score == best] or [""]


def polarity_flip(claim: str, sentence: str) -> bool:
    """True if a clause of the claim matches a clause of `sentence` but only one of them is negated."""
    doc_clauses = [(content_words(c), negated(c)) for c in clauses(sentence)]
    parts = [c for c in clauses(claim) if len(content_words(c)) >= 2] or [claim]
    for part in parts:
        scored = [(overlap(content_words(part), words), neg) for words, neg in doc_clauses]
        best = max((score for score, _ in scored), default=0.0)
        if best >= NEGATION_MATCH and all(neg != negated(part) for score, neg in scored if score == best):
            return True
    return False


def document_quantities(documents: list[DocumentView]) -> set[Quantity]:
    """Every figure the documents state (titles included), in digits or in words."""
    texts = [f"{d.title}. {d.text}" for d in documents]
    return set().union(*(quantities(t) | spelled_quantities(t) for t in texts))


def anchored_support(claim: str, doc_sentences: list[str]) -> tuple[float, list[str]]:
    """Best overlap among the document sentences that state every figure of the claim, identifiers such as
    FS-2025-02 or KX-40 left out (0 when it has no figure)."""
    figures = quantities(IDENTIFIER_RE.sub(" ", claim))
    if not figures:
        return 0.0, [""]
    holders = [s for s in doc_sentences if all(quantity_found(q, quantities(s) | spelled_quantities(s)) for q in figures)]
    return claim_support(claim, holders) if holders else (0.0, [""])


def part_verdict(part: str, doc_sentences: list[str]) -> tuple[bool, str]:
    """A claim part is supported by word overlap >= 0.5, or >= 0.25 with a sentence stating all its figures, unless
    every best-matching sentence says the opposite (negation polarity)."""
    score, tops = claim_support(part, doc_sentences)
    needed = SUPPORT_THRESHOLD
    if score < SUPPORT_THRESHOLD and (anchored := anchored_support(part, doc_sentences))[0] >= FIGURE_ANCHOR_OVERLAP:
        (score, tops), needed = anchored, FIGURE_ANCHOR_OVERLAP
    if score < needed:
        return False, f"overlap {score:.2f} with: {tops[0][:160]}"
    agreeing = [s for s in tops if not polarity_flip(part, s)]
    if not agreeing:
        return False, f"negation differs from: {tops[0][:160]}"
    return True, f"overlap {score:.2f} with: {agreeing[0][:160]}"


def states_conflict(part: str, conflicted: bool) -> bool:
    """True for a part that only says the documents disagree (conflict words, no figures) when they do."""
    return conflicted and bool(conflict_matches(part)) and not quantities(part)


def claim_parts(claim: str) -> list[str]:
    """The clauses of a claim ('A says X, whereas B says Y'; 'The sources disagree: ...') with two content words+."""
    pieces = [c for part in COLON_SPLIT_RE.split(claim) for c in clauses(part)]
    return [p for p in pieces if len(content_words(p)) + len(quantities(p)) >= 2]


def split_verdict(claim: str, doc_sentences: list[str], conflicted: bool) -> tuple[bool, str] | None:
    """Each part of a multi-part claim checked on its own (a part stating the documents' conflict is true of them);
    None when the claim has a single part."""
    parts = [p for p in claim_parts(claim) if not states_conflict(p, conflicted)]
    if len(parts) < 2 and len(parts) == len(claim_parts(claim)):
        return None
    verdicts = [part_verdict(p, doc_sentences) for p in parts]
    failed = [why for ok, why in verdicts if not ok]
    return (not failed, f"{len(parts)} parts: {failed[0] if failed else verdicts[0][1] if verdicts else 'conflict'}")


def support_row(claim: str, doc_sentences: list[str], known: set[Quantity], conflicted: bool = False) -> dict:
    """A claim is supported when every figure it states is in the documents and its words match a document sentence
    (overlap >= 0.5, or >= 0.25 with a sentence stating all its figures) without the opposite negation; a claim that
    fails as a whole may pass part by part (conflict reports), and a sentence saying that documents which do conflict
    disagree is supported."""
    invented = sorted(f"{v} {u}".strip() for v, u in quantities(claim) if not quantity_found((v, u), known))
    if invented:
        return {"claim": claim, "supported": False, "reason": f"invented number(s) {', '.join(invented)}: in no document"}
    if states_conflict(claim, conflicted) and not split_verdict(claim, doc_sentences, conflicted):
        return {"claim": claim, "supported": True, "reason": "states the conflict the documents carry"}
    ok, reason = part_verdict(claim, doc_sentences)
    if not ok and (split := split_verdict(claim, doc_sentences, conflicted)) is not None and split[0]:
        ok, reason = split
    return {"claim": claim, "supported": ok, "reason": reason}


def share(hits: list[bool]) -> float | None:
    """Share of True in `hits`, None when empty."""
    return sum(hits) / len(hits) if hits else None


def new_content(sentence: str, query: str) -> tuple[frozenset[str], frozenset[Quantity], frozenset[str]]:
    """What a sentence says beyond the question: its content words, figures and named terms the query lacks."""
    asked_words, asked_figures = content_words(query), quantities(query)
    asked_terms = key_terms(query) | {w.lower() for w in WORD_RE.findall(query)}
    return (content_words(sentence) - asked_words, quantities(sentence) - asked_figures,
            key_terms(sentence) - asked_terms)


def coverage_row(claim: str, query: str, words: AbstractSet[str], figures: AbstractSet[Quantity],
                 terms: AbstractSet[str]) -> dict:
    """A context claim is covered when the response has what it adds to the question: >= 0.5 of its figures and of its
    named terms, plus some of its words (0.25 with figures, 0.4 with named terms only, else 0.5). Echoing the question
    or sharing the topic's vocabulary is not enough; a near-miss with other figures is not either."""
    new_words, new_figures, new_terms = new_content(claim, query)
    shares = {"words": share([w in words for w in new_words]),
              "figures": share([quantity_found(q, figures) for q in new_figures]),
              "terms": share([t in terms for t in new_terms])}
    need = WORDS_WITH_FIGURES if new_figures else WORDS_WITH_TERMS if new_terms else COVER_SHARE
    key_ok = (shares["figures"] is None or shares["figures"] > FIGURES_SHARE) and (
        shares["terms"] is None or shares["terms"] >= COVER_SHARE)
    words_ok = shares["words"] is None or shares["words"] >= need
    ok = any(v is not None for v in shares.values()) and key_ok and words_ok
    reason = ", ".join(f"{k} {v:.2f}" for k, v in shares.items() if v is not None) or "nothing beyond the question"
    return {"claim": claim, "covered": ok, "reason": reason}


def rank_context_sentences(query: str, documents: list[DocumentView]) -> list[tuple[float, str]]:
    """Answer-bearing documents' sentences that add to the question, ranked by content-word overlap with it."""
    qt = content_words(query)
    cands = [s for d in documents if d.role in ANSWER_ROLES for s in sentences(d.text)
             if claim_size(s) >= MIN_CLAIM_TOKENS and sum(map(len, new_content(s, query))) >= MIN_NEW_CONTENT]
    scored = [(len(qt & content_words(s)) / (max(len(content_words(s)), 1) ** 0.5), s) for s in dict.fromkeys(cands)]
    return sorted(scored, key=lambda x: -x[0])


class HeuristicJudge:
    """Offline judge labelled 'heuristic': cheap, deterministic, measured against gold labels like any other judge."""

    name = "heuristic"

    async def judge_constraints(
        self, item: JudgeInput, constraints: list[ConstraintView], mode: ConstraintMode
    ) -> list[ConstraintOutcome]:
        """Judge the sub-dimensions lexical rules can assess; the rest are 'not_applicable' (unjudged)."""
        item = plain_input(item)
        return [self.judge_constraint(item, c) for c in constraints]

    def judge_constraint(self, item: JudgeInput, c: ConstraintView) -> ConstraintOutcome:
        """One constraint: knowledge_gap (gap mode), conflict_handling (conflict mode), citation; else unjudged."""
        if c.sub_dimension == "knowledge_gap" and item.mode == "gap":
            return self._gap_constraint(item, c)
        if c.sub_dimension == "conflict_handling" and item.mode == "conflict":
            if language := unsupported_language(item):
                return self._unsupported(c, language)
            ev = conflict_evidence(item)
            ok = bool(ev["conflict_words"]) and ev["both_sides"]
            why = "conflict named with both sides" if ok else "no conflict wording with both sides named or quoted"
            return ConstraintOutcome(cid=c.cid, passed=ok, reason=why, method=METHOD, details=ev)
        if c.sub_dimension == "citation":
            named = [d.doc_uid for i, d in enumerate(item.documents, start=1) if names_document(item.response, i, d)]
            why = f"documents referenced: {', '.join(named)}" if named else "no document reference found"
            return ConstraintOutcome(cid=c.cid, passed=bool(named), reason=why, method=METHOD, details={"referenced": named})
        return ConstraintOutcome(cid=c.cid, status="not_applicable", reason=UNJUDGED_REASON, method=METHOD)

    def _unsupported(self, c: ConstraintView, language: str) -> ConstraintOutcome:
        return ConstraintOutcome(cid=c.cid, status="not_applicable", reason=UNSUPPORTED_LANGUAGE_REASON, method=METHOD,
                                 details={"language": language})

    def _gap_constraint(self, item: JudgeInput, c: ConstraintView) -> ConstraintOutcome:
        quoted = QUOTED_RE.findall(f"{c.text} {c.criterion or ''}")
        if quoted:
            phrase = quoted[0].strip().rstrip(".").lower()
            ok = phrase in item.response.lower()
            return ConstraintOutcome(cid=c.cid, passed=ok, method=METHOD, details={"phrase": phrase},
                                     reason=f"required phrase {'present' if ok else 'absent'}: {phrase!r}")
        refused, phrases = detect_refusal(item.response)  # English, Chinese and Japanese cues
        why = f"refusal phrases: {phrases}" if refused else "no refusal of the unanswerable question"
        return ConstraintOutcome(cid=c.cid, passed=refused, reason=why, method=METHOD, details={"phrases": phrases})

    async def context_claims(self, item: JudgeInput) -> ContextClaimsOutcome:
        """Core = the answer-bearing sentences most similar to the query (top 3); supplementary = the next 10."""
        item = plain_input(item)
        ranked = [s for score, s in rank_context_sentences(item.query, item.documents)]
        supplementary = ranked[CORE_CLAIMS: CORE_CLAIMS + MAX_SUPPLEMENTARY]
        return ContextClaimsOutcome(core=ranked[:CORE_CLAIMS], supplementary=supplementary)

    async def faithfulness(self, item: JudgeInput) -> MetricOutcome:
        """Sentences as claims; supported by words (overlap >= 0.5), figures (none invented) and negation polarity."""
        item = plain_input(item)
        if language := unsupported_language(item):
            return language_outcome(language)
        doc_sents = [s for d in item.documents for s in sentences(d.text)]
        known = document_quantities(item.documents)
        conflicted = has_conflict(item.documents)
        rows = [support_row(c, doc_sents, known, conflicted) for c in response_claims(item.response)]
        return faithfulness_outcome(rows, METHOD)

    async def coverage(self, item: JudgeInput, claims: ContextClaimsOutcome) -> MetricOutcome:
        """A context claim is covered when the response has half its content words and half its key content."""
        item = plain_input(item)
        if language := unsupported_language(item):
            return language_outcome(language)
        words, figures = content_words(item.response), quantities(item.response) | spelled_quantities(item.response)
        terms = {t.lower() for t in WORD_RE.findall(item.response)}

        def rows(cs: list[str]) -> list[dict]:
            return [coverage_row(c, item.query, words, figures, terms) for c in cs]

        return coverage_outcome(rows(claims.core), rows(claims.supplementary), METHOD)

    async def rejection(self, item: JudgeInput) -> MetricOutcome:
        """1 if the response is a refusal overall (refusal phrases and no answer, or mostly refusal), else 0.

        Works for English, Chinese and Japanese (core.scoring.judges.text refusal cues)."""
        item = plain_input(item)
        refused, phrases = detect_refusal(item.response)
        why = f"refusal phrases: {phrases}" if refused else "answers instead of stating the documents lack the answer"
        if phrases and not refused:
            why = f"answers, with caveats {phrases}: not an abstention"
        return MetricOutcome(value=float(refused), passed=refused, reason=why, method=METHOD,
                             details={"phrases": phrases})

    async def refusal(self, item: JudgeInput) -> MetricOutcome:
        """Same lexical refusal detection, used for over-abstention on noisy instances."""
        return await self.rejection(item)

    async def conflict_recognition(self, item: JudgeInput) -> MetricOutcome:
        """1 only with conflict wording AND both sides' values quoted or both sources named."""
        item = plain_input(item)
        if language := unsupported_language(item):
            return language_outcome(language)
        ev = conflict_evidence(item)
        ok = bool(ev["conflict_words"]) and ev["both_sides"]
        if ok:
            why = f"conflict words {ev['conflict_words']} with both sides named or quoted"
        elif ev["conflict_words"]:
            why = "conflict words present but both sides are not named or quoted"
        else:
            why = "no conflict wording"
        return MetricOutcome(value=float(ok), passed=ok, reason=why, method=METHOD, details=ev)

    async def correctness(self, item: JudgeInput) -> MetricOutcome:
        """Correctness as exact-match containment against the reference: 1 when exact_match is 1, else 0; on an
        abstention ('unanswerable') reference, 1 when the response is a refusal overall (rejection), else 0."""
        if item.reference is not None and item.reference.answer_type == "unanswerable":
            out = _reference_outcome("rejection", item)
            return out if out.status != "ok" else out.model_copy(update={
                "method": METHOD, "reason": f"heuristic: correctness on an abstention reference = refusal ({out.reason})"})
        out = _reference_outcome("exact_match", item)
        if out.status not in ("ok", "unparseable"):  # an unread answer is not correct: 0, its reading in details
            return out
        ok = out.status == "ok" and out.value == 1.0
        return MetricOutcome(value=float(ok), passed=ok, method=METHOD, details={"exact_match": out.value, **out.details},
                             reason=f"heuristic: correctness = exact-match containment ({out.reason})")

    async def consistency(self, item: JudgeInput) -> MetricOutcome:
        """Consistency as token F1 against the reference answer (SQuAD words, or characters for zh/ja)."""
        out = _reference_outcome("token_f1", item)
        if out.status != "ok":
            return out
        return out.model_copy(update={"method": METHOD, "reason": f"heuristic: consistency = token F1 ({out.reason})"})


def _reference_outcome(metric: str, item: JudgeInput) -> MetricOutcome:
    """A reference metric of the item (not_applicable without a reference), labelled as the heuristic judge's."""
    if item.reference is None:
        return MetricOutcome(status="not_applicable", reason="no reference answer", method=METHOD)
    out = reference.reference_metric(metric, item.reference, plain(item.response), item.language)
    return out if out.status == "ok" else out.model_copy(update={"method": METHOD, "reason": f"heuristic: {out.reason}"})
