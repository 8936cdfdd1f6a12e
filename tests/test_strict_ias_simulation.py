"""Strict IAS under judge errors, by simulation against a known truth (8 constraints, pass rate 0.9)."""

from __future__ import annotations

import numpy as np
import pytest

from core.analysis.readmodel import ias

CONSTRAINTS, PASS_RATE, RESPONSES = 8, 0.9, 20_000
TRUTH = PASS_RATE**CONSTRAINTS  # 0.4305


def _simulate(error_rate: float, seed: int) -> tuple[list[list[tuple[str, bool | None]]], np.ndarray]:
    """Responses as (status, passed) verdict lists with errors at random, and each response's true Strict value."""
    rng = np.random.default_rng(seed)
    passed = rng.random((RESPONSES, CONSTRAINTS)) < PASS_RATE
    errored = rng.random((RESPONSES, CONSTRAINTS)) < error_rate
    responses = [[("error", None) if e else ("ok", bool(p)) for p, e in zip(row_p, row_e, strict=True)]
                 for row_p, row_e in zip(passed, errored, strict=True)]
    return responses, passed.all(axis=1)


def _old_rule(pairs: list[tuple[str, bool | None]]) -> float | None:
    """The rule before the fix: any failure is 0 even next to an error; errors without a failure drop the response."""
    if any(s == "ok" and p is False for s, p in pairs):
        return 0.0
    return None if any(s != "ok" for s, _ in pairs) else 1.0


@pytest.mark.parametrize("error_rate", [pytest.param(r, id=f"errors-{int(r * 100)}pct") for r in (0.0, 0.05, 0.10, 0.30)])
def test_strict_ias_is_unbiased_under_random_judge_errors(error_rate: float) -> None:
    responses, _truth = _simulate(error_rate, seed=int(error_rate * 1000) + 7)
    values = np.array([v for v in (ias(r).strict for r in responses) if v is not None])
    undetermined = RESPONSES - values.size
    assert undetermined == pytest.approx(RESPONSES * (1 - (1 - error_rate) ** CONSTRAINTS), rel=0.05, abs=50)
    mc_error = np.sqrt(TRUTH * (1 - TRUTH) / values.size)
    assert abs(values.mean() - TRUTH) < 4 * mc_error, (values.mean(), TRUTH, mc_error)


@pytest.mark.parametrize(("error_rate", "biased_below"), [(0.05, 0.37), (0.10, 0.31)])
def test_the_old_rule_was_biased_down(error_rate: float, biased_below: float) -> None:
    """Reproduces the defect the fix removes (true 0.43 read 0.34 at 5% errors and 0.26 at 10%)."""
    responses, _truth = _simulate(error_rate, seed=99)
    values = [v for v in (_old_rule(r) for r in responses) if v is not None]
    assert np.mean(values) < biased_below < TRUTH
