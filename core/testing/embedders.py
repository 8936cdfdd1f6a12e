"""A scripted embedder for tests and benchmarks: a deterministic unit vector per text (seeded by its sha256), no
model and no network. Its vectors carry no meaning, so rankings made with it are not retrieval quality; the cost of
building and searching an index of its vectors is that of any embedder of the same dimension."""

from __future__ import annotations

import hashlib

import numpy as np

from core.construction.embedders import l2_normalise

DEFAULT_DIM = 384  # all-MiniLM-L6-v2's dimension, the bundled embedder's


class ScriptedEmbedder:
    """Deterministic unit vectors: the same text always gives the same vector; `calls` and `texts` count the work."""

    def __init__(self, dim: int = DEFAULT_DIM) -> None:
        self.dim = dim
        self.model_id = f"scripted:{dim}"
        self.calls = 0
        self.texts = 0

    def vector(self, text: str) -> np.ndarray:
        """The vector of one text (not normalised)."""
        seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
        return np.random.default_rng(seed).standard_normal(self.dim, dtype=np.float32)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit vectors of `texts`, shape (len(texts), dim), float32."""
        self.calls += 1
        self.texts += len(texts)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = self.vector(text)
        return l2_normalise(out)
