"""readmodel.model_order (Table 2 order: open before closed, reasoning before standard, by name, baselines last) is
the same as the pandas merge-and-sort it replaced, on catalogues with gaps, duplicates and unknown models."""

from __future__ import annotations

import pandas as pd
import pytest

from core.analysis.readmodel import model_order
from core.analysis.readmodel.scope import with_model_info


def merged_order(models_in_view, models: pd.DataFrame) -> list[str]:
    """The former implementation: join the catalogue, map the keys, sort the frame."""
    frame = with_model_info(pd.DataFrame({"model": sorted(set(models_in_view))}), models)
    frame["k_access"] = frame["access"].map({"open": 0, "closed": 1}).fillna(2)
    frame["k_paradigm"] = frame["paradigm"].map({"reasoning": 0, "standard": 1}).fillna(2)
    return frame.sort_values(["is_baseline", "k_access", "k_paradigm", "model"])["model"].tolist()


def catalog(*rows: tuple) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["model", "paradigm", "access", "is_baseline"])


FULL = catalog(("z-open-reason", "reasoning", "open", False), ("a-closed-std", "standard", "closed", False),
               ("m-open-std", "standard", "open", False), ("b-closed-reason", "reasoning", "closed", False),
               ("baseline:always-refuse", "standard", "closed", True), ("baseline:extractive", None, None, True))


@pytest.mark.parametrize(
    ("view", "models", "expected"),
    [
        pytest.param(list(FULL["model"]), FULL, ["z-open-reason", "m-open-std", "b-closed-reason", "a-closed-std",
                                                 "baseline:always-refuse", "baseline:extractive"], id="table-2-order"),
        pytest.param(["zz-unknown", "m-open-std", "aa-unknown"], FULL, ["m-open-std", "aa-unknown", "zz-unknown"],
                     id="unknown-models-closed-standard"),
        pytest.param(["x", "y"], catalog(("x", None, None, None), ("y", "agentic", "gated", False)), ["x", "y"],
                     id="missing-and-unmapped-values"),
        pytest.param(["b", "a", "b"], catalog(("a", "standard", "open", False), ("a", "reasoning", "closed", True),
                                              ("b", "reasoning", "open", False)), ["b", "a"],
                     id="duplicates-first-row-wins"),
        pytest.param([], FULL, [], id="empty-view"),
    ],
)
def test_model_order(view, models, expected):
    assert model_order(view, models) == expected == merged_order(view, models)
