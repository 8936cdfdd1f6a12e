"""Small helpers for hand-authoring the sample benchmark.

The helpers only assemble dicts (constraint ids, document roles); every query,
document text and constraint text is written by hand in the per-domain modules.
"""

from __future__ import annotations

from typing import Any


def D(doc_id: str, title: str, source: str, text: str, content_type: str = "text") -> dict[str, Any]:
    """A document in a domain pool (role is assigned per instance)."""
    return {
        "doc_id": doc_id,
        "title": title,
        "source": source,
        "text": " ".join(text.split()) if content_type == "text" else text.strip(),
        "content_type": content_type,
    }


def use(pool: dict[str, dict], doc_id: str, role: str, group: str | None = None, summary: str | None = None) -> dict:
    d = dict(pool[doc_id])
    d["role"] = role
    if group:
        d["conflict_group"] = group
        d["conflict_summary"] = summary
    return d


def C(
    text: str,
    category: str,
    sub: str,
    *,
    rule: str | None = None,
    kw: dict | None = None,
    crit: str | None = None,
    pre: str | None = None,
) -> dict[str, Any]:
    c: dict[str, Any] = {
        "text": text,
        "category": category,
        "sub_dimension": sub,
        "judge_method": "rule" if rule else "llm",
    }
    if rule:
        c["checker_id"] = rule
        c["checker_kwargs"] = kw or {}
    if crit:
        c["criterion"] = crit
    if pre:
        c["precondition"] = pre
    return c


# ---- recurring knowledge-interaction protocols (wording varies per call site) ----

def gap_phrase(phrase: str, lead: str = "If the documents do not contain the information needed to answer") -> dict:
    return C(
        f'{lead}, do not estimate or fill in from general knowledge; state exactly: "{phrase}"',
        "knowledge_protocol",
        "knowledge_gap",
        rule="enterprise:required_phrase",
        kw={"phrase": phrase},
        pre="gap",
    )


def conflict_both(subject: str) -> dict:
    return C(
        f"If the documents disagree about {subject}, do not decide which one is right: report both values "
        "and cite the document each value comes from.",
        "knowledge_protocol",
        "conflict_handling",
        crit=(
            f"Satisfied when the response explicitly says the sources disagree about {subject}, states both "
            "conflicting values, and attributes each value to its own document (by [doc N] reference or title). "
            "Not satisfied if it reports only one value, silently picks one, averages or merges them, or invents "
            "a reconciliation the documents do not state. Auto-satisfied when the documents contain no such "
            "contradiction."
        ),
        pre="conflict",
    )


def cite_docs(min_distinct: int, text: str | None = None) -> dict:
    return C(
        text
        or f'Back every factual statement with a bracketed document reference such as "[doc 3]"; '
        f"reference at least {min_distinct} different document(s).",
        "knowledge_protocol",
        "citation",
        rule="enterprise:citation_count",
        kw={"pattern": "doc_ref", "min_distinct": min_distinct},
    )


def hedge(words: list[str], text: str | None = None) -> dict:
    quoted = ", ".join(f'"{w}"' for w in words)
    return C(
        text or f"Avoid over-confident wording: do not use {quoted}.",
        "knowledge_protocol",
        "uncertainty",
        rule="enterprise:forbidden_phrases",
        kw={"phrases": words},
    )


def no_emoji() -> dict:
    return C("Do not use any emoji.", "output", "negative", rule="enterprise:no_emoji", kw={})


def inst(
    iid: str,
    domain: str,
    query: str,
    mode: str,
    origin: str,
    constraints: list[dict],
    documents: list[dict],
    notes: str | None = None,
) -> dict[str, Any]:
    cons = []
    for i, c in enumerate(constraints, 1):
        c = dict(c)
        c["id"] = f"c{i}"
        cons.append(c)
    out: dict[str, Any] = {
        "id": iid,
        "domain": domain,
        "query": query,
        "mode": mode,
        "origin": origin,
        "protocol": "enterprise_rag",
        "status": "unverified",
        "version": 1,
        "constraints": cons,
        "documents": documents,
        "metadata": {},
    }
    if notes:
        out["metadata"]["answer_notes"] = notes
    return out
