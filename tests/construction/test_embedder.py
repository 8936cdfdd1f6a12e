"""The int8 MiniLM path against the fp32 reference: embeddings, retrieval quality on the bundled corpus, batching."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.construction.corpus import load_corpus
from core.construction.embedders import MiniLmOnnxEmbedder, build_embedder, length_batches
from core.construction.retrieval import RetrievalConfig, Retriever, load_labelled_queries, retrieval_quality

REPO = Path(__file__).resolve().parents[2]

TEXTS = {
    "english sentence": "The car would not start on a cold morning.",
    "numbers and units": "Replace the gearbox oil every 4,000 operating hours with ISO VG 320 synthetic gear oil.",
    "chinese": "风力发电机齿轮箱油每4000运行小时更换一次，使用合成齿轮油。",
    "japanese": "変圧器の絶縁油は年に二回、アセチレンと水素の濃度を検査します。",
    "mixed script": "The 党支部 meeting (党员大会) approves new members by a majority vote.",
    "long, truncated at 256 tokens": " ".join(
        ["Transformer oil samples are tested for acetylene and hydrogen twice a year at Kestrel Point."] * 30),
    "empty": "",
}


@pytest.fixture(scope="module")
def int8() -> MiniLmOnnxEmbedder:
    return build_embedder("minilm-onnx", precision="int8")


@pytest.fixture(scope="module")
def fp32() -> MiniLmOnnxEmbedder:
    return build_embedder("minilm-onnx", precision="fp32")


# The empty text is [CLS] [SEP] alone: two token rows, so one rounded activation weighs more
# (0.982 with a scale per call, 0.988 per row).
MIN_COSINE = {name: 0.98 if name == "empty" else 0.99 for name in TEXTS}


@pytest.mark.parametrize("text, floor", [(TEXTS[name], MIN_COSINE[name]) for name in TEXTS], ids=list(TEXTS))
def test_int8_embedding_close_to_fp32(int8, fp32, text, floor):
    assert float(int8.embed([text])[0] @ fp32.embed([text])[0]) >= floor


def test_precisions_have_distinct_index_keys(int8, fp32):
    assert int8.model_id != fp32.model_id
    with pytest.raises(ValueError, match="unknown precision"):
        MiniLmOnnxEmbedder(precision="fp16")


@pytest.fixture(scope="module")
def bundled_quality(int8, fp32) -> dict[tuple[str, str], dict[str, float]]:
    docs = load_corpus(sorted((REPO / "data/corpus").glob("*.jsonl")))
    labelled = load_labelled_queries(sorted((REPO / "data/queries").glob("*.jsonl")))
    out = {}
    for name, embedder in (("int8", int8), ("fp32", fp32)):
        retriever = Retriever(docs, RetrievalConfig(index_dir=None), embedder=embedder)
        for mode in ("dense", "hybrid"):
            out[name, mode] = retrieval_quality(retriever, labelled, mode)
    return out


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
@pytest.mark.parametrize("metric", ["recall@10", "mrr@10"])
def test_int8_retrieval_no_worse_than_fp32_on_bundled_corpus(bundled_quality, mode, metric):
    assert bundled_quality["int8", mode][metric] >= bundled_quality["fp32", mode][metric] - 0.01


@pytest.mark.parametrize(
    "lengths, max_tokens, max_size, same_length, expected",
    [
        pytest.param([5, 3, 4], 100, 64, False, [[1, 2, 0]], id="all fit: one batch, shortest first"),
        pytest.param([5, 3, 4], 8, 64, False, [[1, 2], [0]], id="padded to the longest: 2 x 4 fits 8, 3 x 5 does not"),
        pytest.param([5, 3, 4], 7, 64, False, [[1], [2], [0]], id="padded to the longest: 2 x 4 exceeds 7"),
        pytest.param([3, 3, 3, 3], 100, 3, False, [[0, 1, 2], [3]], id="capped by size"),
        pytest.param([300, 2], 256, 64, False, [[1], [0]], id="a text over the budget still gets a batch"),
        pytest.param([], 256, 64, False, [], id="nothing"),
        pytest.param([5, 3, 5, 3, 4], 100, 64, True, [[1, 3], [4], [0, 2]], id="same length: one length a batch"),
        pytest.param([3, 3, 3, 3], 9, 64, True, [[0, 1, 2], [3]], id="same length: still within the budget"),
    ],
)
def test_length_batches(lengths, max_tokens, max_size, same_length, expected):
    assert length_batches(lengths, max_tokens, max_size, same_length=same_length) == expected


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_batched_embeddings_come_back_in_input_order(precision):
    embedder = MiniLmOnnxEmbedder(precision=precision, batch_tokens=64)
    texts = list(TEXTS.values())[::-1]
    together = embedder.embed(texts)
    alone = np.vstack([embedder.embed([t]) for t in texts])
    assert together.shape == (len(texts), 384)
    np.testing.assert_allclose(together, alone, atol=1e-5)


TARGET = TEXTS["numbers and units"]
SAME_LENGTH = [TARGET.replace("4,000", hours) for hours in ("5,000", "6,000", "8,000")]  # one call with the target
NEIGHBOURS = {
    "texts of its own token length (one call)": SAME_LENGTH,
    "short texts": ["short", "The pump stopped.", TEXTS["english sentence"]],
    "a text truncated at 256 tokens": [TEXTS["long, truncated at 256 tokens"]],
    "an empty text and its own length": [TEXTS["empty"], *SAME_LENGTH[:1]],
    "every test text and its own length": [*TEXTS.values(), *SAME_LENGTH],
}


@pytest.mark.parametrize("neighbours", list(NEIGHBOURS.values()), ids=list(NEIGHBOURS))
@pytest.mark.parametrize("first", [True, False], ids=["first", "last"])
def test_int8_vector_independent_of_its_batch(neighbours, first):
    embedder = MiniLmOnnxEmbedder(precision="int8", batch_size=64, batch_tokens=1 << 20)
    assert len({len(e.ids) for e in embedder.tokenizer.encode_batch([TARGET, *SAME_LENGTH])}) == 1  # share a call
    batch = [TARGET, *neighbours] if first else [*neighbours, TARGET]
    together = embedder.embed(batch)
    np.testing.assert_array_equal(together[0 if first else -1], embedder.embed([TARGET])[0])


def test_int8_call_refuses_mixed_lengths(int8):
    with pytest.raises(ValueError, match="one token length"):
        int8._run([[101, 2000, 102], [101, 102]])
