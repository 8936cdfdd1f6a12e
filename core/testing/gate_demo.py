"""A scripted gate demo for tests and the worked examples: a small reference-QA benchmark and fake-server scripts for
a good model (every answer right) and a bad one (a share of the answers wrong)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml


def question(i: int) -> str:
    """The query of item i (the fake server's scripts match on it)."""
    return f"What is the service code of part {i}?"


def write_benchmark(path: Path, n: int) -> Path:
    """`n` reference-QA items, each with one supporting passage and a short answer, as native JSONL."""
    rows = [{"id": f"part-{i}", "domain": "Parts" if i % 2 else "Service", "query": question(i),
             "protocol": "reference_qa", "language": "en",
             "reference": {"answer_type": "short", "answers": [{"text": f"K{i}X"}]},
             "documents": [{"doc_id": f"d{i}", "text": f"Part {i} has service code K{i}X.", "role": "supporting"}]}
            for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_script(path: Path, n: int, wrong: int = 0, flaky: int = 0) -> Path:
    """A fake-server script answering item i with its code, except the first `wrong` items (answered wrongly); the
    next `flaky` items are answered wrongly on a run's second repeat only (the request carrying seed 1)."""
    rules = [{"match": re.escape(question(i)), "seed": 1, "reply": "I am not sure."} for i in range(wrong, wrong + flaky)]
    rules += [{"match": re.escape(question(i)), "reply": "I am not sure." if i < wrong else f"K{i}X"} for i in range(n)]
    path.write_text(yaml.safe_dump(rules), encoding="utf-8")
    return path
