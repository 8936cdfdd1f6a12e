"""The long-context protocol's builder, from the user's copy of LaRA (Alibaba-NLP/LaRA, MIT; c171553): the questions
of datasets/query/<length>_<type>_<level>.jsonl (`type`: book, financial, paper; `level`: location, reasoning, comp,
hallu; `file`, `question`, `answer`), each with its document datasets/<length>/<type>/<file> read from the copy
(never bundled: some are novels; a missing one is skipped, with why). Each instance holds the whole document
(variant setting 'whole') and the TOP_K chunks BM25 ranks highest for the question (setting 'chunk', with its rank):
CHUNK_WORDS-word chunks overlapping by OVERLAP_WORDS. A hallucination question (its answer says the text does not
tell) is unanswerable. The query files are interleaved (one question of each in turn) so a `limit` spans the tasks."""

from __future__ import annotations

import json
from itertools import chain, zip_longest
from pathlib import Path
from typing import Any

import numpy as np

from core.construction.retrieval import Bm25sBackend, tokenize
from core.protocols.base import BuildResult
from core.protocols.progress import Progress, counted

from . import NAME

CHUNK_WORDS, OVERLAP_WORDS, TOP_K = 450, 75, 5
LENGTHS = ("32k", "128k")


def chunks_of(text: str) -> list[str]:
    """The text cut into CHUNK_WORDS-word chunks, each overlapping the previous by OVERLAP_WORDS words."""
    words = text.split()
    step = CHUNK_WORDS - OVERLAP_WORDS
    return [" ".join(words[i:i + CHUNK_WORDS]) for i in range(0, max(1, len(words) - OVERLAP_WORDS), step)]


def top_chunks(chunks: list[str], question: str) -> list[int]:
    """The indices of the TOP_K chunks BM25 scores highest for the question (ties: earlier first)."""
    scores = Bm25sBackend.from_texts(chunks).scores(tokenize(question))
    return [int(i) for i in np.argsort(-scores, kind="stable")[:TOP_K]]


def query_rows(folder: Path, length: str) -> list[dict[str, Any]]:
    """The questions of every query file of one length, the files interleaved; the document type and the level are
    the file name's (<length>_<type>_<level>.jsonl: LaRA's evaluation reads documents by it; a row's own `type` can
    differ, e.g. 'novelette', and is kept as `source_type`)."""
    files = sorted((folder / "datasets" / "query").glob(f"{length}_*.jsonl"))
    per_file = [[{**row, "source_type": row.get("type"), "type": f.stem.split("_")[1], "level": f.stem.split("_")[2]}
                 for row in map(json.loads, filter(str.strip, f.read_text(encoding="utf-8").splitlines()))]
                for f in files]
    return [row for row in chain.from_iterable(zip_longest(*per_file)) if row is not None]


def lara_instance(folder: Path, length: str, row: dict[str, Any], text: str) -> dict[str, Any]:
    """One question with its chunks and its whole document."""
    uid = f"{NAME}/lara/{length}/{row['type']}/{row['level']}/{row['file']}/{row.get('context_order', 0)}"
    pieces = chunks_of(text)
    chunks = [{"doc_id": f"{uid}-c{rank}", "title": f"{row['file']} (chunk {i + 1})", "text": pieces[i],
               "role": "partial", "variant": {"setting": "chunk", "rank": rank}}
              for rank, i in enumerate(top_chunks(pieces, row["question"]), start=1)]
    whole = {"doc_id": f"lara/{length}/{row['type']}/{row['file']}", "title": row["file"], "text": text,
             "role": "supporting", "source": f"LaRA datasets/{length}/{row['type']}/{row['file']}",
             "variant": {"setting": "whole", "words": len(text.split())}}
    reference = ({"answer_type": "unanswerable", "reasoning": row["answer"]} if row["level"] == "hallu" else
                 {"answer_type": "long", "answers": [{"text": row["answer"]}]})
    return {"id": uid, "domain": f"LaRA {row['type']}", "query": row["question"], "protocol": NAME,
            "language": "en", "documents": [*chunks, whole], "reference": reference,
            "attributes": {"question_type": row["level"], "categories": [row["type"], length]}}


def build(source: Path, out_dir: Path, *, fmt: str = "", seed: int = 0, limit: int | None = None,
          bm25_only: bool = True, progress: Progress | None = None) -> BuildResult:
    """out_dir/instances.jsonl from a LaRA folder, context length `fmt` (32k, the default, or 128k)."""
    length = fmt or "32k"
    if length not in LENGTHS:
        raise ValueError(f"unknown LaRA length {length!r}; known: {', '.join(LENGTHS)}")
    folder = Path(source)
    rows = query_rows(folder, length)[:limit]
    records, skipped, texts = [], [], dict[Path, str | None]()
    for n, row in enumerate(counted(rows, progress), start=1):
        path = folder / "datasets" / length / row["type"] / row["file"]
        if path not in texts:
            texts[path] = path.read_text(encoding="utf-8") if path.exists() else None
        text = texts[path]
        if text is None:
            skipped.append(f"question {n}: {path} is not in your copy of LaRA")
            continue
        records.append(lara_instance(folder, length, row, text))
    out = out_dir / "instances.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return BuildResult(out, len(records), [f"{len(records)} questions ({length}) from {len(texts)} documents",
                                           f"{len(skipped)} skipped"], skipped)
