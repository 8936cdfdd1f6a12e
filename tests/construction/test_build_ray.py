"""`gauntlet build --executor ray` on the shared local Ray runtime (tests/ray_runtime.py: 2 CPUs, no dashboard, usage
statistics off, loopback only): each domain's corpus embedded in a Ray task and the instances simulated and fused in
Ray tasks give the same benchmark file, and the same dense vectors, as a local build."""

from __future__ import annotations

from pathlib import Path

import faiss
import numpy as np
import pytest
from conftest import REPO

import core.construction.build as construction
from core.construction.build import build_benchmark

DOMAINS = ["legal", "web_search"]
HYBRID_DOCS = 10  # per domain: its first two topics, which hold the support of its first HYBRID_QUERIES queries
HYBRID_QUERIES = 2  # per domain: 4 instances in all (2 noisy, 1 conflict, 1 gap)


def small_corpus(folder: Path) -> Path:
    """A corpus folder with the first HYBRID_DOCS documents of each of DOMAINS (a sixth of their bundled corpus)."""
    folder.mkdir()
    for domain in DOMAINS:
        lines = (REPO / f"data/corpus/{domain}.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
        (folder / f"{domain}.jsonl").write_text("".join(lines[:HYBRID_DOCS]), encoding="utf-8")
    return folder


def build(tmp_path, name: str, embedder: str | None, index: bool, executor: str, corpus: Path, queries: int):
    """A small build of DOMAINS; its report, output file and index folder (None: no index kept)."""
    out, index_dir = tmp_path / f"{name}.jsonl", tmp_path / f"index-{name}" if index else None
    report = build_benchmark(REPO / "data/queries", corpus, REPO / "data/libraries", out, 5, embedder=embedder,
                             index_dir=index_dir, domains=DOMAINS, max_queries_per_domain=queries, executor=executor)
    return report, out, index_dir


def dense_vectors(index_dir) -> dict[str, np.ndarray]:
    """Every dense index's vectors under an index folder, by corpus key."""
    return {path.parent.name: (index := faiss.read_index(str(path))).reconstruct_n(0, index.ntotal)
            for path in sorted(index_dir.glob("*/dense.faiss"))}


# The hybrid case embeds a small corpus (MiniLM is the dear part: six times the corpus, six times the time) and
# lowers the threshold under which texts are embedded in the calling process, so that each domain's corpus really is
# embedded by a Ray task (with the bundled corpus's 60 chunks per domain, under the 64 of RAY_MIN_TEXTS, it was not).
@pytest.mark.parametrize(("embedder", "index", "small", "queries"),
                         [(None, False, False, 6), ("minilm-onnx", True, True, HYBRID_QUERIES)],
                         ids=["bm25-no-index-folder", "hybrid-minilm"])
def test_ray_build_writes_the_local_builds_file(ray_runtime, tmp_path, monkeypatch, embedder, index, small, queries):
    corpus = small_corpus(tmp_path / "corpus") if small else REPO / "data/corpus"
    if small:
        monkeypatch.setattr(construction, "RAY_MIN_TEXTS", HYBRID_DOCS)  # each domain's chunks: at least HYBRID_DOCS
    local, local_out, local_index = build(tmp_path, "local", embedder, index, "local", corpus, queries)
    ray, ray_out, ray_index = build(tmp_path, "ray", embedder, index, "ray", corpus, queries)
    assert local.instances > 0 and local.skipped == ray.skipped
    assert ray_out.read_bytes() == local_out.read_bytes()
    assert len(local.by_mode) == 3  # noisy, conflict and gap instances built
    assert (ray.by_mode, ray.by_domain, ray.avg_constraints) == (local.by_mode, local.by_domain, local.avg_constraints)
    if index:
        vectors, expected = dense_vectors(ray_index), dense_vectors(local_index)
        assert vectors.keys() == expected.keys() and len(vectors) == 2
        assert all(np.array_equal(vectors[key], expected[key]) for key in expected)
        assert min(len(v) for v in vectors.values()) >= construction.RAY_MIN_TEXTS  # embedded by Ray tasks
