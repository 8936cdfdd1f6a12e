"""Hybrid retrieval over a chunked corpus: BM25 (bm25s, rank-bm25 as reference), dense (faiss), fusion.

BM25 agreement: bm25s with method="robertson" and rank_bm25.BM25Okapi(epsilon=0) compute the same
ranking. Both use idf = ln((N - df + 0.5) / (df + 0.5)); bm25s clamps a negative idf to 0 and
BM25Okapi replaces it with epsilon * mean_idf, so epsilon=0 makes them equal. Their term-frequency
parts differ by the constant factor (k1 + 1), which BM25Okapi includes and bm25s "robertson" omits;
`RankBm25Backend` divides rank-bm25's scores by (k1 + 1) so both backends return identical numbers.

Build memory: chunk texts are cut from the documents one at a time (`ChunkTable`, no second copy of the corpus),
tokenised straight into per-document term counts and appended to flat int32 arrays (`Postings`), from which the
bm25s score matrix is computed with numpy and scipy in bm25s's own float arithmetic (bit-identical scores, see
`bm25_csc`); no per-document token lists are kept, so the build's peak stays near the index's own size.

Indexes persist under <index_dir>/<corpus hash>/ and are rebuilt only when the documents, the chunking
settings or the embedder change.

Metadata filters: `search(..., where=...)` and `search_filtered` restrict one index to the documents whose metadata
match a filter at query time (filter first, then rank), so every filter shares the same index and scores; a filter
that matches nothing, or under which nothing scores, returns no documents.
"""

from __future__ import annotations

import json
import math
import re
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from core.config import REPO_ROOT
from core.construction.corpus import ChunkTable, CorpusDoc, corpus_hash
from core.construction.embedders import Embedder, build_embedder
from core.language import CJK_RE, cjk_terms
from core.registry import Registry

DEFAULT_INDEX_DIR = REPO_ROOT / "var" / "index"
K1, B = 1.5, 0.75
_TOKEN = re.compile(r"[a-z0-9]+(?:[.,'][a-z0-9]+)*")
STOPWORDS = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "has", "have", "how", "i", "in", "is", "it", "its", "may", "must", "of", "on", "or", "our", "should", "that", "the", "their", "there", "this", "to", "was", "what", "when", "where", "which", "who", "will", "with", "within", "would", "you", "your"]
)
_CJK_GAP = re.compile(rf"(?<={CJK_RE.pattern})\s+(?={CJK_RE.pattern})")
UNKNOWN_SAMPLE = 200  # chunks whose characters the [UNK] share is measured on
UNKNOWN_WARN = 0.3  # the share from which a build warns: a third of a text unread already blinds an embedding (MiniLM on
# the DomainRAG slice: 54%; on English: under 1%)
TOKENIZER_VERSION = "words+cjk-bigrams"  # part of the index key: an index built by another tokeniser is not reused


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens with stopwords removed (numbers like 4,000 and 0.45 stay whole), then, for Chinese /
    Japanese script, the character bigrams of core.language.cjk_terms with the spaces between Han / kana characters
    taken out first, so word-segmented and unsegmented text give the same tokens. Text without Han or kana gives the
    word tokens only, as before."""
    lowered = text.lower()
    words = [t for t in _TOKEN.findall(lowered) if t not in STOPWORDS]
    return words + cjk_terms(_CJK_GAP.sub("", lowered)) if CJK_RE.search(lowered) else words


def term_counts(text: str) -> Counter[str]:
    """Counter(tokenize(text)), built without the intermediate token lists: stopwords are dropped from the counts."""
    lowered = text.lower()
    counts = Counter(_TOKEN.findall(lowered))
    for word in STOPWORDS.intersection(counts):
        del counts[word]
    if CJK_RE.search(lowered):
        counts.update(cjk_terms(_CJK_GAP.sub("", lowered)))
    return counts


@dataclass
class Postings:
    """A corpus's term counts in flat int32 arrays: per document its distinct terms' ids and counts (concatenated),
    how many distinct terms it has and its length in tokens; `vocab` maps a term to its id."""

    vocab: dict[str, int] = field(default_factory=dict)
    terms: array = field(default_factory=lambda: array("i"))
    counts: array = field(default_factory=lambda: array("i"))
    sizes: array = field(default_factory=lambda: array("i"))
    lengths: array = field(default_factory=lambda: array("i"))

    @classmethod
    def of(cls, documents: Iterable[Mapping[str, int]]) -> Postings:
        """Postings of documents given as {term: count}, consumed one at a time."""
        postings = cls()
        for counts in documents:
            postings.add(counts)
        return postings

    def add(self, counts: Mapping[str, int]) -> None:
        """Append one document's {term: count}."""
        vocab = self.vocab
        setdefault = vocab.setdefault
        self.terms.fromlist([setdefault(term, len(vocab)) for term in counts])
        tfs = list(counts.values())
        self.counts.fromlist(tfs)
        self.sizes.append(len(tfs))
        self.lengths.append(sum(tfs))


def robertson_idf(df: np.ndarray, n_docs: int) -> np.ndarray:
    """bm25s's Robertson idf per term, ln((N - df + 0.5) / (df + 0.5)) floored at 0, as float32; computed with
    math.log once per distinct df, as bm25s does, so the values are bit-identical to its own."""
    values, inverse = np.unique(df, return_inverse=True)
    table = [math.log(max((n_docs - d + 0.5) / (d + 0.5), 1)) if d else 0.0 for d in values.tolist()]
    return np.asarray(table, dtype=np.float32)[inverse]


SCORE_BLOCK = 1 << 20  # postings scored per numpy step: bounds the float64 temporaries to a few MB


def bm25_csc(postings: Postings, k1: float = K1, b: float = B) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The bm25s "robertson" score matrix (data, indices, indptr of the documents x terms CSC matrix) of the postings.
    Same arithmetic as bm25s's build: float64 idf(float32) * tf / (tf + k1 * ((1 - b) + b * len / avg_len)), stored
    as float32, so every stored score equals bm25s's bit for bit."""
    from scipy.sparse import csr_matrix

    n_docs, n_terms = len(postings.lengths), len(postings.vocab)
    terms = np.frombuffer(postings.terms, dtype=np.intc)
    lengths = np.frombuffer(postings.lengths, dtype=np.intc).astype(np.float64)
    norm = k1 * ((1 - b) + b * lengths / lengths.mean()) if n_docs else lengths
    idf = robertson_idf(np.bincount(terms, minlength=n_terms), n_docs)
    sizes = np.frombuffer(postings.sizes, dtype=np.intc)
    doc_of = np.repeat(np.arange(n_docs, dtype=np.intc), sizes)
    tf_all = np.frombuffer(postings.counts, dtype=np.intc)
    data = np.empty(len(terms), dtype=np.float32)
    for start in range(0, len(terms), SCORE_BLOCK):
        part = slice(start, start + SCORE_BLOCK)
        tf = tf_all[part].astype(np.float64)
        data[part] = idf[terms[part]].astype(np.float64) * (tf / (norm[doc_of[part]] + tf))
    del doc_of, tf_all
    indptr = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(sizes, out=indptr[1:])
    csc = csr_matrix((data, terms, indptr), shape=(n_docs, n_terms)).tocsc()
    return csc.data, csc.indices, csc.indptr


class BM25Backend(Protocol):
    """A BM25 index over chunk texts that scores every chunk for a query."""

    def scores(self, query_tokens: list[str]) -> np.ndarray: ...


BM25_BACKENDS: Registry[Callable[[Iterable[str]], BM25Backend]] = Registry("bm25 backend")


class Bm25sBackend:
    """bm25s with the Robertson idf/tf variant (see module docstring); the index is built from streamed term counts
    (`from_texts`, `bm25_csc`) and scored by bm25s itself."""

    def __init__(self, corpus_tokens: Iterable[list[str]], k1: float = K1, b: float = B) -> None:
        self._index(Postings.of(Counter(tokens) for tokens in corpus_tokens), k1, b)

    @classmethod
    def from_texts(cls, texts: Iterable[str], k1: float = K1, b: float = B) -> Bm25sBackend:
        """The index of texts tokenised one at a time (see `tokenize`)."""
        backend = cls.__new__(cls)
        backend._index(Postings.of(term_counts(text) for text in texts), k1, b)
        return backend

    def _index(self, postings: Postings, k1: float, b: float) -> None:
        import bm25s

        self.model = bm25s.BM25(method="robertson", k1=k1, b=b)
        data, indices, indptr = bm25_csc(postings, k1, b)
        vocab, n_docs = postings.vocab, len(postings.lengths)
        vocab.setdefault("", len(vocab))  # bm25s's empty token: in the vocabulary, never in a column
        self.model.scores = {"data": data, "indices": indices, "indptr": indptr, "num_docs": n_docs}
        self.model.vocab_dict = vocab
        self.model.unique_token_ids_set = set(vocab.values())
        self.model.nonoccurrence_array = None
        self.vocab = vocab

    def scores(self, query_tokens: list[str]) -> np.ndarray:
        known = [t for t in query_tokens if t in self.vocab]
        if not known:
            return np.zeros(self.model.scores["num_docs"], dtype=np.float32)
        return np.asarray(self.model.get_scores(known), dtype=np.float32)

    def save(self, path: Path) -> None:
        self.model.save(str(path))

    @classmethod
    def load(cls, path: Path) -> Bm25sBackend:
        import bm25s

        obj = cls.__new__(cls)
        obj.model = bm25s.BM25.load(str(path))
        obj.vocab = obj.model.vocab_dict
        return obj


BM25_BACKENDS.add("bm25s", Bm25sBackend.from_texts)


class RankBm25Backend:
    """rank_bm25.BM25Okapi (epsilon=0), scores divided by (k1 + 1) to match bm25s robertson."""

    def __init__(self, corpus_tokens: list[list[str]], k1: float = K1, b: float = B) -> None:
        from rank_bm25 import BM25Okapi

        self.model = BM25Okapi(corpus_tokens, k1=k1, b=b, epsilon=0.0)
        self.k1 = k1

    def scores(self, query_tokens: list[str]) -> np.ndarray:
        return (np.asarray(self.model.get_scores(query_tokens)) / (self.k1 + 1)).astype(np.float32)


BM25_BACKENDS.add("rank_bm25", lambda texts: RankBm25Backend([tokenize(text) for text in texts]))


@dataclass(frozen=True)
class Hit:
    """A retrieved document with its fused score, 0-based rank and the per-retriever scores."""

    doc_id: str
    score: float
    rank: int
    bm25: float = 0.0
    dense: float = 0.0


@dataclass
class RetrievalConfig:
    """Chunking, backends, fusion and persistence settings."""

    window: int = 200
    overlap: int = 40
    bm25_backend: str = "bm25s"
    embedder: str | None = "minilm-onnx"
    embedder_options: dict = field(default_factory=dict)
    fusion: str = "rrf"  # "rrf" or "weighted"
    rrf_k: int = 60
    dense_weight: float = 0.5
    top_k: int = 10
    index_dir: Path | None = DEFAULT_INDEX_DIR
    dense_search: str = "exact"  # filtered dense search: "exact" (the flat matrix, numpy) or "faiss" (IDSelector)


def doc_max(doc_ids: Iterable[str], chunk_scores: np.ndarray) -> dict[str, float]:
    """Document score = best chunk score (`doc_ids`: each chunk's document)."""
    best: dict[str, float] = {}
    for doc_id, score in zip(doc_ids, chunk_scores, strict=True):
        if doc_id not in best or score > best[doc_id]:
            best[doc_id] = float(score)
    return best


Where = Mapping[str, Any] | Callable[[CorpusDoc], bool]  # a metadata filter: {key: value or [values]} or a predicate
DOC_FIELDS = ("domain", "source", "content_type")


def doc_matches(doc: CorpusDoc, where: Mapping[str, Any]) -> bool:
    """Whether `doc` matches every {key: value or [values]} of `where` (domain, source, content_type or a metadata
    key; a key the document lacks matches only None)."""
    for key, wanted in where.items():
        value = getattr(doc, key) if key in DOC_FIELDS else doc.meta.get(key)
        if value not in (wanted if isinstance(wanted, list | tuple | set | frozenset) else [wanted]):
            return False
    return True


def top_chunks(doc_ids: Sequence[str], scores: np.ndarray, keep: np.ndarray, depth: int) -> dict[str, float]:
    """Document scores (best chunk) over the `depth` best chunks among those `keep` marks (`doc_ids`: each chunk's
    document)."""
    return top_of(doc_ids, scores, np.flatnonzero(keep), depth)


def top_of(doc_ids: Sequence[str], scores: np.ndarray, idx: np.ndarray, depth: int) -> dict[str, float]:
    """Document scores (best chunk) over the `depth` best chunks among the chunk numbers `idx` (ascending)."""
    if len(idx) > depth:
        idx = idx[np.argpartition(-scores[idx], depth - 1)[:depth]]
    return doc_max([doc_ids[i] for i in idx.tolist()], scores[idx])


def ranked(scores: dict[str, float]) -> list[str]:
    """Doc ids by descending score, ties broken by doc id (deterministic)."""
    return sorted(scores, key=lambda d: (-scores[d], d))


def rrf(rankings: list[list[str]], k: int = 60) -> dict[str, float]:
    """Reciprocal rank fusion: sum over rankings of 1 / (k + rank), rank starting at 1."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, doc_id in enumerate(ranking, 1):
            fused[doc_id] = fused.get(doc_id, 0.0) + 1.0 / (k + rank)
    return fused


def weighted(bm25: dict[str, float], dense: dict[str, float], dense_weight: float) -> dict[str, float]:
    """Min-max normalise each score set and mix them: (1 - w) * bm25 + w * dense."""

    def norm(scores: dict[str, float]) -> dict[str, float]:
        if not scores:
            return {}
        lo, hi = min(scores.values()), max(scores.values())
        return {d: (s - lo) / (hi - lo) if hi > lo else 0.0 for d, s in scores.items()}

    nb, nd = norm(bm25), norm(dense)
    return {d: (1 - dense_weight) * nb.get(d, 0.0) + dense_weight * nd.get(d, 0.0) for d in set(nb) | set(nd)}


def load_labelled_queries(paths: list[Path]) -> list[tuple[str, set[str]]]:
    """(query, supporting doc ids) for every query in the JSONL files that has supporting documents."""
    rows = [json.loads(line) for path in paths for line in Path(path).read_text(encoding="utf-8").splitlines() if line]
    return [(row["query"], set(row["supporting_doc_ids"])) for row in rows if row.get("supporting_doc_ids")]


def retrieval_quality(retriever: Retriever, labelled: list[tuple[str, set[str]]], mode: str = "hybrid",
                      k: int = 10) -> dict[str, float]:
    """Mean recall@k (share of a query's relevant documents in its top k) and MRR@k (1 / rank of the first relevant
    document in the top k, 0 if none) of the retriever in `mode` over (query, relevant ids) pairs."""
    recall, mrr = [], []
    for query, relevant in labelled:
        top = [hit.doc_id for hit in retriever.search(query, k, mode)]
        recall.append(len(relevant.intersection(top)) / len(relevant))
        mrr.append(next((1 / rank for rank, doc_id in enumerate(top, 1) if doc_id in relevant), 0.0))
    return {f"recall@{k}": float(np.mean(recall)), f"mrr@{k}": float(np.mean(mrr))}


def filter_key(where: Where) -> str | None:
    """The cache key of a dict filter (None for a predicate, which is not cached)."""
    return None if callable(where) else json.dumps(where, sort_keys=True, default=str)


def flat_vectors(index: Any) -> np.ndarray:
    """The vectors of a faiss flat index as a view of the index's own storage (no copy of the matrix)."""
    import faiss

    if index.ntotal == 0:
        return np.zeros((0, index.d), dtype=np.float32)
    return faiss.rev_swig_ptr(index.get_xb(), index.ntotal * index.d).reshape(index.ntotal, index.d)


DENSE_SEARCHES = ("exact", "faiss")
DENSE_BATCH = 8192  # chunks embedded and added to the index at a time


def id_selector(members: np.ndarray, total: int) -> tuple[Any, np.ndarray]:
    """A faiss selector of the chunk numbers `members` (a bitmap over `total` chunks) and the bitmap it reads, which
    must outlive it."""
    import faiss

    bits = np.zeros(total, dtype=bool)
    bits[members] = True
    packed = np.packbits(bits, bitorder="little")
    return faiss.IDSelectorBitmap(total, faiss.swig_ptr(packed)), packed


class Retriever:
    """BM25 + optional dense retrieval over chunked documents, with on-disk index reuse."""

    def __init__(self, docs: list[CorpusDoc], config: RetrievalConfig | None = None,
                 embedder: Embedder | None = None) -> None:
        self.config = config or RetrievalConfig()
        self.docs = {d.doc_id: d for d in docs}
        self.chunks = ChunkTable(docs, self.config.window, self.config.overlap)
        self.embedder = embedder
        if self.embedder is None and self.config.embedder:
            self.embedder = build_embedder(self.config.embedder, **self.config.embedder_options)
        emb_id = self.embedder.model_id if self.embedder else "none"
        self.key = corpus_hash(docs, f"{self.config.window}/{self.config.overlap}/{emb_id}/{TOKENIZER_VERSION}")
        self.loaded_from_disk: dict[str, bool] = {}
        self.bm25 = self._bm25_index()
        self.dense = self._dense_index() if self.embedder else None
        self.unknown_share = self._unknown_share()
        self._masks: dict[str, np.ndarray] = {}
        self._members: dict[str, np.ndarray] = {}
        self._vectors: np.ndarray | None = None
        self._selectors: dict[str, Any] = {}
        if self.config.dense_search not in DENSE_SEARCHES:
            raise ValueError(f"unknown dense search {self.config.dense_search!r}; known: {', '.join(DENSE_SEARCHES)}")

    def _unknown_share(self, sample: int = UNKNOWN_SAMPLE) -> float | None:
        """The embedder's [UNK] share of the characters of the first `sample` chunks (None: no embedder, or one whose
        tokenizer is not ours to read, such as an API)."""
        measure = getattr(self.embedder, "unknown_share", None)
        return None if measure is None else float(measure(list(islice(self.chunks.texts(), sample))))

    def language_warning(self) -> str | None:
        """A warning when the embedder cannot read the corpus's language (most characters [UNK]), else None."""
        if self.unknown_share is None or self.unknown_share < UNKNOWN_WARN or self.embedder is None:
            return None
        return (f"the dense retriever's embedder {self.embedder.model_id} maps {self.unknown_share:.0%} of the corpus "
                f"sample's characters to unknown tokens ([UNK]): it cannot read this language, so its dense "
                "retrieval is near random; use an embedder for this language (or the released dense runs)")

    @property
    def index_path(self) -> Path | None:
        return Path(self.config.index_dir) / self.key if self.config.index_dir else None

    def _bm25_index(self) -> BM25Backend:
        path = self.index_path / "bm25s" if self.index_path else None
        if self.config.bm25_backend == "bm25s" and path and (path / "params.index.json").exists():
            self.loaded_from_disk["bm25"] = True
            return Bm25sBackend.load(path)
        backend = BM25_BACKENDS.get(self.config.bm25_backend)(self.chunks.texts())
        self.loaded_from_disk["bm25"] = False
        if path and isinstance(backend, Bm25sBackend):
            path.mkdir(parents=True, exist_ok=True)
            backend.save(path)
        return backend

    def _dense_index(self):
        import faiss

        path = self.index_path / "dense.faiss" if self.index_path else None
        if path and path.exists():
            self.loaded_from_disk["dense"] = True
            return faiss.read_index(str(path))
        index = None
        texts = self.chunks.texts()
        while batch := list(islice(texts, DENSE_BATCH)):  # batches: the index is the only full copy of the vectors
            vectors = self.embedder.embed(batch)
            index = index or faiss.IndexFlatIP(vectors.shape[1])
            index.add(vectors)
        index = index or faiss.IndexFlatIP(int(getattr(self.embedder, "dim", 0) or 1))
        self.loaded_from_disk["dense"] = False
        if path:
            path.parent.mkdir(parents=True, exist_ok=True)
            faiss.write_index(index, str(path))
            (path.parent / "chunks.json").write_text(json.dumps([[c.doc_id, c.index] for c in self.chunks]))
        return index

    def bm25_scores(self, query: str, depth: int | None = None) -> dict[str, float]:
        """BM25 score per document (best chunk) over matching chunks, or only the best `depth` chunks."""
        scores = self.bm25.scores(tokenize(query))
        idx = np.flatnonzero(scores > 0)
        if depth is not None and len(idx) > depth:
            idx = idx[np.argpartition(-scores[idx], depth - 1)[:depth]]
        return doc_max([self.chunks.doc_ids[i] for i in idx], scores[idx])

    def dense_scores(self, query: str, depth: int = 100) -> dict[str, float]:
        """Cosine similarity of the best `depth` chunks, aggregated to documents."""
        if self.dense is None:
            return {}
        assert self.embedder is not None  # the dense index exists only with an embedder
        q = self.embedder.embed([query])
        depth = min(depth, len(self.chunks))
        sims, ids = self.dense.search(q, depth)
        picked = [self.chunks.doc_ids[i] for i in ids[0] if i >= 0]
        return doc_max(picked, sims[0][: len(picked)])

    def search(self, query: str, k: int | None = None, mode: str = "hybrid", where: Where | None = None) -> list[Hit]:
        """Top-k documents for a query; mode is "bm25", "dense" or "hybrid" (dense falls back to bm25); `where`
        restricts the search to the documents whose metadata match (see search_filtered)."""
        if where is not None:
            return self.search_filtered(query, {"": where}, k, mode)[""]
        k = k or self.config.top_k
        depth = max(4 * k, 50)
        bm = self.bm25_scores(query, depth) if mode in ("bm25", "hybrid") or self.dense is None else {}
        de = self.dense_scores(query, depth) if mode in ("dense", "hybrid") else {}
        return self._fuse(bm, de, mode, k)

    def _fuse(self, bm: dict[str, float], de: dict[str, float], mode: str, k: int) -> list[Hit]:
        if mode == "bm25" or not de:
            fused = bm
        elif mode == "dense":
            fused = de
        elif self.config.fusion == "weighted":
            fused = weighted(bm, de, self.config.dense_weight)
        else:
            fused = rrf([ranked(bm), ranked(de)], self.config.rrf_k)
        order = ranked(fused)[:k]
        return [Hit(d, fused[d], r, bm.get(d, 0.0), de.get(d, 0.0)) for r, d in enumerate(order)]

    def chunk_members(self, where: Where) -> np.ndarray:
        """The numbers of the chunks that belong to documents matching `where`, ascending: the filter's sub-index, so
        a filtered search looks at its own chunks only (dict filters are cached per retriever)."""
        key = filter_key(where)
        if key is not None and key in self._members:
            return self._members[key]
        members = np.flatnonzero(self.chunk_mask(where))
        if key is not None:
            self._members[key] = members
        return members

    def chunk_mask(self, where: Where) -> np.ndarray:
        """Which chunks belong to documents matching `where` (dict filters are cached per retriever)."""
        key = filter_key(where)
        if key is not None and key in self._masks:
            return self._masks[key]
        test = where if callable(where) else (lambda doc: doc_matches(doc, where))
        keep = {doc_id for doc_id, doc in self.docs.items() if test(doc)}
        mask = np.fromiter((doc_id in keep for doc_id in self.chunks.doc_ids), dtype=bool, count=len(self.chunks))
        if key is not None:
            self._masks[key] = mask
        return mask

    def dense_similarities(self, query: str) -> np.ndarray:
        """Cosine similarity of the query to every chunk (exact, the flat index's vectors)."""
        if self.dense is None or self.embedder is None:
            raise ValueError("dense similarities need a dense index: this retriever is BM25-only")
        if self._vectors is None:
            self._vectors = flat_vectors(self.dense)
        return self._vectors @ self.embedder.embed([query])[0]

    def query_vector(self, query: str) -> np.ndarray:
        """The embedded query, shape (1, d)."""
        if self.dense is None or self.embedder is None:
            raise ValueError("dense search needs a dense index: this retriever is BM25-only")
        return self.embedder.embed([query])

    def faiss_filtered(self, vector: np.ndarray, where: Where, depth: int) -> dict[str, float]:
        """The best `depth` chunks among those of documents matching `where`, by the faiss index's own filtered
        nearest-neighbour search (an IDSelector bitmap, cached per dict filter), aggregated to documents."""
        import faiss

        assert self.dense is not None
        key = filter_key(where)
        chosen = self._selectors.get(key) if key is not None else None
        if chosen is None:
            chosen = id_selector(self.chunk_members(where), self.dense.ntotal)
            if key is not None:
                self._selectors[key] = chosen
        depth = min(depth, self.dense.ntotal)
        params = faiss.SearchParameters()
        params.sel = chosen[0]
        sims, ids = self.dense.search(vector, depth, params=params)
        picked = [int(i) for i in ids[0] if i >= 0]
        return doc_max([self.chunks.doc_ids[i] for i in picked], sims[0][: len(picked)])

    def search_filtered(self, query: str, filters: Mapping[str, Where], k: int | None = None,
                        mode: str = "hybrid") -> dict[str, list[Hit]]:
        """Top-k documents for a query under each named metadata filter, the query scored once over the one index:
        each filter keeps its matching documents first, then ranks them (BM25 keeps only documents that score above
        0), so a filter matching nothing returns []."""
        k = k or self.config.top_k
        depth = max(4 * k, 50)
        bm_all = self.bm25.scores(tokenize(query)) if mode in ("bm25", "hybrid") or self.dense is None else None
        dense = mode in ("dense", "hybrid") and self.dense is not None
        by_faiss = dense and self.config.dense_search == "faiss"
        de_all = self.dense_similarities(query) if dense and not by_faiss else None
        vector = self.query_vector(query) if by_faiss else None
        out: dict[str, list[Hit]] = {}
        doc_ids = self.chunks.doc_ids
        for name, where in filters.items():
            members = self.chunk_members(where)
            bm = top_of(doc_ids, bm_all, members[bm_all[members] > 0], depth) if bm_all is not None else {}
            if vector is not None:
                de = self.faiss_filtered(vector, where, depth) if len(members) else {}
            else:
                de = top_of(doc_ids, de_all, members, depth) if de_all is not None else {}
            out[name] = self._fuse(bm, de, mode, k)
        return out
