"""The pick's weakness tests with their intervals from one quantile call (the bootstrap totals of every pair on the
same shared instances from one product) equal the per-pair, per-metric computation they replace on every shape of
data: the same n, outcomes and decisions, floats within 1e-12 relative (tests/paired_tests.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.analysis import picker, readmodel
from tests.paired_tests import assert_same

METRICS = ["strict_ias", "rejection", "faithfulness"]


def _rows(seed: int, n: int, missing: float = 0.0, drop: int = 0, constant: bool = False) -> pd.DataFrame:
    """One model's rows by instance: n instances (the last `drop` left out), a share `missing` of NaN cells."""
    rng = np.random.default_rng(seed)
    values = np.full((n, len(METRICS)), 0.5) if constant else rng.random((n, len(METRICS)))
    values[:, 1] = np.round(values[:, 1])  # a share
    values[rng.random(values.shape) < missing] = np.nan
    index = pd.Index([f"i{j:04d}" for j in range(n)], name="instance_uid")
    return pd.DataFrame(values, columns=METRICS, index=index).iloc[: n - drop]


CASES = {
    "all share every instance": ({"b": _rows(2, 300), "c": _rows(3, 300), "d": _rows(4, 300)}, _rows(1, 300)),
    "missing cells": ({"b": _rows(2, 200, 0.2), "c": _rows(3, 200, 0.5)}, _rows(1, 200, 0.1)),
    "different shared sets": ({"b": _rows(2, 120, drop=20), "c": _rows(3, 120), "d": _rows(4, 120, drop=20)},
                              _rows(1, 120)),
    "a metric missing in a column": ({"b": _rows(2, 50, 0.97), "c": _rows(3, 50)}, _rows(1, 50)),
    "no spread": ({"b": _rows(2, 40, constant=True), "c": _rows(3, 40)}, _rows(1, 40, constant=True)),
    "one shared instance": ({"b": _rows(2, 1), "c": _rows(3, 1)}, _rows(1, 1)),
    "nothing shared": ({"b": _rows(2, 30).iloc[15:]}, _rows(1, 30).iloc[:15]),
}


def _reference(pa: pd.DataFrame, pb: pd.DataFrame, b: str, n_resamples: int, seed: int) -> list[picker.PairedTest]:
    """The per-pair computation as it was before (one quantile call per metric): the golden reference."""
    ua, ub = (picker.utilities(METRICS, v) for v in picker._shared_values(pa, pb, METRICS))
    n, k = ua.shape
    if n < 2:
        return [picker.PairedTest("a", b, n, np.nan, np.nan, np.nan, n_resamples) for _ in METRICS]
    both = np.column_stack([ua, ub])
    counts = (~np.isnan(both)).sum(axis=0)
    means = np.where(counts > 0, np.nansum(both, axis=0) / np.maximum(counts, 1), np.nan)
    reps = readmodel.bootstrap_means(both, n_resamples, seed)
    return [picker._from_replicates("a", b, n, float(means[i] - means[k + i]), reps[:, i] - reps[:, k + i],
                                    n_resamples) for i in range(k)]


@pytest.mark.parametrize("others, pick", list(CASES.values()), ids=list(CASES))
def test_stacked_tests_equal_the_per_pair_tests(others, pick):
    """Every PairedTest (difference, interval, n, outcome) of the pick's tests, together and pair by pair, is the
    reference's."""
    together = picker._pick_tests(pick, others, "a", METRICS, 500, 7)
    for other, rows in others.items():
        golden = _reference(pick, rows, other, 500, 7)
        assert_same(together[other], golden, other)
        assert_same(picker._metric_tests(pick, rows, "a", other, METRICS, 500, 7), golden, other)


def test_weaknesses_are_found_in_every_shared_set():
    """A model better on one metric is a weakness of the pick whether or not it answered every instance."""
    pick = _rows(1, 400)
    better = _rows(2, 400, drop=50)
    better["faithfulness"] = np.minimum(pick["faithfulness"].reindex(better.index) + 0.3, 1.0)
    tests = picker._pick_tests(pick, {"better": better, "same": _rows(3, 400)}, "a", METRICS, 500, 7)
    assert tests["better"][2].outcome == "b_better" and tests["better"][2].shared == 350


@pytest.mark.parametrize("order", [["b", "c", "d"], ["d", "b", "c"], ["c", "d", "b"]], ids=["abc", "rotated", "reversed"])
def test_weaknesses_do_not_depend_on_the_order_of_the_others(order):
    """The page caches the weaknesses under the sorted others: a floor that reorders the ranking keeps them."""
    rng = np.random.default_rng(5)
    rows = [{"model": m, "instance_uid": f"i{i:03d}", "strict_ias": float(rng.random() < p), "rejection": None,
             "faithfulness": float(rng.random())} for m, p in {"a": 0.3, "b": 0.6, "c": 0.5, "d": 0.2}.items()
            for i in range(150)]
    scoped = pd.DataFrame(rows)
    found = picker.weaknesses(scoped, "a", order, 300, 1, ["strict_ias", "faithfulness"])
    assert [(w.metric, w.test.b) for w in found] == [("strict_ias", "b"), ("strict_ias", "c")]
    assert_same(found, picker.weaknesses(scoped, "a", ["b", "c", "d"], 300, 1, ["strict_ias", "faithfulness"]))
