"""Percentile-bootstrap replicates of column means and their percentile bounds."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import numpy as np
from threadpoolctl import ThreadpoolController


def bootstrap_weights(n: int, n_resamples: int, seed: int) -> np.ndarray:
    """Resample counts, shape (R, n) float64: how often each of n rows is drawn in each of R with-replacement resamples.

    The matrix depends on (n, R, seed) only, so the most recently used ones of at most _CACHED_CELLS cells (32 MB)
    each are kept, read-only, up to _HELD_CELLS cells together (64 MB): the picker tests the pick against every other
    model on the same shared instances, which drew the same matrix once per model before. Larger ones are drawn each
    time, so the cache never holds much memory.
    """
    if n * n_resamples > _CACHED_CELLS:
        return _draw_weights(n, n_resamples, seed)
    return _cached_weights(int(n), int(n_resamples), int(seed))


_CACHED_CELLS = 1 << 22  # the largest matrix kept: 32 MB of float64
# All kept matrices together, 64 MB (the cache was the last four matrices, up to 128 MB). Bounded by size, not count:
# one process serves every page, and at paper scale the pages' matrices are six: the picker's 983 x 2000 (16 MB), Model
# pairs' four pairs (22 MB) and Data quality's 408 x 1000 (3 MB), 41 MB in all. Four entries made each page evict the
# others' matrices, so every first render of the Pick a generator page redrew its matrix after a visit to the other
# two (and onto fresh memory: 0.10 -> 0.13-0.15 s CPU in the full bench_dashboards run, 0.10 s benched alone).
_HELD_CELLS = 1 << 23
_held: OrderedDict[tuple[int, int, int], np.ndarray] = OrderedDict()  # (n, R, seed) -> weights, least recent first
_held_lock = threading.Lock()


def _cached_weights(n: int, n_resamples: int, seed: int) -> np.ndarray:
    """bootstrap_weights from the cache, drawn and kept (evicting the least recently used beyond _HELD_CELLS) on a
    miss. Two sessions missing the same key at once both draw it (the same matrix); the lock only guards the dict."""
    key = (n, n_resamples, seed)
    with _held_lock:
        weights = _held.get(key)
        if weights is not None:
            _held.move_to_end(key)
            return weights
    weights = _draw_weights(n, n_resamples, seed)
    weights.flags.writeable = False  # shared between callers: nobody may change it in place
    with _held_lock:
        weights = _held.setdefault(key, weights)
        _held.move_to_end(key)
        held = sum(w.size for w in _held.values())
        while held > _HELD_CELLS:
            _, evicted = _held.popitem(last=False)
            held -= evicted.size
    return weights


def _draw_weights(n: int, n_resamples: int, seed: int) -> np.ndarray:
    """bootstrap_weights, drawn (_weight_blocks written into one matrix)."""
    weights = np.empty((n_resamples, n), dtype=np.float64)
    block = max(1, min(n_resamples, _BINCOUNT_CELLS // max(n, 1)))  # counted in cache-sized blocks of resamples
    for start, counts in _weight_blocks(n, n_resamples, seed, block):
        weights[start : start + len(counts)] = counts
    return weights


def _weight_blocks(n: int, n_resamples: int, seed: int, block: int) -> Iterator[tuple[int, np.ndarray]]:
    """bootstrap_weights(n, n_resamples, seed) as int64 counts, `block` resamples at a time: (first resample, counts).

    The row indices are drawn block by block from one generator (the same stream, so the same counts, as drawing the
    whole R x n index matrix at once) and counted as they come: only one block of indices is ever held.
    """
    rng = np.random.default_rng(seed)
    offsets = (np.arange(block) * n)[:, None]
    for start in range(0, n_resamples, block):
        rows = rng.integers(0, n, size=(min(block, n_resamples - start), n), dtype=np.int64)
        rows += offsets[: len(rows)]
        yield start, np.bincount(rows.ravel(), minlength=rows.size).reshape(rows.shape)


_BINCOUNT_CELLS = 1 << 17
_ONE_THREAD = threading.RLock()  # the thread limit is the library's, process-wide: one bootstrap product at a time


@lru_cache(maxsize=1)
def _numpy_blas() -> ThreadpoolController:
    """The BLAS library numpy's products call (found once; other libraries' pools, e.g. faiss's, are left alone)."""
    blas = ThreadpoolController().select(user_api="blas")
    bundled = str(Path(np.__file__).resolve().parent.parent / "numpy.libs")
    numpys = [c.filepath for c in blas.lib_controllers if str(c.filepath).startswith(bundled)]
    return blas.select(filepath=numpys) if numpys else blas


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """numpy's BLAS on one thread inside the block: a product's rounding then does not depend on how many threads the
    machine or OPENBLAS_NUM_THREADS gives it (2 threads sum a product in another order), and a single-threaded product
    of the bootstrap's sizes costs a quarter of the CPU time of two threads spinning."""
    with _ONE_THREAD, _numpy_blas().limit(limits=1):
        yield


def _product(weights: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """weights @ cells in float64 on one BLAS thread (one_blas_thread).

    Not float32: OpenBLAS picks its kernel by CPU, and kernels sum a product in different orders. In float32 that moved
    a bound by ~1e-9 between two machines of the same kind (AMD EPYC here, another CPU where the goldens were written),
    so the same data gave different figures by machine; in float64 the orders differ by ~1e-16 relative."""
    with one_blas_thread():
        return weights @ np.asarray(cells, dtype=np.float64)


def _weighted(n: int, n_resamples: int, seed: int, factors: list[np.ndarray],
              weights: np.ndarray | None = None) -> list[np.ndarray]:
    """_product(weights, f) for each of `factors` (n x k each); weights default to bootstrap_weights(n, R, seed).

    A matrix beyond the cache is never materialised: its resamples are drawn in blocks of a multiple of _PRODUCT_ROWS
    and each block is multiplied while it is in the CPU cache (the Data quality page's 1,000 x 8,000 matrices are 64 MB
    of float64 each; drawn whole, they were written to fresh memory and read back once per factor). The replicates are
    bit-identical to the whole product's: the blocks start at multiples of _PRODUCT_ROWS rows, where OpenBLAS's kernels
    tile the whole product too, so each row is summed by the same kernel in the same order
    (tests/analysis/test_bootstrap_blocks.py)."""
    if weights is None and n * n_resamples <= _CACHED_CELLS:
        weights = bootstrap_weights(n, n_resamples, seed)
    if weights is not None:
        return [_product(weights, f) for f in factors]
    cells = [np.asarray(f, dtype=np.float64) for f in factors]
    out = [np.empty((n_resamples, f.shape[1])) for f in cells]
    block = _PRODUCT_ROWS * max(1, _BINCOUNT_CELLS // (_PRODUCT_ROWS * max(n, 1)))
    with one_blas_thread():
        for start, counts in _weight_blocks(n, n_resamples, seed, block):
            block_weights = counts.astype(np.float64)
            for product, f in zip(out, cells, strict=True):
                product[start : start + len(block_weights)] = block_weights @ f
    return out


_PRODUCT_ROWS = 16  # blocks of resamples start at multiples of this: a whole number of the BLAS kernels' row tiles


def bootstrap_counts(present: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """How many cells with a value each resample of bootstrap_weights(n, R, seed) draws per column of `present`
    (n x m booleans), shape (R, m) float: what bootstrap_means divides by. The counts are integers below 2**53, exact
    in float64 whatever order a product sums them in, so columns of many blocks may be counted in one product."""
    n = present.shape[0]
    counts = np.full((n_resamples, present.shape[1]), float(n))
    gaps = ~present.all(axis=0)
    if gaps.any():
        counts[:, gaps] = _weighted(n, n_resamples, seed, [present[:, gaps]])[0]
    return counts


def bootstrap_means(values: np.ndarray, n_resamples: int, seed: int, weights: np.ndarray | None = None,
                    counts: np.ndarray | None = None) -> np.ndarray:
    """Percentile-bootstrap replicates of column means of `values` (n x m, NaN = missing), shape (R, m).

    Every column is resampled with the same row indices (as stats.bootstrap_ci with paired=True) and the
    mean of each replicate ignores missing cells. Implemented as resampling counts (how often each row was
    drawn) times the data, so all metrics cost one matrix product; pass `weights` (bootstrap_weights) to reuse
    one resample matrix for several blocks of columns with the same number of rows, and `counts` (bootstrap_counts of
    the values' cells with a value, the same n, R and seed) to reuse counts drawn for many blocks at once.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    n = values.shape[0]
    mask = ~np.isnan(values)
    filled = np.where(mask, values, 0.0)
    # a column with no missing cell has n drawn cells in every resample (each resample's counts sum to n, exactly in
    # float64 below 2**53), so only the columns with gaps need their counts multiplied out
    full = mask.all(axis=0) if weights is None and n < 2**53 else np.zeros(mask.shape[1], dtype=bool)
    factors = [filled] if counts is not None or full.all() else [filled, mask[:, ~full]]
    products = _weighted(n, n_resamples, seed, factors, weights)
    if counts is None:
        counts = np.full(products[0].shape, float(n))
        if len(products) > 1:
            counts[:, ~full] = products[1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return products[0] / counts


def _ci(replicates: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bounds per column, NaN-safe (matches np.quantile linear interpolation)."""
    lo, hi = (1 - confidence) / 2, (1 + confidence) / 2
    missing = np.isnan(replicates)
    if not missing.any():
        bounds = np.quantile(replicates, [lo, hi], axis=0)
    else:  # nanquantile is slow; only columns with an empty resample need it
        bounds = np.full((2, replicates.shape[1]), np.nan)
        full = ~missing.any(axis=0)
        bounds[:, full] = np.quantile(replicates[:, full], [lo, hi], axis=0)
        for j in np.flatnonzero(~full):
            col = replicates[:, j][~missing[:, j]]
            if col.size:
                bounds[:, j] = np.quantile(col, [lo, hi])
    return bounds[0], bounds[1]
