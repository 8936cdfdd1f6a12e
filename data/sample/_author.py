"""Writes data/sample/enterprise_rag_sample.jsonl and domains.jsonl from the hand-written domain modules.

Run from the repo root:  python data/sample/_author.py
"""

from __future__ import annotations

import importlib
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

MODULES = ["_energy", "_medical", "_legal", "_financial", "_party", "_web"]

DOMAINS = [
    ("Energy", "Utility and power-generation operations: maintenance procedures, inspection intervals and "
     "equipment limits whose values drift between manual revisions, field bulletins and ERP migrations."),
    ("Medical", "Hospital clinical protocols, pharmacy guidance and discharge documentation; dosing, monitoring "
     "targets and treatment durations where precision and patient safety matter."),
    ("Legal", "Statutes and official guidance of a fictional jurisdiction (the Republic of Vessaria); questions "
     "that need the right act and article, with adjacent but inapplicable law mixed in."),
    ("Financial", "Fund prospectuses, factsheets, fee schedules and distribution policies of fictional asset "
     "managers; investor-facing answers that must quote exact figures and dates."),
    ("Party Building", "Governance and member-affairs rules of a fictional membership organisation (the "
     "Lindenmere Civic Association): bylaws, dues regulations, meeting and election procedures, circulars."),
    ("Web Search", "Fresh web content about fictional products, cities and services: press releases, news "
     "articles, product pages and forum posts of uneven credibility and age."),
]


def build() -> list[dict]:
    rows: list[dict] = []
    for name in MODULES:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as exc:  # a domain not written yet
            if exc.name != name:
                raise
            print(f"skipping {name}")
            continue
        rows.extend(mod.INSTANCES)
    return rows


def main() -> None:
    rows = build()
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), "duplicate instance ids"
    # same doc_id must mean identical text everywhere
    seen: dict[str, tuple] = {}
    for r in rows:
        for d in r["documents"]:
            key = (d["title"], d["text"], d["source"], d["content_type"])
            assert seen.setdefault(d["doc_id"], key) == key, f"doc {d['doc_id']} differs between instances"
    with open(HERE / "enterprise_rag_sample.jsonl", "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    with open(HERE / "domains.jsonl", "w", encoding="utf-8") as f:
        for name, desc in DOMAINS:
            f.write(json.dumps({"name": name, "description": desc}, ensure_ascii=False) + "\n")
    print(f"wrote {len(rows)} instances")


if __name__ == "__main__":
    main()
