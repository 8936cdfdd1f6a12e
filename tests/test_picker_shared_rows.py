"""The pick's pairs matched on integer instance codes (picker._shared_utilities) take the same rows, in the same
order and grouped the same way, as matching the instance labels pair by pair (picker._shared_values)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.analysis import picker

METRICS = ["strict_ias", "faithfulness"]


def _rows(seed: int, uids: list[str]) -> pd.DataFrame:
    """One model's rows by instance, in a shuffled order, with some missing cells."""
    rng = np.random.default_rng(seed)
    values = rng.random((len(uids), len(METRICS)))
    values[:, 0] = np.round(values[:, 0])
    values[rng.random(values.shape) < 0.2] = np.nan
    order = rng.permutation(len(uids))
    return pd.DataFrame(values[order], columns=METRICS,
                        index=pd.Index([uids[i] for i in order], name="instance_uid", dtype=object))


UIDS = [f"i{j:03d}" for j in range(60)]
CASES = {
    "every model answers every instance": (UIDS, {"b": UIDS, "c": UIDS}),
    "models miss different instances": (UIDS, {"b": UIDS[5:], "c": UIDS[:50], "d": UIDS[5:]}),
    "the pick misses some": (UIDS[10:], {"b": UIDS, "c": UIDS[::2]}),
    "nothing shared": (UIDS[:20], {"b": UIDS[20:]}),
    "ids that sort by code point": (["b", "a", "Z", "é", "a10", "a9", "ß"], {"b": ["a9", "é", "Z", "a"], "c": ["ß", "b"]}),
    "an instance repeated (matched by label)": (UIDS[:10] + UIDS[:1], {"b": UIDS[:10]}),
}


def _reference(pa: pd.DataFrame, others: dict[str, pd.DataFrame]) -> dict[frozenset, list]:
    """Label matching pair by pair, grouped by the set of shared instances."""
    out: dict[frozenset, list] = {}
    for other, pb in others.items():
        ua, ub = (picker.utilities(METRICS, v) for v in picker._shared_values(pa, pb, METRICS))
        key = frozenset(pa.index.intersection(pb.index)) if pa.index.is_unique else frozenset([other])
        out.setdefault(key, []).append((other, ua, ub))
    return out


@pytest.mark.parametrize("pick, others", list(CASES.values()), ids=list(CASES))
def test_shared_rows_match_label_matching(pick: list[str], others: dict[str, list[str]]) -> None:
    pa = _rows(1, pick)
    frames = {name: _rows(i + 2, uids) for i, (name, uids) in enumerate(others.items())}
    got = list(picker._shared_utilities(pa, frames, METRICS).values())
    want = list(_reference(pa, frames).values())
    assert [[b for b, _, _ in g] for g in got] == [[b for b, _, _ in g] for g in want]
    for group, expected in zip(got, want, strict=True):
        for (_, ua, ub), (_, ea, eb) in zip(group, expected, strict=True):
            np.testing.assert_array_equal(ua, ea)
            np.testing.assert_array_equal(ub, eb)
