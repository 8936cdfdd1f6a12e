"""Render the bundled fictional corpus and query sets from hand-written topic clusters.

Every organisation, person, statute, product and number below is invented. Each cluster holds
the facts of one topic; it is rendered as five documents:
  main     - the authoritative document (supports the cluster's query)
  brief    - a table/HTML digest of the same facts (also supports it)
  old      - an earlier copy with different values (natural contradictory material)
  near     - same organisation, neighbouring topic (near-miss: looks relevant, does not answer)
  partial  - on-topic but without the key facts (related but insufficient)
Each cluster also yields two queries: one answered by main/brief, one the corpus cannot answer.

Run:  python data/corpus/_author.py   (writes data/corpus/*.jsonl and data/queries/*.jsonl)
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _clusters_a import ENERGY, MEDICAL, LEGAL  # noqa: E402
from _clusters_b import FINANCIAL, PARTY, WEB  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

DOMAINS = {
    "energy": ("Energy", ENERGY),
    "medical": ("Medical", MEDICAL),
    "legal": ("Legal", LEGAL),
    "financial": ("Financial", FINANCIAL),
    "party_building": ("Party Building", PARTY),
    "web_search": ("Web Search", WEB),
}

FRAMES = {
    "energy": {
        "src": ["Northmere Energy document control", "Northmere Energy operations wiki", "Field services bulletin"],
        "intro": [
            "Document owner: Asset Management. Applies to all Northmere Energy contractors and staff.",
            "This procedure is controlled; printed copies are for reference only.",
            "Issued by the Operations Engineering office following the quarterly procedure review.",
        ],
        "outro": [
            "Deviations must be logged in the maintenance management system before work resumes.",
            "Questions about this procedure go to the duty engineer on the operations desk.",
            "Site supervisors confirm at the start of each shift that crews have read this revision.",
        ],
        "old_src": "Regional depot shared drive (local copy)",
    },
    "medical": {
        "src": ["St. Aldric Regional Hospital policy library", "St. Aldric clinical governance", "Ward handbook"],
        "intro": [
            "Clinical policy. Review cycle: two years or sooner if practice changes.",
            "Approved by the Drugs and Therapeutics Committee for use across all adult wards.",
            "This guidance supports, and does not replace, clinical judgement.",
        ],
        "outro": [
            "Incidents related to this policy are reported through the hospital safety portal.",
            "Staff unsure how to apply this guidance should contact the on-call registrar.",
            "Audit of compliance is carried out by the clinical governance team each quarter.",
        ],
        "old_src": "Ward 7 printed folder (scanned)",
    },
    "legal": {
        "src": ["Veloria Official Gazette", "Veloria Legal Information Service", "Ministry of Justice circular"],
        "intro": [
            "Consolidated text as published by the Legal Information Service of the Republic of Veloria.",
            "Official publication. In case of discrepancy the Gazette print edition prevails.",
            "Explanatory circular prepared for courts, tribunals and practitioners.",
        ],
        "outro": [
            "Transitional provisions are set out in the closing articles of the act.",
            "This summary does not constitute legal advice.",
            "Amendments adopted after the consolidation date are not reflected here.",
        ],
        "old_src": "Law firm knowledge base (archived note)",
    },
    "financial": {
        "src": ["Corvane Capital investor relations", "Corvane Capital research desk", "Issuer filing"],
        "intro": [
            "For professional investors. Figures are unaudited unless stated otherwise.",
            "Prepared by the research desk from issuer disclosures and fund administrator data.",
            "This document forms part of the periodic disclosure package.",
        ],
        "outro": [
            "Past performance is not a reliable indicator of future results.",
            "Figures are rounded; totals may not sum exactly.",
            "The full prospectus and key information document are available on request.",
        ],
        "old_src": "Broker research archive",
    },
    "party_building": {
        "src": ["Greenhollow Civic Association rulebook", "Greenhollow secretariat notice", "Council minutes"],
        "intro": [
            "Adopted by the General Assembly of the Greenhollow Civic Association.",
            "Issued by the Secretariat for all branches and working groups.",
            "Extract from the governance handbook, maintained by the Rules Committee.",
        ],
        "outro": [
            "Branch secretaries should circulate this text to all members.",
            "Questions on interpretation are referred to the Rules Committee.",
            "This rule takes precedence over any conflicting branch bylaw.",
        ],
        "old_src": "Branch newsletter archive",
    },
    "web_search": {
        "src": ["brightwater-daily.example", "techpulse-reviews.example", "official product page"],
        "intro": [
            "Published by the newsroom. Updated as new information becomes available.",
            "Product page content, maintained by the manufacturer.",
            "Staff report.",
        ],
        "outro": [
            "Readers can send corrections to the newsroom desk.",
            "Specifications may vary by region.",
            "This article will be updated if the organisers release further details.",
        ],
        "old_src": "aggregator-mirror.example (cached copy)",
    },
}


def _pick(options: list[str], key: str) -> str:
    digest = int(hashlib.sha256(key.encode()).hexdigest(), 16)
    return options[digest % len(options)]


def _fill(template: str, facts: list[tuple[str, str, str, str]], use_old: bool) -> str:
    values = {slot: (old if use_old else new) for _, slot, new, old in facts}
    text = template.format(**values)
    return text[:1].upper() + text[1:]


def _doc(domain: str, doc_id: str, title: str, text: str, source: str, ctype: str, cluster: str, kind: str) -> dict:
    return {
        "doc_id": doc_id,
        "domain": domain,
        "title": title,
        "text": text,
        "source": source,
        "content_type": ctype,
        "cluster": cluster,
        "kind": kind,
    }


def _brief(c: dict, frames: dict, idx: int) -> tuple[str, str]:
    rows = [(label, new) for label, _, new, _ in c["facts"]]
    if idx % 2 == 0:
        lines = [f"Key facts: {c['title']}", "", "| Item | Value |", "| --- | --- |"]
        lines += [f"| {label} | {value} |" for label, value in rows]
        lines += ["", _pick(frames["outro"], c["slug"] + "b")]
        return "\n".join(lines), "markdown"
    items = "".join(f"<li><b>{label}:</b> {value}</li>" for label, value in rows)
    html = (
        f"<html><head><title>{c['title']}</title><style>li{{margin:2px}}</style></head><body>"
        f"<h2>{c['title']} - summary</h2><p>{c['entity']}.</p><ul>{items}</ul>"
        f"<p>{_pick(frames['outro'], c['slug'] + 'h')}</p><script>trackView()</script></body></html>"
    )
    return html, "html"


def render_cluster(domain: str, c: dict, frames: dict, idx: int) -> list[dict]:
    """Five documents for one cluster."""
    base = f"{domain[:3]}-{c['slug']}"
    intro = _pick(frames["intro"], c["slug"])
    outro = _pick(frames["outro"], c["slug"])
    main = f"{intro}\n\n{_fill(c['main'], c['facts'], False)}\n\n{outro}"
    old = f"{_fill(c['main'], c['facts'], True)}\n\n{_pick(frames['outro'], c['slug'] + 'o')}"
    brief_text, brief_type = _brief(c, frames, idx)
    src = frames["src"]
    return [
        _doc(domain, f"{base}-main", c["title"], main, src[idx % len(src)], "text", c["slug"], "main"),
        _doc(domain, f"{base}-brief", f"{c['title']} (summary)", brief_text, src[(idx + 1) % len(src)],
             brief_type, c["slug"], "brief"),
        _doc(domain, f"{base}-old", c["title"], old, frames["old_src"], "text", c["slug"], "old"),
        _doc(domain, f"{base}-near", c["near_title"], c["near"], src[(idx + 2) % len(src)], "text", c["slug"],
             "near"),
        _doc(domain, f"{base}-partial", c["partial_title"], c["partial"], src[idx % len(src)], "text", c["slug"],
             "partial"),
    ]


def render_queries(domain: str, c: dict, idx: int) -> list[dict]:
    """The answerable and the unanswerable query of one cluster."""
    base = f"{domain[:3]}-{c['slug']}"
    values = {slot: new for _, slot, new, _ in c["facts"]}
    olds = {slot: old for _, slot, _, old in c["facts"]}
    return [
        {
            "query_id": f"{base}-q1",
            "domain": domain,
            "query": c["q"],
            "answerable": True,
            "answer_facts": [values[s] for s in c["ans"]],
            "supporting_doc_ids": [f"{base}-main", f"{base}-brief"],
            "conflicting_doc_ids": [f"{base}-old"] if any(values[s] != olds[s] for s in c["ans"]) else [],
            "related_doc_ids": [f"{base}-partial", f"{base}-near"],
        },
        {
            "query_id": f"{base}-q2",
            "domain": domain,
            "query": c["gq"],
            "answerable": False,
            "answer_facts": [],
            "gap_probe": c["probe"],
            "supporting_doc_ids": [],
            "conflicting_doc_ids": [],
            "related_doc_ids": [f"{base}-main", f"{base}-partial", f"{base}-near"],
        },
    ]


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.lower())


def check_gap_probes(docs: list[dict], queries: list[dict]) -> list[str]:
    """Problems: an unanswerable query whose probe terms all occur together in one document."""
    problems = []
    for q in queries:
        probe = [_norm(p) for p in q.get("gap_probe", [])]
        for d in docs if probe else []:
            if all(p in _norm(d["title"] + " " + d["text"]) for p in probe):
                problems.append(f"{q['query_id']} answered by {d['doc_id']}")
    return problems


def main() -> None:
    for domain, (_, clusters) in DOMAINS.items():
        frames = FRAMES[domain]
        docs = [d for i, c in enumerate(clusters) for d in render_cluster(domain, c, frames, i)]
        queries = [q for i, c in enumerate(clusters) for q in render_queries(domain, c, i)]
        problems = check_gap_probes(docs, queries)
        if problems:
            raise SystemExit("gap probes answered: " + "; ".join(problems))
        for q in queries:
            main_doc = next((d for d in docs if d["doc_id"] in q["supporting_doc_ids"]), None)
            missing = [f for f in q["answer_facts"] if main_doc and f not in main_doc["text"]]
            if missing:
                raise SystemExit(f"{q['query_id']}: answer facts not in main doc: {missing}")
        (ROOT / "data/corpus").mkdir(parents=True, exist_ok=True)
        (ROOT / "data/queries").mkdir(parents=True, exist_ok=True)
        with open(ROOT / f"data/corpus/{domain}.jsonl", "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(d, ensure_ascii=False) + "\n" for d in docs)
        with open(ROOT / f"data/queries/{domain}.jsonl", "w", encoding="utf-8") as fh:
            fh.writelines(json.dumps(q, ensure_ascii=False) + "\n" for q in queries)
        print(f"{domain}: {len(docs)} documents, {len(queries)} queries")


if __name__ == "__main__":
    main()
