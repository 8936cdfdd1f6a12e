"""The cells of RAGStress's paper tables: an accuracy without scored responses says why, a difference's interval never
leaves -100..100 pp, a difference without a t interval shows its value alone."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from core.protocols.kb_corruption.paper import accuracy_cell, signed_cell

NAN = math.nan

SIGNED = [
    pytest.param({"delta": 0.9, "ci_low": 0.5, "ci_high": 1.3, "n": 3}, (0.9, 0.5, 1.0, ""), id="high-end-clipped"),
    pytest.param({"delta": -0.8, "ci_low": -1.4, "ci_high": -0.2, "n": 4}, (-0.8, -1.0, -0.2, ""), id="low-end-clipped"),
    pytest.param({"delta": 1.0, "ci_low": NAN, "ci_high": NAN, "n": 1}, (1.0, None, None, ""), id="one-question"),
    pytest.param({"delta": NAN, "ci_low": NAN, "ci_high": NAN, "n": 0},
                 (None, None, None, "no question answered under both"), id="nothing-shared"),
]


@pytest.mark.parametrize(("row", "want"), SIGNED)
def test_signed_cell(row, want):
    cell = signed_cell(pd.Series(row), "delta")
    assert (cell.value, cell.low, cell.high, cell.state) == want and cell.n == row["n"]


ACCURACY = [
    pytest.param(None, (None, "not run", 0), id="condition-not-run"),
    pytest.param({"accuracy": NAN, "ci_low": NAN, "ci_high": NAN, "n": 0, "n_not_applicable": 4},
                 (None, "not applicable", 0), id="numeric-typo-without-a-number"),
    pytest.param({"accuracy": NAN, "ci_low": NAN, "ci_high": NAN, "n": 0, "n_not_applicable": 0},
                 (None, "no scored responses", 0), id="all-judge-errors"),
    pytest.param({"accuracy": 0.5, "ci_low": 0.2, "ci_high": 0.8, "n": 10, "n_not_applicable": 0}, (0.5, "", 10),
                 id="scored"),
]


@pytest.mark.parametrize(("row", "want"), ACCURACY)
def test_accuracy_cell(row, want):
    cell = accuracy_cell(None if row is None else pd.Series(row))
    assert (cell.value, cell.state, cell.n) == want
