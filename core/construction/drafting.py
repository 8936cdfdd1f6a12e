"""Candidate questions drafted by an LLM from a team's documents: each marked `query_origin: generated`, never mixed
silently with the team's real ones; the benchmark built from them carries the mark on every instance and the build
report counts them apart, and the instances go to expert verification like any other."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from core.construction.corpus import CorpusDoc

DRAFT_PROMPT = """You help a team write test questions for its document search assistant.

Document: {title}
Text:
{text}

Write one question a colleague could ask that this text answers, and the answer as it is written in the text (a short
span copied exactly). If the text answers nothing useful, reply {{"question": ""}}.
Reply with JSON only: {{"question": "...", "answer": "..."}}"""


def draft_queries(docs: list[CorpusDoc], complete_json: Callable[[str], dict], domain: str,
                  limit: int | None = None) -> tuple[list[dict], list[str]]:
    """One drafted query per document chunk (up to `limit`): kept only when its answer is a span of the chunk; the
    reasons the others were dropped."""
    out, dropped = [], []
    for doc in docs[:limit]:
        reply = complete_json(DRAFT_PROMPT.format(title=doc.title, text=doc.text)) or {}
        question, answer = str(reply.get("question", "")).strip(), str(reply.get("answer", "")).strip()
        if not question:
            dropped.append(f"{doc.doc_id}: no question drafted")
        elif not answer or answer.lower() not in doc.text.lower():
            dropped.append(f"{doc.doc_id}: the drafted answer {answer!r} is not in the text")
        else:
            out.append({"query_id": f"gen-{doc.doc_id}", "domain": doc.domain or domain, "query": question,
                        "answerable": True, "answer_facts": [answer], "supporting_doc_ids": [doc.doc_id],
                        "query_origin": "generated"})
    return out, dropped


def write_queries(queries: list[dict], path: Path) -> None:
    """The drafted queries as JSONL (read back by `gauntlet build --queries`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries), encoding="utf-8")
