"""`gauntlet build --executor ray` on a local Ray instance (2 CPUs, no dashboard, usage statistics off, loopback
only): each domain's corpus embedded in a Ray task and the instances simulated and fused in Ray tasks give the same
benchmark file, and the same dense vectors, as a local build."""

from __future__ import annotations

import faiss
import numpy as np
import pytest
from conftest import REPO

from core.construction.build import build_benchmark
from core.generation.ray_executor import connect

pytestmark = pytest.mark.xdist_group("ray")  # one xdist worker starts Ray (with --dist loadgroup)


@pytest.fixture(scope="module")
def ray_session():
    """One local Ray instance for the module."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_USAGE_STATS_ENABLED", "0")
        ray = connect(None, num_cpus=2)
        try:
            yield ray
        finally:
            ray.shutdown()


def build(tmp_path, name: str, embedder: str | None, index: bool, executor: str):
    """A small build of two domains; its report, output file and index folder (None: no index kept)."""
    out, index_dir = tmp_path / f"{name}.jsonl", tmp_path / f"index-{name}" if index else None
    report = build_benchmark(REPO / "data/queries", REPO / "data/corpus", REPO / "data/libraries", out, 5,
                             embedder=embedder, index_dir=index_dir, domains=["legal", "web_search"],
                             max_queries_per_domain=6, executor=executor)
    return report, out, index_dir


def dense_vectors(index_dir) -> dict[str, np.ndarray]:
    """Every dense index's vectors under an index folder, by corpus key."""
    return {path.parent.name: (index := faiss.read_index(str(path))).reconstruct_n(0, index.ntotal)
            for path in sorted(index_dir.glob("*/dense.faiss"))}


@pytest.mark.parametrize(("embedder", "index"), [(None, False), ("minilm-onnx", True)],
                         ids=["bm25-no-index-folder", "hybrid-minilm"])
def test_ray_build_writes_the_local_builds_file(ray_session, tmp_path, embedder, index):
    local, local_out, local_index = build(tmp_path, "local", embedder, index, "local")
    ray, ray_out, ray_index = build(tmp_path, "ray", embedder, index, "ray")
    assert local.instances > 0 and local.skipped == ray.skipped
    assert ray_out.read_bytes() == local_out.read_bytes()
    assert (ray.by_mode, ray.by_domain, ray.avg_constraints) == (local.by_mode, local.by_domain, local.avg_constraints)
    if index:
        vectors, expected = dense_vectors(ray_index), dense_vectors(local_index)
        assert vectors.keys() == expected.keys() and len(vectors) == 2
        assert all(np.array_equal(vectors[key], expected[key]) for key in expected)
