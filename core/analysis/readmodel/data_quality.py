"""Natural versus augmented instances with equivalence tests (the Data quality page, Figure 8)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from core.analysis import stats
from core.analysis.readmodel.bootstrap import _ci, bootstrap_means
from core.analysis.readmodel.scope import METRICS

EQUIVALENCE_METRICS: tuple[str, ...] = ("conflict_recognition", "strict_ias", "loose_ias", "coverage", "faithfulness")


def natural_vs_augmented(scores: pd.DataFrame, margin: float = 0.2, metrics: Sequence[str] = EQUIVALENCE_METRICS,
                         n_resamples: int = 1_000, seed: int = 0) -> pd.DataFrame:
    """Figure 8 / Table 8: natural minus augmented means per metric with equivalence testing at +/- margin.

    Per model the difference natural - augmented is computed; TOST (stats.tost) runs over those per-model
    differences (needs >= 2 models with both origins and some spread). A pooled unpaired percentile-bootstrap
    CI of the difference is reported too (each origin resampled independently, as stats.bootstrap_ci with
    paired=False), and 'equivalent_by_ci' says whether that CI lies inside the margin. Beside TOST, the paired
    t-test over the same per-model means with Cohen's d_z (t, t_p, cohen_d: the paper's Table 8); n_resamples=10_000
    is the paper's bootstrap.
    """
    metrics = list(metrics)
    nat_all = scores[scores["origin"] == "natural"]
    aug_all = scores[scores["origin"] == "augmented"]
    boot_low = boot_high = np.full(len(metrics), np.nan)
    if len(nat_all) and len(aug_all):
        reps = bootstrap_means(nat_all[metrics].to_numpy(float), n_resamples, seed) - bootstrap_means(aug_all[metrics].to_numpy(float), n_resamples, seed + 1)
        boot_low, boot_high = _ci(reps)
    rows = []
    for i, key in enumerate(metrics):
        nat, aug = nat_all[nat_all[key].notna()], aug_all[aug_all[key].notna()]
        row: dict[str, Any] = {"metric": key, "label": METRICS[key].label if key in METRICS else key, "natural": nat[key].mean() if len(nat) else np.nan,
               "augmented": aug[key].mean() if len(aug) else np.nan, "n_natural": len(nat), "n_augmented": len(aug)}
        row["diff"] = row["natural"] - row["augmented"]
        has_both = bool(len(nat) and len(aug))
        row |= {"boot_low": boot_low[i] if has_both else np.nan, "boot_high": boot_high[i] if has_both else np.nan,
                "equivalent_by_ci": bool(has_both and stats.equivalent_by_ci(boot_low[i], boot_high[i], margin))}
        per_model = pd.concat([nat.groupby("model")[key].mean().rename("nat"), aug.groupby("model")[key].mean().rename("aug")], axis=1, join="inner")
        row |= _per_model_tests(per_model["nat"].to_numpy(float), per_model["aug"].to_numpy(float), margin)
        rows.append(row)
    out = pd.DataFrame(rows)
    out["margin"] = margin
    return out


def _per_model_tests(nat: np.ndarray, aug: np.ndarray, margin: float) -> dict[str, Any]:
    """Over the models' natural and augmented means: TOST of their differences at ±margin and, as the paper's
    Table 8, the paired t-test (two-sided) with Cohen's d_z; NaN with fewer than 2 models or no spread."""
    diffs = nat - aug
    if diffs.size < 2 or np.std(diffs) == 0:
        return {"models": int(diffs.size), "tost_mean": np.nan, "tost_low": np.nan, "tost_high": np.nan,
                "tost_p": np.nan, "tost_equivalent": False, "t": np.nan, "t_p": np.nan, "cohen_d": np.nan}
    t, paired = stats.tost(diffs, margin), stats.paired_t(nat, aug)
    return {"models": int(diffs.size), "tost_mean": t.mean_diff, "tost_low": t.ci_low, "tost_high": t.ci_high,
            "tost_p": t.p_value, "tost_equivalent": t.equivalent, "t": paired.t, "t_p": paired.p_value,
            "cohen_d": paired.cohen_dz}


def evaluated_composition(scores: pd.DataFrame) -> pd.DataFrame:
    """Distinct evaluated instances by domain, mode and origin."""
    inst = scores.drop_duplicates("instance_uid")
    return inst.groupby(["domain", "mode", "origin"]).size().rename("instances").reset_index()
