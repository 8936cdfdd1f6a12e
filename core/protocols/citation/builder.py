"""The citation protocol's builder: questions with the documents to cite.

Format 'alce' reads one of ALCE's data files (princeton-nlp/ALCE, fetched by its download_data.sh into the user's
copy, never bundled: a list of items, or an evaluation output {"data": [...]}) with `question`, `docs` ({title, text},
ASQA's with `answers_found`) and `answer` (ASQA's and ELI5's long answer): the first NDOC documents, as ALCE's default
configurations give them (ndoc 5). A document with an answer found is `supporting`, else `partial` (relevance not
labelled). Format 'records': {"id", "question", "answer", "documents": [strings or {title, text}]}."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from core.protocols.base import BuildResult
from core.protocols.progress import Progress, counted

from . import NAME

NDOC = 5


def role_of(doc: dict[str, Any]) -> str:
    """supporting when ALCE found an answer in it (answers_found), else partial."""
    return "supporting" if any(doc.get("answers_found") or []) else "partial"


def instance(uid: str, domain: str, question: str, docs: list[dict[str, Any]], answer: str) -> dict[str, Any]:
    """One citation instance."""
    documents = [{"doc_id": f"{uid}-d{k}", "title": d.get("title", ""), "text": d["text"], "role": role_of(d)}
                 for k, d in enumerate(docs, start=1) if d.get("text", "").strip()]
    record: dict[str, Any] = {"id": uid, "domain": domain, "query": question, "protocol": NAME,
                              "documents": documents}
    if answer.strip():
        record["reference"] = {"answer_type": "long", "answers": [{"text": answer}]}
    return record


def alce_items(source: Path) -> list[dict[str, Any]]:
    """The items of an ALCE data file or evaluation output."""
    data = json.loads(source.read_text(encoding="utf-8"))
    return data["data"] if isinstance(data, dict) else data


def build(source: Path, out_dir: Path, *, fmt: str = "", seed: int = 0, limit: int | None = None,
          bm25_only: bool = True, progress: Progress | None = None) -> BuildResult:
    """out_dir/instances.jsonl from an ALCE data file (fmt 'alce') or question records (fmt 'records', JSONL)."""
    fmt = fmt or ("alce" if str(source).endswith(".json") else "records")
    if fmt not in ("alce", "records"):
        raise ValueError(f"unknown {NAME} source layout {fmt!r}; known: alce, records")
    source = Path(source)
    items = alce_items(source) if fmt == "alce" else [
        json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    records, skipped = [], []
    for n, item in enumerate(counted(items[:limit], progress), start=1):
        docs = item.get("docs") if fmt == "alce" else [
            {"text": d} if isinstance(d, str) else d for d in item.get("documents") or []]
        if not item.get("question") or not docs:
            skipped.append(f"item {n}: needs a question and documents")
            continue
        uid = f"{NAME}/{'alce' if fmt == 'alce' else 'own'}/{item.get('id', n)}"
        answer = item.get("answer") if isinstance(item.get("answer"), str) else ""
        records.append(instance(uid, item.get("domain") or ("ALCE" if fmt == "alce" else "Citations"),
                                item["question"], docs[:NDOC] if fmt == "alce" else docs, answer or ""))
    out = out_dir / "instances.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return BuildResult(out, len(records), [f"{len(records)} questions ({fmt})", f"{len(skipped)} skipped"], skipped)
