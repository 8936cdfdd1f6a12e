"""key_summary's intervals, one metric_intervals call per number of rows over the models' columns, equal one
stats.interval call per model exactly (rates and bounded scores; gaps, different lengths and models without rows)."""

from __future__ import annotations

import numpy as np
import pytest

from core.analysis import stats
from core.analysis.readmodel import decision_scores as keys


def _values(seed: int, n: int, binary: bool, missing: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = np.round(rng.random(n)) if binary else rng.random(n)
    values[rng.random(n) < missing] = np.nan
    return values


CASES = {
    "equal lengths, scores": ([983, 983, 983], False, 0.0),
    "equal lengths, rates with gaps": ([500, 500, 500, 500], True, 0.6),
    "different lengths": ([300, 120, 300, 7], False, 0.2),
    "a model without rows": ([200, 0, 200], True, 0.0),
    "one row each": ([1, 1], False, 0.0),
    "every value missing": ([50, 50], False, 1.0),
}


@pytest.mark.parametrize("key", ["faithfulness", "rejection"], ids=["bounded score", "rate"])
@pytest.mark.parametrize(("lengths", "binary", "missing"), list(CASES.values()), ids=list(CASES))
def test_model_intervals_equal_one_interval_per_model(key, lengths, binary, missing):
    entry = keys.decision_key(key)
    values = np.concatenate([_values(i, n, binary, missing) for i, n in enumerate(lengths)])
    starts = np.cumsum([0, *lengths])
    at_of = [np.arange(starts[i], starts[i + 1]) for i in range(len(lengths))]
    together = keys._model_intervals(values, at_of, entry)
    alone = [stats.interval(values[at] if len(at) else np.full(1, np.nan), entry.declaration) for at in at_of]
    assert repr(together) == repr(alone)  # repr: floats round-trip, NaN equals NaN


def test_no_values_give_empty_intervals():
    entry = next(iter(keys.decision_catalogue().values()))
    found = keys._model_intervals(None, [np.arange(3), np.empty(0, dtype=np.intp)], entry)
    assert [i.n for i in found] == [0, 0] and all(np.isnan(i.mean) for i in found)
