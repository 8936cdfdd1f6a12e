"""The pick's bootstrap against every other model is drawn once (picker.rank), all pairs' totals from one product:
the top-two and baseline-floor tests taken from those draws equal paired_test's (compare, one product per pair), the
weaknesses from the arrays split once equal those from the frames, and a caching memo gives the ranks no memo gives.
Equal: the same models, instances, outcomes and decisions, floats within 1e-12 relative (tests/paired_tests.py: a
product's shape may change its last bits on some CPUs)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.analysis import picker
from tests.paired_tests import assert_same

METRICS = ["faithfulness", "coverage", "rejection", "conflict_recognition", "strict_ias"]
WEIGHTS = {"faithfulness": 1.0, "coverage": 1.0, "rejection": 1.0, "conflict_recognition": 1.0, "strict_ias": 2.0}


UNICODE = ["é", "z", "Z", "ä", "漢", "😀", "a b", "Ω", "ſ", "\u00a0"]  # ids Python and Arrow must sort alike


def _uid(i: int) -> str:
    return f"i{i:04d}"


def _unicode_uid(i: int) -> str:
    return f"{UNICODE[i % len(UNICODE)]}{i:04d}"


def _scoped(seed: int = 3, n: int = 160, uid=_uid) -> pd.DataFrame:
    """Five models on n instances: continuous and 0/1 metrics, missing cells, models that skipped instances."""
    rng = np.random.default_rng(seed)
    rows = []
    for m, (level, skip) in {"a": (0.7, 0), "b": (0.6, 10), "c": (0.5, 0), "d": (0.4, 30), "e": (0.65, 10)}.items():
        for i in range(n - skip):
            row = {"model": m, "instance_uid": uid(i), "domain": "x", "mode": "noisy", "cost_usd": 0.001,
                   "response_id": len(rows) + 1, "run_id": 1}
            row["faithfulness"] = float(np.clip(rng.normal(level, 0.2), 0, 1))
            row["coverage"] = float(rng.random()) if rng.random() > 0.3 else np.nan
            row["rejection"] = float(rng.random() < level) if i % 4 == 0 else np.nan
            row["conflict_recognition"] = float(rng.random() < level) if i % 3 == 0 else np.nan
            row["strict_ias"] = float(rng.random() < level)
            rows.append(row)
    return pd.DataFrame(rows).sample(frac=1.0, random_state=seed).reset_index(drop=True)  # rows in any order


@pytest.mark.parametrize("pick, uid", [
    pytest.param("a", _uid, id="a"), pytest.param("c", _uid, id="c"), pytest.param("d", _uid, id="d"),
    pytest.param("b", _unicode_uid, id="b, non-ASCII instance ids"),
])
def test_tests_from_the_shared_draws_equal_paired_test(pick, uid):
    scoped = _scoped(uid=uid)
    others = sorted(m for m in scoped["model"].unique() if m != pick)
    draws = picker._scoped_draws(scoped, pick, others, METRICS, 400, 5)
    for b in others:
        assert_same(picker._draw_test(pick, b, draws[b], WEIGHTS, METRICS, 400),
                    picker.compare(scoped, pick, b, WEIGHTS, 400, 5), b)


@pytest.mark.parametrize("pick", ["a", "e"])
def test_weaknesses_from_arrays_equal_those_from_frames(pick):
    scoped = _scoped(seed=8)
    others = sorted(m for m in scoped["model"].unique() if m != pick)
    split = picker._rows_by_model(scoped, METRICS)
    tests = picker._pick_tests(split[pick], {o: split[o] for o in others}, pick, METRICS, 400, 2)
    found = sorted((picker.Weakness(m, t) for o in others for m, t in zip(METRICS, tests[o], strict=True)
                    if t.outcome == "b_better"), key=lambda w: (METRICS.index(w.metric), w.test.b))
    assert_same(picker.weaknesses(scoped, pick, others, 400, 2, METRICS), found)


def test_a_caching_memo_ranks_as_no_memo():
    """Floors that change the leader and keep it: each part cached or drawn anew gives the same result."""
    scoped = _scoped(seed=11)
    models = pd.DataFrame({"model": list("abcde"), "paradigm": "standard", "access": "open",
                           "is_baseline": [False, False, False, True, False]})
    store: dict = {}

    def memo(kind, key, compute):
        return store[(kind, key)] if (kind, key) in store else store.setdefault((kind, key), compute())

    for floors in ({}, {"strict_ias": 0.62}, {}, {"strict_ias": 0.55}, {"rejection": 0.3}):
        spec = picker.PickSpec(weights=WEIGHTS, floors=floors)
        cached, fresh = picker.rank(scoped, models, spec, 300, memo=memo), picker.rank(scoped, models, spec, 300)
        assert_same((cached.top_two, cached.floor, cached.weaknesses, cached.recommended, cached.leader),
                    (fresh.top_two, fresh.floor, fresh.weaknesses, fresh.recommended, fresh.leader), str(floors))
        assert cached.ranking.equals(fresh.ranking)


SAME = picker.PairedTest("a", "b", 100, 0.05, 0.01, 0.09, 400)


@pytest.mark.parametrize("other, equal", [
    pytest.param(SAME, True, id="identical"),
    pytest.param(picker.PairedTest("a", "b", 100, 0.05 * (1 + 1e-15), 0.01, 0.09, 400), True, id="last bits"),
    pytest.param(picker.PairedTest("a", "b", 100, 0.05, 0.01 * (1 + 1e-9), 0.09, 400), False, id="a bound moved"),
    pytest.param(picker.PairedTest("a", "b", 100, 0.05, -0.01, 0.09, 400), False, id="outcome flipped"),
    pytest.param(picker.PairedTest("a", "c", 100, 0.05, 0.01, 0.09, 400), False, id="another model"),
    pytest.param(picker.PairedTest("a", "b", 99, 0.05, 0.01, 0.09, 400), False, id="other instances"),
    pytest.param(picker.PairedTest("a", "b", 100, np.nan, 0.01, 0.09, 400), False, id="NaN for a number"),
])
def test_the_comparison_tells_last_bits_from_a_different_test(other, equal):
    """assert_same accepts what BLAS rounding moves (~1e-16 relative) and nothing a reader could see."""
    if equal:
        assert_same([other], [SAME])
    else:
        with pytest.raises(AssertionError):
            assert_same([other], [SAME])
