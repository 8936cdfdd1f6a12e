"""The bootstrap's products beyond the weight cache (readmodel.bootstrap._weighted: the Data quality page's pooled
interval, 1,000 resamples of ~8,000 items per origin) draw the resamples and multiply them block by block, never the
whole float64 matrix: the replicates equal the whole matrix's product to 1e-12 (the same RNG stream; bit-identical where
the blocks follow the BLAS kernel's tiles) and the peak memory is a fraction of the whole matrix's."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from core.analysis.readmodel import bootstrap

# each case: (rows, columns, share of missing cells, column-major, resamples); all beyond the cache (rows x resamples
# > bootstrap._CACHED_CELLS), so drawn block by block
CASES = [
    pytest.param(8007, 5, 0.1, True, 1000, id="data-quality-natural"),
    pytest.param(8704, 5, 0.0, True, 1000, id="data-quality-augmented-full-columns"),
    pytest.param(5185, 5, 0.2, False, 1000, id="row-major"),
    pytest.param(9001, 1, 0.05, False, 1000, id="one-column"),
    pytest.param(4099, 3, 0.3, True, 1037, id="resamples-not-a-multiple-of-the-block"),
    pytest.param(300, 4, 0.1, False, 20_000, id="few-rows-many-resamples"),
]


def _values(n: int, m: int, missing: float, column_major: bool) -> np.ndarray:
    rng = np.random.default_rng(n * 31 + m)
    values = rng.random((n, m))
    values[rng.random(values.shape) < missing] = np.nan
    return np.asfortranarray(values) if column_major else values


def _whole_matrix_means(values: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """bootstrap_means as it was: the whole resample matrix drawn, then multiplied by the sums and the counts."""
    n = values.shape[0]
    mask = ~np.isnan(values)
    weights = bootstrap._draw_weights(n, n_resamples, seed)
    totals = bootstrap._product(weights, np.where(mask, values, 0.0))
    counts = np.full(totals.shape, float(n))
    full = mask.all(axis=0)
    if not full.all():
        counts[:, ~full] = bootstrap._product(weights, mask[:, ~full])
    with np.errstate(invalid="ignore", divide="ignore"):
        return totals / counts


@pytest.mark.parametrize(("n", "m", "missing", "column_major", "n_resamples"), CASES)
def test_block_by_block_means_equal_the_whole_matrix(n: int, m: int, missing: float, column_major: bool,
                                                    n_resamples: int) -> None:
    """Equal to 1e-12 (relative): bit-identical on OpenBLAS's Haswell kernel, whose 16-row tiles the blocks follow;
    another CPU's kernel may tile otherwise and round a sum's last bit differently (the float32 lesson of stop 51)."""
    values = _values(n, m, missing, column_major)
    assert n * n_resamples > bootstrap._CACHED_CELLS
    blocked = bootstrap.bootstrap_means(values, n_resamples, 3)
    whole = _whole_matrix_means(values, n_resamples, 3)
    assert np.array_equal(np.isnan(blocked), np.isnan(whole))
    np.testing.assert_allclose(blocked, whole, rtol=1e-12, atol=0)


@pytest.mark.parametrize(("n", "m", "missing", "column_major", "n_resamples"), CASES)
def test_block_by_block_counts_are_the_whole_matrix_counts(n: int, m: int, missing: float, column_major: bool,
                                                           n_resamples: int) -> None:
    present = ~np.isnan(_values(n, m, missing, column_major))
    weights = bootstrap._draw_weights(n, n_resamples, 5)
    whole = np.full((n_resamples, m), float(n))
    gaps = ~present.all(axis=0)
    whole[:, gaps] = bootstrap._product(weights, present[:, gaps])
    np.testing.assert_array_equal(bootstrap.bootstrap_counts(present, n_resamples, 5), whole)


def test_the_whole_matrix_is_never_held() -> None:
    """The Data quality page's natural origin: a 1,000 x 8,007 float64 matrix is 64 MB; the blocked product holds one
    block of 16 resamples (1 MB of indices, counts and weights each) besides its inputs and replicates."""
    values = _values(8007, 5, 0.1, True)
    whole_matrix = 1000 * 8007 * 8
    tracemalloc.start()
    try:
        bootstrap.bootstrap_means(values, 1000, 0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < whole_matrix / 8
