"""Build a benchmark: queries x retrieval modes -> InstanceSpec JSONL, deterministic for a seed."""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType

import numpy as np

from core.construction.corpus import CorpusDoc, load_corpus
from core.construction.cost import BuildEstimate, estimate_build, text_tokens
from core.construction.documents import import_folder, is_document_folder, resolve_support
from core.construction.embedders import Embedder, build_embedder
from core.construction.fact_checks import Assist, CheckCounts, CheckFailed, stored
from core.construction.fusion import CompleteJson, fuse
from core.construction.library import Atomic, load_libraries
from core.construction.retrieval import DEFAULT_INDEX_DIR, RetrievalConfig, Retriever
from core.construction.simulate import simulate
from core.generation.providers.base import ModelConfig
from core.language import wordlists
from core.store.generated import generated_mark
from core.store.schema import DocumentSpec, InstanceSpec

PathLike = str | Path
MODE_RATIOS = {"noisy": 0.455, "gap": 0.231, "conflict": 0.314}  # paper Table 6
BUILDER_VERSION = "construction-1"
RAY_TASK_RETRIES = 3
DOMAIN_NAMES = {"energy": "Energy", "medical": "Medical", "legal": "Legal", "financial": "Financial",
                "party_building": "Party Building", "web_search": "Web Search"}
_LAW_TYPES = "|".join(sorted(map(re.escape, wordlists("statutes")["feature_law_types"]), key=len, reverse=True))
_STATUTE = re.compile(rf"\b[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*\s+(?:{_LAW_TYPES})\b,?\s+Article\s+\d+")
_DATE = re.compile(r"\b(?:" + "|".join(wordlists("fact_edits")["months"]) + r")\b|\b(?:19|20)\d{2}\b")


@dataclass
class BuildReport:
    """What a build wrote and how the instances are distributed."""

    out_path: str
    instances: int
    by_mode: dict[str | None, int]
    by_domain: dict[str, int]
    by_origin: dict[str, int]
    avg_constraints: float
    seed: int
    seconds: float
    skipped: list[str] = field(default_factory=list)
    corpus: dict = field(default_factory=dict)  # a document folder's import: files, chunks, languages, duplicates
    queries: dict = field(default_factory=dict)  # queries by origin: real (the team's) or generated
    checks: dict = field(default_factory=dict)  # per check on conflicts and gaps: passed, failed, by rule / by judge
    generated: int = 0  # conflicts and gaps whose edit the generator wrote (the rules skipped them or failed a check)
    regenerated: int = 0  # generator attempts written again after failing a check
    dropped_by_checks: list[str] = field(default_factory=list)  # items that failed a check and were not built
    llm_generated: int = 0  # instances an LLM drafted, wrote or edited a part of (core.store.generated)
    estimate: dict = field(default_factory=dict)  # the LLM cost estimated before the build (empty offline)
    spent: dict = field(default_factory=dict)  # LLM calls made, answered from the cache, and dollars paid

    def to_dict(self) -> dict:
        """Plain dict (for JSON output)."""
        return asdict(self)


def _paths(value: PathLike | Sequence[PathLike], patterns: tuple[str, ...] = ("*.jsonl",)) -> list[Path]:
    items = [value] if isinstance(value, (str, Path)) else value
    out: list[Path] = []
    for item in map(Path, items):
        out += sorted(p for pattern in patterns for p in item.glob(pattern)) if item.is_dir() else [item]
    return out


def load_documents(corpus_path: PathLike | Sequence[PathLike]) -> tuple[list[CorpusDoc], dict]:
    """Corpus JSONL files, or folders of office documents (converted, chunked, all or nothing); the folder import's
    report (empty for JSONL)."""
    items = [corpus_path] if isinstance(corpus_path, (str, Path)) else corpus_path
    folders = [Path(p) for p in items if is_document_folder(Path(p))]
    docs = load_corpus(_paths([p for p in items if Path(p) not in folders])) if len(folders) < len(items) else []
    report: dict = {}
    for folder in folders:
        imported, folder_report = import_folder(folder)
        docs += imported
        for key, value in folder_report.to_dict().items():
            merged = report.setdefault(key, type(value)())
            if isinstance(value, dict) and key == "languages":
                for k, v in value.items():
                    merged[k] = merged.get(k, 0) + v
            elif isinstance(value, dict):
                merged.update(value)
            elif isinstance(value, list):
                merged.extend(value)
            else:
                report[key] = merged + value
    ids = [d.doc_id for d in docs]
    if len(set(ids)) < len(ids):
        raise ValueError(f"duplicate doc_id {next(i for i in ids if ids.count(i) > 1)!r}")
    return docs, report


def library_files(value: PathLike | Sequence[PathLike]) -> list[Path]:
    """Library YAML files from paths and/or directories (a directory contributes all its *.yaml)."""
    items = [value] if isinstance(value, (str, Path)) else value
    files: list[Path] = []
    for item in map(Path, items):
        files += sorted(item.glob("*.yaml")) if item.is_dir() else [item]
    return files


_LIST_COLUMNS = ("answer_facts", "supporting_doc_ids", "conflicting_doc_ids", "related_doc_ids")


def _csv_records(path: Path) -> list[tuple[int, dict]]:
    """Rows of a query CSV as records: list columns split on ';', 'answerable' read as yes/no."""
    import csv

    with path.open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.DictReader(fh))
    out = []
    for n, row in enumerate(rows, 2):
        record: dict = {k.strip(): (v or "").strip() for k, v in row.items() if k}
        for key in _LIST_COLUMNS:
            if key in record:
                record[key] = [part.strip() for part in record[key].split(";") if part.strip()]
        if record.get("answerable", "") != "":
            record["answerable"] = record["answerable"].lower() in ("1", "true", "yes", "y")
        else:
            record.pop("answerable", None)
        out.append((n, record))
    return out


def load_queries(paths: list[Path]) -> list[dict]:
    """Query records from JSONL or CSV files (query_id, domain, query, answerable, answer_facts, supporting_doc_ids;
    in a CSV, lists are ';'-separated). A query's `origin` is 'real' unless the file marks it 'generated'."""
    queries = []
    for path in paths:
        if path.suffix.lower() == ".csv":
            records = _csv_records(path)
        else:
            records = [(n, json.loads(line)) for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                       if line.strip()]
        for n, q in records:
            missing = [k for k in ("query_id", "domain", "query") if not q.get(k)]
            if missing:
                raise ValueError(f"{path}:{n}: query lacks {', '.join(missing)}")
            if q.setdefault("query_origin", "real") not in ("real", "generated"):
                raise ValueError(f"{path}:{n}: query_origin {q['query_origin']!r} not in real, generated")
            q.setdefault("supporting_doc_ids", [])
            q.setdefault("answer_facts", [])
            q.setdefault("answerable", bool(q["supporting_doc_ids"]))
            queries.append(q)
    return queries


def domain_name(slug: str) -> str:
    """Display name of a domain slug ('party_building' -> 'Party Building'), as in data/sample/domains.jsonl."""
    return DOMAIN_NAMES.get(slug, slug.replace("_", " ").title())


def library_for(atomics: list[Atomic], domain: str) -> list[Atomic]:
    """The atomics usable in a domain: the common ones plus the domain's own."""
    return [a for a in atomics if a.domain in ("common", domain)]


def bundle_features(docs: list[DocumentSpec]) -> set[str]:
    """Which triggers a bundle offers: statutes, tables, multi_source, numbers, dates."""
    text = "\n".join(d.text for d in docs)
    features = {"multi_source"} if len(docs) >= 2 else set()
    if _STATUTE.search(text):
        features.add("statutes")
    if any(d.content_type == "markdown_table" or "<table" in d.text for d in docs):
        features.add("tables")
    if re.search(r"\d", text):
        features.add("numbers")
    if _DATE.search(text):
        features.add("dates")
    return features


def plan_modes(queries: list[dict], rng: random.Random,
               ratios: dict[str, float] = MODE_RATIOS) -> list[tuple[dict, str]]:
    """Assign modes: every answerable query once as noisy; conflict and gap counts follow the ratios,
    gaps split between unanswerable queries (natural) and answerable ones with support removed."""
    answerable = [q for q in queries if q["answerable"] and q["supporting_doc_ids"]]
    unanswerable = [q for q in queries if not q["answerable"]]
    total = len(answerable) / ratios["noisy"] if answerable else len(unanswerable) / max(ratios["gap"], 1e-9)
    n_conflict = min(len(answerable), round(total * ratios["conflict"]))
    n_gap = round(total * ratios["gap"])
    n_natural_gap = min(len(unanswerable), math.ceil(n_gap / 2) if answerable else n_gap)
    n_aug_gap = min(len(answerable), n_gap - n_natural_gap)
    plan = [(q, "noisy") for q in answerable]
    plan += [(q, "conflict") for q in rng.sample(answerable, n_conflict)]
    plan += [(q, "gap") for q in rng.sample(unanswerable, n_natural_gap)]
    plan += [(q, "gap") for q in rng.sample(answerable, n_aug_gap)]
    order = {"noisy": 0, "gap": 1, "conflict": 2}
    return sorted(plan, key=lambda item: (item[0]["domain"], item[0]["query_id"], order[item[1]]))


def instance_seed(seed: int, query_id: str, mode: str) -> int:
    """Per-instance seed, so one instance does not depend on which others are built."""
    return int(hashlib.sha256(f"{seed}|{query_id}|{mode}".encode()).hexdigest()[:16], 16)


def build_instance(q: dict, mode: str, retriever: Retriever, atomics: list[Atomic], seed: int, top_k: int,
                   complete_json: CompleteJson | None = None, augment: bool = False,
                   assist: Assist | None = None) -> InstanceSpec:
    """One InstanceSpec: simulate the bundle (conflicts and gaps checked), then fuse constraints it can trigger."""
    rng = random.Random(instance_seed(seed, q["query_id"], mode))
    bundle = simulate(mode, q, retriever, top_k, rng, assist)
    if not bundle.documents:
        raise ValueError(f"{q['query_id']} {mode}: empty bundle")
    context = "\n\n".join(f"[doc {i + 1}] {d.title}\n{d.text}" for i, d in enumerate(bundle.documents))
    fusion = fuse(library_for(atomics, q["domain"]), q["domain"], bundle_features(bundle.documents), rng,
                  q["query"], context, complete_json, augment)
    meta = {"query_id": q["query_id"], "domain_slug": q["domain"], "seed": seed, "builder": BUILDER_VERSION, "atomic_ids": fusion.atomic_ids,
            "removed_atomics": fusion.removed, "answer_facts": q.get("answer_facts", []),
            "bundle": bundle.meta}
    if fusion.quality is not None:
        meta["quality"] = fusion.quality
    if q.get("query_origin") == "generated":  # drafted by an LLM: marked wherever the instance is listed
        meta["query_origin"] = "generated"
        meta["query_generated_by"] = q.get("generated_by", "")
    return InstanceSpec(id=f"{q['query_id']}-{mode}", domain=domain_name(q["domain"]), query=q["query"], mode=mode,
                        origin=bundle.origin, constraints=fusion.constraints, documents=bundle.documents,
                        metadata=meta)


def domain_retrievers(docs: list[CorpusDoc], domains: set[str], config: RetrievalConfig,
                      ray: ModuleType | None = None) -> dict[str, Retriever]:
    """One retriever per query domain over that domain's documents (the whole corpus when it has none); with `ray`,
    the domains' indexes are built at once, each one's corpus embedded by a Ray task."""
    embedder = build_embedder(config.embedder, **config.embedder_options) if config.embedder else None
    if ray is not None and embedder is not None and config.embedder is not None:
        embedder = RayEmbedder(ray, config.embedder, config.embedder_options, embedder)
    owned = {domain: [d for d in docs if d.domain == domain] or docs for domain in sorted(domains)}
    if ray is None:
        return {domain: Retriever(own, config, embedder=embedder) for domain, own in owned.items()}
    distinct = {tuple(d.doc_id for d in own): own for own in owned.values()}  # one index folder, one writer
    with ThreadPoolExecutor(max(1, len(distinct))) as pool:
        built = dict(zip(distinct, pool.map(lambda own: Retriever(own, config, embedder=embedder), distinct.values()), strict=True))
    return {domain: built[tuple(d.doc_id for d in own)] for domain, own in owned.items()}


RAY_MIN_TEXTS = 64  # fewer texts (a query) are embedded in the calling process
_TASK_EMBEDDERS: dict[str, Embedder] = {}


class RayEmbedder:
    """An embedder whose embed() of many texts runs as one Ray task: the same call on the same texts, so the same
    batches and vectors as in the calling process."""

    def __init__(self, ray: ModuleType, name: str, options: dict, local: Embedder) -> None:
        self.ray, self.name, self.options, self.local = ray, name, options, local
        self.model_id, self.dim = local.model_id, local.dim
        self.task = ray.remote(embed_texts).options(num_cpus=1, max_retries=RAY_TASK_RETRIES)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Vectors of `texts`, from a Ray task unless they are few."""
        if len(texts) < RAY_MIN_TEXTS:
            return self.local.embed(texts)
        return np.array(self.ray.get(self.task.remote(self.name, self.options, texts)))  # writable, like local


def embed_texts(name: str, options: dict, texts: list[str]) -> np.ndarray:
    """A Ray task: embed `texts` with embedder `name` (built once per worker process)."""
    key = json.dumps([name, options], sort_keys=True, default=str)
    if key not in _TASK_EMBEDDERS:
        _TASK_EMBEDDERS[key] = build_embedder(name, **options)
    return _TASK_EMBEDDERS[key].embed(texts)


Planned = list[tuple[int, dict, str]]  # (position in the plan, query, mode)
Built = list[tuple[int, InstanceSpec | None, str | None, dict | None]]  # (position, instance, why not, verdicts)


def build_planned(planned: Planned, retrievers: dict[str, Retriever], atomics: list[Atomic], seed: int, top_k: int,
                  complete_json: CompleteJson | None = None, augment: bool = False,
                  assist: Assist | None = None) -> Built:
    """(position, instance, None, None) per planned query and mode, or (position, None, why it was not built, the
    verdicts of the checks it failed or None)."""
    out: Built = []
    for position, q, mode in planned:
        try:
            out.append((position, build_instance(q, mode, retrievers[q["domain"]], atomics, seed, top_k,
                                                 complete_json, augment, assist), None, None))
        except CheckFailed as exc:
            out.append((position, None, str(exc), {**stored(exc.verdicts), "__attempts": exc.attempts}))
        except ValueError as exc:
            out.append((position, None, str(exc), None))
    return out


def check_counts(built: Built) -> CheckCounts:
    """The checks' verdicts counted over built and dropped conflicts and gaps, with generated and regenerated."""
    counts = CheckCounts()
    for _, instance, reason, failed in built:
        if instance is not None and "checks" in instance.metadata.get("bundle", {}):
            bundle = instance.metadata["bundle"]
            counts.add(bundle["checks"])
            counts.generated += bool(bundle.get("generated"))
            counts.regenerated += max(0, int(bundle.get("attempts", 0)) - 1)
        elif failed is not None:
            attempts = failed.pop("__attempts", 1)
            counts.add(failed)
            counts.regenerated += max(0, attempts - 1)
            counts.dropped.append(str(reason))
    return counts


def build_shard(docs: list[CorpusDoc], config: RetrievalConfig, planned: Planned, atomics: list[Atomic], seed: int,
                top_k: int, augment: bool) -> Built:
    """A Ray task: simulate and fuse a slice of the plan over retrievers loaded from the index folder (built there by
    the driver; rebuilt the same way where the folder is not shared)."""
    retrievers = domain_retrievers(docs, {q["domain"] for _, q, _ in planned}, config)
    return build_planned(planned, retrievers, atomics, seed, top_k, augment=augment)


def build_on_ray(ray: ModuleType, docs: list[CorpusDoc], config: RetrievalConfig, planned: Planned,
                 atomics: list[Atomic], seed: int, top_k: int,
                 augment: bool) -> Built:
    """The plan in contiguous slices (one per CPU of the cluster), each built by a Ray task; results in plan order."""
    shards = max(1, min(len(planned), int(ray.cluster_resources().get("CPU", 1))))
    size = -(-len(planned) // shards)
    task = ray.remote(build_shard).options(num_cpus=1, max_retries=RAY_TASK_RETRIES)
    docs_ref, atomics_ref = ray.put(docs), ray.put(atomics)
    refs = [task.remote(docs_ref, config, planned[i : i + size], atomics_ref, seed, top_k, augment)
            for i in range(0, len(planned), size)]
    return sorted((row for part in ray.get(refs) for row in part), key=lambda row: row[0])


def select_queries(queries_path: PathLike | Sequence[PathLike], docs: list[CorpusDoc], corpus_report: dict,
                   domains: list[str] | None, max_queries_per_domain: int | None) -> list[dict]:
    """The queries a build uses: read, their support resolved against a document folder, filtered by domain and
    capped per domain."""
    queries = load_queries(_paths(queries_path, ("*.jsonl", "*.csv")))
    if corpus_report:
        resolve_support(queries, docs)
    if domains:
        queries = [q for q in queries if q["domain"] in domains]
    if max_queries_per_domain:
        per: Counter = Counter()
        queries = [q for q in queries if (per.update([q["domain"]]) or per[q["domain"]]) <= max_queries_per_domain]
    return queries


def estimate_benchmark(queries_path: PathLike | Sequence[PathLike], corpus_path: PathLike | Sequence[PathLike], *,
                       seed: int = 0, top_k: int = 10, domains: list[str] | None = None,
                       max_queries_per_domain: int | None = None, fusion: ModelConfig | None = None,
                       augment: bool = False, generator: ModelConfig | None = None,
                       judge: ModelConfig | None = None) -> BuildEstimate:
    """The LLM cost of a build before it starts: the same plan of queries and modes, priced per model role."""
    docs, corpus_report = load_documents(corpus_path)
    queries = select_queries(queries_path, docs, corpus_report, domains, max_queries_per_domain)
    planned = plan_modes(queries, random.Random(seed))
    return estimate_build(planned, text_tokens({d.doc_id: d.text for d in docs}), top_k, fusion=fusion,
                          augment=augment, generator=generator, judge=judge)


def build_benchmark(queries_path: PathLike | Sequence[PathLike], corpus_path: PathLike | Sequence[PathLike],
                    library_path: PathLike | Sequence[PathLike], out_path: PathLike, seed: int = 0, *,
                    top_k: int = 10, embedder: str | None = "minilm-onnx",
                    index_dir: PathLike | None = DEFAULT_INDEX_DIR, domains: list[str] | None = None,
                    max_queries_per_domain: int | None = None, complete_json: CompleteJson | None = None,
                    augment: bool = False, executor: str = "local", ray_address: str | None = None,
                    assist: Assist | None = None, llm_name: str = "") -> BuildReport:
    """Build InstanceSpec JSONL at out_path from queries, corpus and atomic libraries; same seed, same file.

    executor="ray" (optionally on the cluster at `ray_address`) embeds each domain's corpus in a Ray task, all
    domains at once, and simulates and fuses the instances in Ray tasks (in the driver when `complete_json` is given:
    the LLM client stays in this process); the file is the same as a local build's."""
    start = time.perf_counter()
    docs, corpus_report = load_documents(corpus_path)
    queries = select_queries(queries_path, docs, corpus_report, domains, max_queries_per_domain)
    atomics = load_libraries(library_files(library_path))
    if executor not in ("local", "ray"):
        raise ValueError(f"unknown executor {executor!r}; known: local, ray")
    planned = [(i, q, mode) for i, (q, mode) in enumerate(plan_modes(queries, random.Random(seed)))]
    with ExitStack() as stack:
        if index_dir is None and executor == "ray":  # the tasks load the driver's indexes from disk
            index_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="gauntlet-index-"))
        config = RetrievalConfig(embedder=embedder, top_k=top_k, index_dir=Path(index_dir) if index_dir else None)
        ray = None
        if executor == "ray":
            from core.generation.ray_executor import connect

            ray = connect(ray_address)
        retrievers = domain_retrievers(docs, {q["domain"] for q in queries}, config, ray)
        if ray is not None and complete_json is None and assist is None:
            built = build_on_ray(ray, docs, config, planned, atomics, seed, top_k, augment)
        else:
            built = build_planned(planned, retrievers, atomics, seed, top_k, complete_json, augment, assist)
    instances = [instance for _, instance, _, _ in built if instance is not None]
    if llm_name and complete_json is not None:  # the model behind the LLM-assisted steps, named on every mark
        for instance in instances:
            instance.metadata["llm_model"] = llm_name
    if assist is not None and assist.generate_name:  # the generator behind a written conflict or gap edit
        for instance in instances:
            if instance.metadata.get("bundle", {}).get("generated"):
                instance.metadata["bundle"]["generated_by"] = assist.generate_name
    skipped = [reason for _, _, reason, _ in built if reason is not None]
    counts = check_counts(built)
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        fh.writelines(inst.model_dump_json(exclude_none=True) + "\n" for inst in instances)
    n = len(instances)
    return BuildReport(
        out_path=str(out), instances=n, by_mode=dict(Counter(i.mode for i in instances)),
        by_domain=dict(Counter(i.domain for i in instances)), by_origin=dict(Counter(i.origin for i in instances)),
        avg_constraints=round(sum(len(i.constraints) for i in instances) / n, 2) if n else 0.0, seed=seed,
        seconds=round(time.perf_counter() - start, 2), skipped=skipped, corpus=corpus_report,
        queries=dict(Counter(q["query_origin"] for q in queries)), checks=counts.checks, generated=counts.generated,
        regenerated=counts.regenerated, dropped_by_checks=counts.dropped,
        llm_generated=sum(generated_mark(i.metadata, len(i.constraints)) is not None for i in instances),
    )

