"""readmodel.metric_state_texts (every caption's text from one grouped sum) equals frame_state_text of each key's
rows, filtered one by one as the pages did, for metrics and (model, metric) pairs, missing keys and missing counts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.analysis.readmodel import STATE_COLUMNS, frame_state_text, metric_state_texts

METRICS = ["faithfulness", "loose_ias", "cost_per_1k"]


def _frame(missing: bool) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    rows = [{"model": m, "metric": k, **{c: int(rng.integers(0, 40)) for c in STATE_COLUMNS.values()}}
            for m in ("alpha", "beta") for k in METRICS[:2]]
    frame = pd.DataFrame(rows)
    if missing:
        frame.loc[1, "n_error"] = np.nan
    return frame


CASES = [
    pytest.param(False, None, id="by-metric"),
    pytest.param(True, None, id="by-metric-with-a-missing-count"),
    pytest.param(False, "model", id="by-model-and-metric"),
    pytest.param(True, "model", id="by-model-and-metric-with-a-missing-count"),
]


@pytest.mark.parametrize(("missing", "by"), CASES)
def test_texts_equal_one_filter_per_caption(missing: bool, by: str | None) -> None:
    frame = _frame(missing)
    keys = METRICS if by is None else [(m, k) for m in ("alpha", "beta", "gamma") for k in METRICS]
    texts = metric_state_texts(frame, keys, by=by)
    for key in keys:
        mask = frame["metric"] == key if by is None else (frame["model"] == key[0]) & (frame["metric"] == key[1])
        assert texts[key] == frame_state_text(frame[mask], key if by is None else key[1]), key
    assert texts[keys[0]].startswith("n = ")
