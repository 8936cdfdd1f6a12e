"""Compare the picker's paired tests the way that holds on every CPU: the same models, shared instances, resample
counts, outcomes and decisions, and every float within 1e-12 relative (NaN equals NaN). OpenBLAS sums a bootstrap
product in an order that depends on its kernel (by CPU) and the product's shape, so replicates drawn from products of
different shapes may differ in their last bits (~1e-16 relative) on some CPUs; nothing a reader sees may differ."""

from __future__ import annotations

import dataclasses
import math

from core.analysis import picker

REL = 1e-12


def _same_float(got: float, want: float) -> bool:
    if math.isnan(want):
        return math.isnan(got)
    return got == want or abs(got - want) <= REL * max(abs(got), abs(want))


def assert_same(got: object, want: object, where: str = "") -> None:
    """got equals want: PairedTests and Weaknesses field by field with the same outcome, in lists or tuples, floats
    within 1e-12 relative, everything else equal."""
    assert type(got) is type(want), (where, got, want)
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want), (where, got, want)
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_same(g, w, f"{where}[{i}]")
    elif dataclasses.is_dataclass(want):
        if isinstance(want, picker.PairedTest):
            assert (got.outcome, got.significant) == (want.outcome, want.significant), (where, got, want)
        for name in (f.name for f in dataclasses.fields(want)):
            assert_same(getattr(got, name), getattr(want, name), f"{where}.{name}")
    elif isinstance(want, float):
        assert _same_float(got, want), (where, got, want)
    else:
        assert got == want, (where, got, want)
