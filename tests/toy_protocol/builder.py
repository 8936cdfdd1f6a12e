"""The toy protocol's builder: a JSONL of {"question", "answer"} pairs becomes toy instances, each with one document
stating its answer (progress after each pair)."""

from __future__ import annotations

import json
from pathlib import Path

from core.protocols.base import BuildResult
from core.protocols.progress import Progress, counted

from . import NAME


def build(source: Path, out_dir: Path, *, fmt: str = "", seed: int = 0, limit: int | None = None,
          bm25_only: bool = True, progress: Progress | None = None) -> BuildResult:
    """out_dir/instances.jsonl from the first `limit` pairs of `source`; a pair without an answer is skipped, with why."""
    pairs = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()][:limit]
    records, skipped = [], []
    for n, pair in enumerate(counted(pairs, progress), start=1):
        if not pair.get("answer"):
            skipped.append(f"pair {n}: no answer")
            continue
        records.append({"id": f"{NAME}-{n}", "domain": "Toy", "query": pair["question"], "protocol": NAME,
                        "documents": [{"doc_id": f"d{n}", "text": f"The answer is {pair['answer']}.",
                                       "role": "supporting"}],
                        "reference": {"answers": [{"text": pair["answer"]}]}})
    out = out_dir / "instances.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return BuildResult(out, len(records), [f"{len(pairs)} pairs: {len(records)} built, {len(skipped)} skipped"], skipped)
