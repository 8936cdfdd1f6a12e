"""The offline `heuristic` judge: lexical refusal / conflict cues and token-overlap claim support; no model calls."""

from __future__ import annotations

import re
from itertools import permutations

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
from core.scoring.judges.text import conflict_matches, numbers, overlap, refusal_matches, sentences, tokens

SUPPORT_THRESHOLD = 0.5
COVER_THRESHOLD = 0.5
MIN_CLAIM_TOKENS = 3
CORE_CLAIMS = 3
MAX_SUPPLEMENTARY = 10
ANSWER_ROLES = ("supporting", "partial", "conflicting")
QUOTED_RE = re.compile(r"[\"“'‘]([^\"”'’]{8,})[\"”'’]")
METHOD = "heuristic"


def detect_refusal(response: str) -> tuple[bool, list[str]]:
    """A response is a refusal when a refusal phrase opens it (first two sentences) or fills half its sentences."""
    sents = sentences(response)
    hits = [s for s in sents if refusal_matches(s)]
    if not hits:
        return False, []
    leading = any(refusal_matches(s) for s in sents[:2])
    phrases = [p for s in hits for p in refusal_matches(s)]
    return leading or 2 * len(hits) >= len(sents), phrases


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
    sides = {}
    for group, members in groups.items():
        docs = [d for _, d in members]
        valued = [d.doc_uid for d, values in zip(docs, group_values(docs), strict=True) if values & said]
        named = [d.doc_uid for i, d in members if names_document(item.response, i, d)]
        sides[group] = {"values_quoted": valued, "sources_named": named, "size": len(members)}
    both = any(len(s["values_quoted"]) >= 2 or len(s["sources_named"]) >= 2 for s in sides.values())
    return {"conflict_words": words, "groups": sides, "both_sides": both}


def response_claims(response: str) -> list[str]:
    """Response sentences that state something (not refusal sentences, at least 3 content tokens)."""
    return [s for s in sentences(response) if not refusal_matches(s) and len(tokens(s)) >= MIN_CLAIM_TOKENS]


def claim_support(claim: str, doc_sentences: list[str]) -> tuple[float, str]:
    """Best token overlap of the claim with any document sentence, and that sentence."""
    ct = tokens(claim)
    scored = [(overlap(ct, tokens(s)), s) for s in doc_sentences] or [(0.0, "")]
    return max(scored, key=lambda x: x[0])


def rank_context_sentences(query: str, documents: list[DocumentView]) -> list[tuple[float, str]]:
    """Answer-bearing documents' sentences ranked by token overlap with the query (ties keep document order)."""
    qt = tokens(query)
    cands = [s for d in documents if d.role in ANSWER_ROLES for s in sentences(d.text) if len(tokens(s)) >= MIN_CLAIM_TOKENS]
    scored = [(len(qt & tokens(s)) / (len(tokens(s)) ** 0.5), s) for s in dict.fromkeys(cands)]
    return sorted(scored, key=lambda x: -x[0])


class HeuristicJudge:
    """Offline judge labelled 'heuristic': cheap, deterministic, measured against gold labels like any other judge."""

    name = "heuristic"

    async def judge_constraints(
        self, item: JudgeInput, constraints: list[ConstraintView], mode: ConstraintMode
    ) -> list[ConstraintOutcome]:
        """Judge the sub-dimensions lexical rules can assess; the rest are 'not_applicable' (unjudged)."""
        return [self.judge_constraint(item, c) for c in constraints]

    def judge_constraint(self, item: JudgeInput, c: ConstraintView) -> ConstraintOutcome:
        """One constraint: knowledge_gap (gap mode), conflict_handling (conflict mode), citation; else unjudged."""
        if c.sub_dimension == "knowledge_gap" and item.mode == "gap":
            return self._gap_constraint(item, c)
        if c.sub_dimension == "conflict_handling" and item.mode == "conflict":
            ev = conflict_evidence(item)
            ok = bool(ev["conflict_words"]) and ev["both_sides"]
            why = "conflict named with both sides" if ok else "no conflict wording with both sides named or quoted"
            return ConstraintOutcome(cid=c.cid, passed=ok, reason=why, method=METHOD, details=ev)
        if c.sub_dimension == "citation":
            named = [d.doc_uid for i, d in enumerate(item.documents, start=1) if names_document(item.response, i, d)]
            why = f"documents referenced: {', '.join(named)}" if named else "no document reference found"
            return ConstraintOutcome(cid=c.cid, passed=bool(named), reason=why, method=METHOD, details={"referenced": named})
        return ConstraintOutcome(cid=c.cid, status="not_applicable", reason=UNJUDGED_REASON, method=METHOD)

    def _gap_constraint(self, item: JudgeInput, c: ConstraintView) -> ConstraintOutcome:
        quoted = QUOTED_RE.findall(f"{c.text} {c.criterion or ''}")
        if quoted:
            phrase = quoted[0].strip().rstrip(".").lower()
            ok = phrase in item.response.lower()
            return ConstraintOutcome(cid=c.cid, passed=ok, method=METHOD, details={"phrase": phrase},
                                     reason=f"required phrase {'present' if ok else 'absent'}: {phrase!r}")
        refused, phrases = detect_refusal(item.response)
        why = f"refusal phrases: {phrases}" if refused else "no refusal of the unanswerable question"
        return ConstraintOutcome(cid=c.cid, passed=refused, reason=why, method=METHOD, details={"phrases": phrases})

    async def context_claims(self, item: JudgeInput) -> ContextClaimsOutcome:
        """Core = the answer-bearing sentences most similar to the query (top 3); supplementary = the next 10."""
        ranked = [s for score, s in rank_context_sentences(item.query, item.documents)]
        return ContextClaimsOutcome(core=ranked[:CORE_CLAIMS], supplementary=ranked[CORE_CLAIMS: CORE_CLAIMS + MAX_SUPPLEMENTARY])

    async def faithfulness(self, item: JudgeInput) -> MetricOutcome:
        """Sentences as claims; supported if token overlap with the best document sentence >= 0.5."""
        doc_sents = [s for d in item.documents for s in sentences(d.text)]
        rows = []
        for claim in response_claims(item.response):
            score, best = claim_support(claim, doc_sents)
            rows.append({"claim": claim, "supported": score >= SUPPORT_THRESHOLD,
                         "reason": f"overlap {score:.2f} with: {best[:160]}"})
        return faithfulness_outcome(rows, METHOD)

    async def coverage(self, item: JudgeInput, claims: ContextClaimsOutcome) -> MetricOutcome:
        """A context claim is covered when >= 0.5 of its tokens appear in the response."""
        rt = tokens(item.response)

        def rows(cs: list[str]) -> list[dict]:
            return [{"claim": c, "covered": overlap(tokens(c), rt) >= COVER_THRESHOLD,
                     "reason": f"overlap {overlap(tokens(c), rt):.2f}"} for c in cs]

        return coverage_outcome(rows(claims.core), rows(claims.supplementary), METHOD)

    async def rejection(self, item: JudgeInput) -> MetricOutcome:
        """1 if the response reads as a refusal (refusal phrase leading or dominant), else 0."""
        refused, phrases = detect_refusal(item.response)
        why = f"refusal phrases: {phrases}" if refused else "answers instead of stating the documents lack the answer"
        return MetricOutcome(value=float(refused), passed=refused, reason=why, method=METHOD, details={"phrases": phrases})

    async def refusal(self, item: JudgeInput) -> MetricOutcome:
        """Same lexical refusal detection, used for over-abstention on noisy instances."""
        return await self.rejection(item)

    async def conflict_recognition(self, item: JudgeInput) -> MetricOutcome:
        """1 only with conflict wording AND both sides' values quoted or both sources named."""
        ev = conflict_evidence(item)
        ok = bool(ev["conflict_words"]) and ev["both_sides"]
        if ok:
            why = f"conflict words {ev['conflict_words']} with both sides named or quoted"
        elif ev["conflict_words"]:
            why = "conflict words present but both sides are not named or quoted"
        else:
            why = "no conflict wording"
        return MetricOutcome(value=float(ok), passed=ok, reason=why, method=METHOD, details=ev)
