"""response_scores' text columns taken by position (readmodel.responses._labels) are the columns pandas infers from
the same strings as Python objects: equal values and the same dtype, with and without missing names."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.analysis.readmodel.responses import _labels


@pytest.mark.parametrize(("names", "at"), [
    pytest.param(("scored", "not_applicable", "skipped"), [2, 0, 0, 1, 2], id="every name present"),
    pytest.param(("gap", None, "noisy"), [1, 0, 2, 1], id="a missing name"),
    pytest.param((None,), [0, 0], id="every name missing"),
    pytest.param(("ü-instance", "a", "Z"), [0, 1, 2, 0], id="non-ascii names"),
    pytest.param(("only",), [], id="no rows"),
])
def test_labels_equal_the_inferred_column(names: tuple, at: list[int]) -> None:
    positions = np.array(at, dtype=np.intp)
    inferred = pd.Series(np.array(names, dtype=object)[positions])
    pd.testing.assert_series_equal(_labels(names, positions), inferred, check_exact=True)
