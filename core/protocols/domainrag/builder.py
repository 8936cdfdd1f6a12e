"""Build the DomainRAG protocol's instances from the shared release files: every sub-set record through the
DomainRAG importer (so every source field stays: `source_record` rebuilds it), then the documents its settings need.

- golden / HTML / full pages / anti-reference: the importer's documents, tagged with the variant key `setting`;
- noisy reference (extractive): the 24 noise passages of noisy_qa_derived_noise24.jsonl in draw order, so a
  condition's `noise: N` keeps the first N, as the release notes prescribe;
- retrieved reference: the top 3 of BM25 and of the dense retriever of the construction pipeline
  (core.construction.retrieval, one chunk per passage) over the corpus slice, queried with the question (plus earlier
  turns when a conversational question alone finds too little: `retrieval_query`), and the top 3
  of the authors' released BM25 / dense runs (retrieval_runs_top20.jsonl); a retrieved passage is `supporting` when
  it is an annotated positive, else `partial` (relevance unlabelled), with `answer_bearing` saying whether it holds
  every part of a gold alternative (short-answer sub-sets); the one passage released with empty contents (p01512,
  2 noise draws and 3 released dense hits) shows its page title as its text, marked `empty_contents`;
- faithful QA: besides the question (gold reference), a companion instance `<id>/anti` whose reference is the
  anti-answer (its wrong answers the gold ones) and whose only document is the anti-reference; both carry the aspect
  'disjoint' or 'shares_items' (`anti_kind`).
Deterministic: same files, same output, byte for byte.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.config import REPO_ROOT
from core.construction.corpus import CorpusDoc
from core.construction.retrieval import DEFAULT_INDEX_DIR, RetrievalConfig, Retriever
from core.ingest.importers import get_importer
from core.ingest.importers.domainrag import JOIN, composite
from core.protocols.domainrag import ANTI, NAME, OURS, RELEASED, RELEASED_TYPES, RETRIEVAL_TYPES, SETTING_KEY
from core.protocols.progress import Progress, counted

DEFAULT_DATA = REPO_ROOT.parent / "shared" / "datasets" / "domainrag"
PREFIX = "domainrag-abilities"
FILES: dict[str, str] = {
    "extractive": "extractive_qa.jsonl", "conversational": "conversational_qa.jsonl",
    "structural": "structural_qa.jsonl", "faithful": "faithful_qa.jsonl",
    "time_sensitive": "time_sensitive_qa.jsonl", "multidoc": "multidoc_qa.jsonl",
}
CORPUS_PARTS = ("corpus_passages_slice.part1.jsonl", "corpus_passages_slice.part2.jsonl")
RUNS_FILE, NOISE_FILE = "retrieval_runs_top20.jsonl", "noisy_qa_derived_noise24.jsonl"
DEPTH = 3  # retrieved passages kept per retriever (the largest top-k of the conditions)
SETTING_OF_FIELD = {"positive_reference": "gold", "positive_references": "gold", "positive_html": "html",
                    "referred_docs": "page", "counterfact_reference": "anti"}
SHORT_ANSWERS = ("extractive", "time_sensitive", "structural", "faithful")


@dataclass(frozen=True)
class BuildOptions:
    """Where the shared files are, which retrievers to run, and how many rows per sub-set (None: all)."""

    data: Path = DEFAULT_DATA
    embedder: str | None = "minilm-onnx"
    index_dir: Path | None = DEFAULT_INDEX_DIR
    limit: int | None = None


@dataclass
class BuildReport:
    """What a build made: instances per question type, documents per setting, and retrieval hit rates."""

    instances: Counter = field(default_factory=Counter)
    documents: Counter = field(default_factory=Counter)
    recall: dict[tuple[str, str, int], tuple[int, int]] = field(default_factory=dict)  # gold pid in top k: (hits, n)
    answer_recall: dict[tuple[str, str, int], tuple[int, int]] = field(default_factory=dict)  # answer-bearing in top k
    warnings: list[str] = field(default_factory=list)  # e.g. an embedder that cannot read the corpus's language

    def count(self, table: dict, key: tuple[str, str, int], hit: bool) -> None:
        """Add one question to a hit-rate table."""
        hits, n = table.get(key, (0, 0))
        table[key] = (hits + bool(hit), n + 1)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise FileNotFoundError(f"DomainRAG file not found: {path} (see ../shared/datasets/domainrag/README.md)")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def squeeze(text: str) -> str:
    """Text without whitespace (the corpus is word-segmented, answers are not)."""
    return re.sub(r"\s+", "", text)


def answer_bearing(text: str, alternatives: list[list[str]]) -> bool:
    """Whether `text` holds every part of some gold alternative (whitespace ignored)."""
    flat = squeeze(text)
    return any(parts and all(squeeze(p) in flat for p in parts) for parts in alternatives)


@dataclass
class Sources:
    """The shared files a build reads: corpus slice, released runs, derived noise."""

    corpus: dict[str, dict[str, Any]]
    by_contents: dict[str, str]
    runs: dict[tuple[str, str, int], list[str]]
    noise: dict[int, list[str]]

    @classmethod
    def load(cls, data: Path) -> Sources:
        """Read the corpus parts, the retrieval runs and the noise draws of `data`."""
        corpus = {p["pid"]: p for part in CORPUS_PARTS for p in _jsonl(data / part)}
        runs = {(r["subset"].removesuffix("_qa"), r["retriever"], r["row"]): r["top20_pids"]
                for r in _jsonl(data / RUNS_FILE)}
        noise = {r["row"]: r["noise_pids"] for r in _jsonl(data / NOISE_FILE)}
        return cls(corpus, {p["contents"]: pid for pid, p in corpus.items()}, runs, noise)


def corpus_docs(corpus: dict[str, dict[str, Any]]) -> list[CorpusDoc]:
    """The corpus slice as retrieval documents (id = pid)."""
    return [CorpusDoc(doc_id=pid, domain="DomainRAG", title=p.get("title") or "", text=p["contents"],
                      source=p.get("url") or "") for pid, p in corpus.items()]


def make_retriever(corpus: dict[str, dict[str, Any]], options: BuildOptions) -> Retriever:
    """BM25 (+ dense when an embedder is named) over the corpus slice, one chunk per passage (passages are at most
    256 words)."""
    config = RetrievalConfig(window=1024, overlap=0, embedder=options.embedder, index_dir=options.index_dir)
    return Retriever(corpus_docs(corpus), config)


def _rename(payload: dict[str, Any]) -> dict[str, Any]:
    old = payload["id"]
    new = old.replace("domainrag/", f"{PREFIX}/", 1)
    docs = [d | {"doc_id": new + d["doc_id"][len(old):]} for d in payload["documents"]]
    return payload | {"id": new, "protocol": NAME, "documents": docs}


def _tag(document: dict[str, Any]) -> dict[str, Any]:
    field_name = document["doc_id"].partition("#")[2].split("[")[0]
    return document | {"variant": {**document.get("variant", {}), SETTING_KEY: SETTING_OF_FIELD[field_name]}}


def _passage_doc(iid: str, path: str, passage: dict[str, Any], role: str, variant: dict[str, Any]) -> dict[str, Any]:
    """A corpus passage as a document; a passage released with empty contents (p01512) shows its title instead."""
    title, text = passage.get("title") or "", passage["contents"]
    empty = {} if text.strip() else {"empty_contents": True}
    return {"doc_id": f"{iid}#{path}", "title": title, "text": text if text.strip() else title,
            "source": passage.get("url") or "", "role": role, "variant": variant | empty}


def gold_pids(raw: dict[str, Any], sources: Sources) -> set[str]:
    """Corpus pids of a record's annotated positive passages."""
    found = raw.get("positive_reference") or raw.get("positive_references") or []
    passages = found if isinstance(found, list) else [found]
    return {pid for p in passages if (pid := sources.by_contents.get(p.get("contents", "")))}


def _alternatives(raw: dict[str, Any], subset: str) -> list[list[str]]:
    return raw["answers"] if subset in SHORT_ANSWERS else []


def retrieval_query(raw: dict[str, Any], retriever: Retriever) -> str:
    """The question; when BM25 finds fewer than DEPTH passages for it (a conversational turn like '有哪些专业' whose
    words are all too common), the earlier questions of the conversation are added, latest first, until it does."""
    query = raw["question"]
    for turn in reversed(raw.get("history_qa") or []):
        if len(retriever.search(query, k=DEPTH, mode="bm25")) >= DEPTH:
            break
        query = f"{query} {turn['question']}"
    return query


def retrieved_pids(subset: str, row: int, raw: dict[str, Any], retriever: Retriever | None,
                   sources: Sources) -> dict[str, list[str]]:
    """Top-DEPTH pids per retriever of one question: ours (BM25, dense when built) and the released runs."""
    out: dict[str, list[str]] = {}
    if retriever is not None and subset in RETRIEVAL_TYPES:
        query = retrieval_query(raw, retriever)
        for mode in OURS:
            if mode == "bm25" or retriever.dense is not None:
                out[mode] = [hit.doc_id for hit in retriever.search(query, k=DEPTH, mode=mode)]
    if subset in RELEASED_TYPES:
        for name in RELEASED:
            out[name] = sources.runs[(subset, name.removeprefix("released_"), row)][:DEPTH]
    return out


def retrieval_documents(iid: str, subset: str, raw: dict[str, Any], ranked: dict[str, list[str]],
                        sources: Sources, report: BuildReport) -> list[dict[str, Any]]:
    """The retrieved passages as documents, and each retriever's hit rates counted in `report`."""
    gold, alternatives = gold_pids(raw, sources), _alternatives(raw, subset)
    docs = []
    for name, pids in ranked.items():
        for rank, pid in enumerate(pids, start=1):
            passage = sources.corpus[pid]
            bearing = answer_bearing(passage["contents"], alternatives) if alternatives else None
            variant = {SETTING_KEY: name, "rank": rank, "pid": pid, "answer_bearing": bearing}
            docs.append(_passage_doc(iid, f"{name}[{rank - 1}]", passage,
                                     "supporting" if pid in gold else "partial", variant))
        for k in (1, DEPTH):
            report.count(report.recall, (subset, name, k), bool(gold & set(pids[:k])))
            if alternatives:
                report.count(report.answer_recall, (subset, name, k),
                             any(answer_bearing(sources.corpus[p]["contents"], alternatives) for p in pids[:k]))
    return docs


def noise_documents(iid: str, row: int, sources: Sources) -> list[dict[str, Any]]:
    """The extractive row's 24 noise passages, in draw order."""
    return [_passage_doc(iid, f"noise[{k}]", sources.corpus[pid], "noise", {SETTING_KEY: "noise", "pid": pid})
            for k, pid in enumerate(sources.noise[row])]


def anti_kind(raw: dict[str, Any]) -> str:
    """'disjoint' when no item of the anti-answer is an item of the gold answer (a changed value: 80人 -> 70人), else
    'shares_items' (a list with one item dropped or swapped: 10 of the 49), where exact match cannot tell following
    the anti-reference from ignoring it (the gold list contains every item of a shortened anti list)."""
    gold = {squeeze(p) for alternative in raw["answers"] for p in alternative}
    shared = any(squeeze(p) in gold for alternative in raw["counterfact_answers"] for p in alternative)
    return "shares_items" if shared else "disjoint"


def anti_instance(payload: dict[str, Any], raw: dict[str, Any]) -> dict[str, Any]:
    """The faithful question scored against its anti-answer (each alternative with its parts, as the gold answer),
    with the anti-reference as its only document; its wrong answers are the gold ones."""
    iid = f"{payload['id']}/anti"
    anti = next(d for d in payload["documents"] if d["variant"].get(SETTING_KEY) == "anti")
    reference = {"answer_type": "short", "answers": [composite(parts) for parts in raw["counterfact_answers"]],
                 "wrong_answers": [JOIN.join(parts) for parts in raw["answers"]]}
    return {"id": iid, "domain": payload["domain"], "query": payload["query"], "protocol": NAME,
            "language": payload["language"], "reference": reference,
            "attributes": {"question_type": ANTI, "aspects": [anti_kind(raw)]},
            "documents": [anti | {"doc_id": f"{iid}#counterfact_reference"}],
            "metadata": {"derived_from": payload["id"], "segmentation": "whitespace"}}


def subset_rows(subset: str, options: BuildOptions) -> list[tuple[str, int, dict[str, Any]]]:
    """The first `options.limit` rows of one sub-set file as (sub-set, row, raw record)."""
    path = options.data / FILES[subset]
    records, errors = get_importer("domainrag").read(path)
    if errors:
        raise ValueError(errors[0].located(path))
    return [(subset, row, raw) for row, (_, raw) in enumerate(records[: options.limit])]


def row_payloads(subset: str, row: int, raw: dict[str, Any], options: BuildOptions, sources: Sources,
                 retriever: Retriever | None, report: BuildReport) -> Iterator[dict[str, Any]]:
    """The built instances of one sub-set row (faithful: the question, then its anti companion)."""
    payload = _rename(get_importer("domainrag").payload(raw, row, options.data / FILES[subset]))
    payload["documents"] = [_tag(d) for d in payload["documents"]]
    if subset == "extractive":
        payload["documents"] += noise_documents(payload["id"], row, sources)
    ranked = retrieved_pids(subset, row, raw, retriever, sources)
    payload["documents"] += retrieval_documents(payload["id"], subset, raw, ranked, sources, report)
    if subset == "faithful":
        payload["attributes"]["aspects"] = [anti_kind(raw)]
    yield payload
    if subset == "faithful":
        yield anti_instance(payload, raw)


def mark_unknown_share(payload: dict[str, Any], retriever: Retriever | None) -> None:
    """Record on an instance with dense documents the embedder's [UNK] share of the corpus sample (metadata
    `dense_unknown_share`), so a results page can warn that those documents were retrieved near blind."""
    share = retriever.unknown_share if retriever else None
    if share is not None and any(d["variant"][SETTING_KEY] == "dense" for d in payload["documents"]):
        payload.setdefault("metadata", {})["dense_unknown_share"] = round(share, 3)


def build_instances(options: BuildOptions, progress: Progress | None = None) -> tuple[list[dict[str, Any]], BuildReport]:
    """Every built instance payload (InstanceSpec JSON) of the DomainRAG protocol, and what was built;
    `progress(done, total)` after each source row (every sub-set's rows counted in `total`)."""
    sources = Sources.load(options.data)
    retriever = make_retriever(sources.corpus, options)
    report, payloads = BuildReport(), []
    warning = retriever.language_warning() if retriever else None
    report.warnings += [warning] if warning else []
    rows = [item for subset in FILES for item in subset_rows(subset, options)]
    for subset, row, raw in counted(rows, progress):
        for payload in row_payloads(subset, row, raw, options, sources, retriever, report):
            mark_unknown_share(payload, retriever)
            payloads.append(payload)
            report.instances[payload["attributes"]["question_type"]] += 1
            report.documents.update(d["variant"][SETTING_KEY] for d in payload["documents"])
    return payloads, report


def write_jsonl(payloads: Iterable[dict[str, Any]], out: Path) -> int:
    """Write payloads one per line (UTF-8, keys in build order); returns how many."""
    lines = [json.dumps(p, ensure_ascii=False) + "\n" for p in payloads]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(lines), encoding="utf-8")
    return len(lines)
