"""Validates the sample set and prints its distribution.  Run: .venv/bin/python data/sample/_check.py"""

from __future__ import annotations

import collections
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from core.store.schema import DomainSpec, InstanceSpec  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
rows = [InstanceSpec.model_validate_json(line) for line in open(HERE / "enterprise_rag_sample.jsonl", encoding="utf-8")]
doms = [DomainSpec.model_validate_json(line) for line in open(HERE / "domains.jsonl", encoding="utf-8")]
print(f"{len(rows)} instances, {len(doms)} domains")

grid = collections.Counter((r.domain, r.mode) for r in rows)
for d in doms:
    print(f"  {d.name:15s}", {m: grid[(d.name, m)] for m in ("noisy", "gap", "conflict")})
print("origin:", collections.Counter((r.mode, r.origin) for r in rows))
n_c = [len(r.constraints) for r in rows]
print(f"constraints/instance: avg {sum(n_c)/len(n_c):.2f} min {min(n_c)} max {max(n_c)}")
cat = collections.Counter(c.category for r in rows for c in r.constraints)
print("per category (avg):", {k: round(v / len(rows), 2) for k, v in cat.items()})
print("sub-dims:", dict(collections.Counter(c.sub_dimension for r in rows for c in r.constraints)))
print("checkers:", dict(collections.Counter(c.checker_id for r in rows for c in r.constraints if c.checker_id)))
ctype = collections.Counter()
problems = []
for r in rows:
    names = {d.name for d in doms}
    if r.domain not in names:
        problems.append(f"{r.id}: unknown domain {r.domain}")
    if not 6 <= len(r.constraints) <= 10:
        problems.append(f"{r.id}: {len(r.constraints)} constraints")
    meth = {c.judge_method for c in r.constraints}
    if meth != {"rule", "llm"}:
        problems.append(f"{r.id}: judge methods {meth}")
    if {c.category for c in r.constraints} != {"persona", "output", "knowledge_protocol"}:
        problems.append(f"{r.id}: categories missing")
    pre = {c.precondition for c in r.constraints}
    if not {"gap", "conflict"} <= pre:
        problems.append(f"{r.id}: lacks a conditional protocol {pre}")
    lo, hi = {"noisy": (8, 12), "gap": (6, 10), "conflict": (6, 10)}[r.mode]
    if not lo <= len(r.documents) <= hi:
        problems.append(f"{r.id}: {len(r.documents)} documents")
    roles = [d.role for d in r.documents]
    if r.mode == "noisy" and "supporting" not in roles:
        problems.append(f"{r.id}: noisy without supporting doc")
    if r.mode == "conflict":
        groups = [d.conflict_group for d in r.documents if d.conflict_group]
        if len(groups) < 2 or not any(d.role == "supporting" and d.conflict_group for d in r.documents):
            problems.append(f"{r.id}: conflict group not set on both docs")
    ids = [d.doc_id for d in r.documents]
    if len(ids) != len(set(ids)):
        problems.append(f"{r.id}: duplicate doc ids")
    for d in r.documents:
        ctype[d.content_type] += 1
        words = len(re.sub(r"<[^>]+>", " ", d.text).split())
        if not 60 <= words <= 200:
            problems.append(f"{r.id}/{d.doc_id}: {words} words")
        if not d.source:
            problems.append(f"{r.id}/{d.doc_id}: no source")
print("content types (doc slots):", dict(ctype))
pos = collections.Counter()
for r in rows:
    if r.mode == "noisy":
        i = [d.role for d in r.documents].index("supporting")
        pos["first" if i == 0 else "last" if i == len(r.documents) - 1 else "middle"] += 1
print("supporting position in noisy:", dict(pos))
uniq = {d.doc_id for r in rows for d in r.documents}
print("distinct documents:", len(uniq))
print("PROBLEMS:" if problems else "no problems", *problems, sep="\n  ")
