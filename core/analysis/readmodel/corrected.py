"""Judge-corrected estimates from expert gold labels (PPI and PPI++)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from core.analysis import stats
from core.analysis.ppi import MIN_LABELS, CorrectedEstimate, ipw_ppi_mean, ppi_mean
from core.analysis.readmodel.responses import RULE_JUDGE
from core.analysis.readmodel.runs import run_judges
from core.analysis.readmodel.scope import load_scores
from core.analysis.readmodel.states import STATE_COLUMNS, response_statuses, state_counts

GOLD_METRICS: dict[str, str] = {"strict_ias": "Strict IAS", "loose_ias": "Loose IAS", "rejection": "Rejection accuracy",
                                "conflict_recognition": "Conflict recognition"}

TARGET_CI_WIDTH = 0.10  # +/- 5 points
LABELS_ONLY = "labels only"
NO_JUDGE_NOTE = "the judge decided no response of this metric: labels-only estimate and interval, no judge credit"

CORRECTED_COLUMNS = ["model", "metric", "label", "judge_value", "judge_n", "estimate", "ci_low", "ci_high", "lam",
                     "N", "n", "effective_n", "gold_mean", "gold_ci_low", "gold_ci_high", "method", "small_n",
                     "labels_for_target", "note", *STATE_COLUMNS.values()]


def gold_values(gold: dict[int, dict], draws: dict[int, tuple[float, str]] | None = None) -> pd.DataFrame:
    """Per gold-labelled response, the expert value of each metric gold labels can decide (NaN where it cannot);
    with `draws` (core.store.labels.gold_draws) also its recorded inclusion probability and draw (batch), which
    corrected_difference weighs by (NaN / "" where not recorded)."""
    rows = []
    for rid, payload in gold.items():
        cons = [bool(v) for v in (payload.get("constraints") or {}).values()]
        rows.append({"response_id": int(rid),
                     "strict_ias": float(all(cons)) if cons else np.nan,
                     "loose_ias": float(np.mean(cons)) if cons else np.nan,
                     "rejection": float(payload["valid_refusal"]) if payload.get("valid_refusal") is not None else np.nan,
                     "conflict_recognition": float(payload["conflict_recognized"])
                     if payload.get("conflict_recognized") is not None else np.nan})
    frame = pd.DataFrame(rows, columns=["response_id", *GOLD_METRICS])
    if draws is not None:
        frame["probability"] = frame["response_id"].map(lambda r: draws.get(int(r), (np.nan, ""))[0]).astype(float)
        frame["draw"] = frame["response_id"].map(lambda r: draws.get(int(r), (np.nan, ""))[1]).astype(str)
    return frame


PLANNED_DRAW = "plan-"  # batches of core.review.gold_plan: both responses of an instance drawn together


def pair_probabilities(pi_a: np.ndarray, pi_b: np.ndarray, draw_a: np.ndarray, draw_b: np.ndarray) -> np.ndarray:
    """Probability that both responses of a pair were sampled: the shared probability when one planned draw took the
    pair together, else the product (separate Poisson or stratified draws of the two models' responses)."""
    together = (draw_a == draw_b) & np.char.startswith(draw_a.astype(str), PLANNED_DRAW)
    return np.where(together, np.minimum(pi_a, pi_b), pi_a * pi_b)


def response_uncertainty(engine: Engine, run_id: int) -> dict[int, float]:
    """How unsure the judges are about each response of a run, as an expected squared error of a 0/1 verdict.

    Per response, over the gold-decidable metrics: 0.25 where no judge could decide, the variance of the judges'
    verdicts where several judges decided (0 when they agree), and 0.05 for a single judge's decision; plus a floor
    of 0.01. Used to spend expert labels where they shrink the corrected CIs most (core.review.gold).
    """
    judges = [j for j in run_judges(engine, [run_id]) if j != RULE_JUDGE]
    frames = [load_scores(engine, [run_id], j).set_index("response_id")[list(GOLD_METRICS)] for j in judges]
    if not frames:
        return {}
    stacked = np.stack([f.reindex(frames[0].index).to_numpy(float) for f in frames])  # judges x responses x metrics
    decided = (~np.isnan(stacked)).sum(axis=0)
    with np.errstate(invalid="ignore"):
        spread = np.nanvar(stacked, axis=0) if len(frames) > 1 else np.zeros(stacked.shape[1:])
    per_metric = np.where(decided == 0, 0.25, np.where(decided == 1, 0.05, spread))
    return {int(r): float(u) + 0.01 for r, u in zip(frames[0].index, per_metric.mean(axis=1), strict=True)}


def corrected_estimates(scores: pd.DataFrame, gold: pd.DataFrame, confidence: float = 0.95,
                        probabilities: dict[int, float] | None = None) -> pd.DataFrame:
    """Per model and gold-decidable metric: the judge's raw mean beside the PPI++ corrected mean and CI.

    `scores` are the prepared per-response scores of one judge (one row per model and instance), `gold` the
    gold_values of the labelled responses. N counts the model's responses the metric applies to (every response for
    IAS, gap responses for rejection, conflict responses for conflict recognition), n those with a gold label.
    Labels drawn with unequal recorded probabilities (the uncertainty and active draws) use the inverse-probability-
    weighted PPI++, unbiased under that design. A uniform draw (recorded probabilities equal up to ppi.UNIFORM_SPREAD,
    as the default stratified draw's proportional allocation gives) or labels without recorded probabilities (then
    assumed uniform, and the note says so) use PPI++ and show the standard labels-only interval instead where that is
    narrower (ppi.narrower_of_standard): the default draw is never wider than labels alone (docs/ppi.md). Where the
    judge left a response undetermined its prediction is the judge's own mean on that model (any fixed prediction
    keeps PPI unbiased).
    """
    from core.analysis.ppi import (
        MIN_LABELS,
        ipw_ppi_mean,
        labels_for_width,
        narrower_of_standard,
        ppi_mean,
        uniform_draw,
    )

    judged = scores[["response_id", "model", "mode", *GOLD_METRICS]].assign(
        **{f"{metric}_judge_status": response_statuses(scores, metric) for metric in GOLD_METRICS})
    merged = judged.merge(gold, on="response_id", how="left", suffixes=("", "_gold"))
    rows = []
    for model, g in merged.groupby("model", sort=True):
        for metric, label in GOLD_METRICS.items():
            gold_col = f"{metric}_gold"
            mode = {"rejection": "gap", "conflict_recognition": "conflict"}.get(metric)
            sub = g[g["mode"] == mode] if mode else g
            judge = sub[metric].astype(float)
            decided = bool(judge.notna().any())
            f = judge.fillna(judge.mean() if decided else 0.0).to_numpy(float)
            y = sub[gold_col].to_numpy(float)
            labeled = ~np.isnan(y)
            row = {"model": model, "metric": metric, "label": label, "judge_value": float(judge.mean()),
                   "judge_n": int(judge.notna().sum()), "N": int(len(sub)), "n": int(labeled.sum()),
                   **state_counts(sub[f"{metric}_judge_status"])}
            if labeled.sum() < MIN_LABELS or (~labeled).sum() < 1:
                rows.append(row | {"note": f"needs at least {MIN_LABELS} gold labels (has {int(labeled.sum())}) "
                                           "and 1 unlabelled response"})
                continue
            pi = sub["response_id"].map(probabilities or {}).to_numpy(float)
            recorded = bool(probabilities) and not np.isnan(pi[labeled]).any()
            weighted = recorded and not uniform_draw(pi[labeled])  # a uniform draw needs no weights
            lam = None if decided else 0.0  # a judge that decided nothing earns no credit: labels only
            e = (ipw_ppi_mean(f, np.where(labeled, y, np.nan), np.where(labeled, pi, 1.0), lam=lam,
                              confidence=confidence)
                 if weighted else narrower_of_standard(ppi_mean(y[labeled], f[labeled], f[~labeled], lam=lam,
                                                                confidence=confidence)))
            note = ("" if recorded else "sampling probabilities not recorded: labels assumed a uniform sample")
            notes = (NO_JUDGE_NOTE if not decided else "", "small sample of gold labels" if e.small_n else "", note)
            plain = (e.gold_mean, e.gold_ci_low, e.gold_ci_high)  # the labels' own mean and interval
            estimate, low, high = (e.estimate, e.ci_low, e.ci_high) if decided or weighted else plain
            rows.append(row | {"estimate": estimate, "ci_low": low, "ci_high": high, "lam": e.lam,
                               "effective_n": e.effective_n if decided else np.nan, "gold_mean": e.gold_mean,
                               "gold_ci_low": e.gold_ci_low, "gold_ci_high": e.gold_ci_high,
                               "method": e.method if decided else LABELS_ONLY, "small_n": e.small_n,
                               "labels_for_target": labels_for_width(e, TARGET_CI_WIDTH),
                               "note": "; ".join(x for x in notes if x)})
    return pd.DataFrame(rows, columns=CORRECTED_COLUMNS)


@dataclass(frozen=True)
class DifferencePairs:
    """Model A's and B's values on the instances both answered, drawn once (corrected_difference's input): the
    judge's difference per pair, the gold difference (NaN where not both labelled), the pair probabilities and
    what the estimator is told (weighted, lam); `base` holds the counts and the judge difference, `estimable` whether
    there are enough labelled pairs, and one unlabelled at least, for a corrected estimate (the probabilities are
    drawn only then)."""

    base: dict
    d_f: np.ndarray
    d_y: np.ndarray
    labeled: np.ndarray
    pi: np.ndarray
    weighted: bool
    lam: float | None
    decided: bool
    estimable: bool

    def estimate(self, confidence: float = 0.95) -> CorrectedEstimate:
        """The corrected difference at `confidence`: IPW PPI++ when weighted, PPI++ on the labelled pairs otherwise."""
        labeled = self.labeled
        if self.weighted:
            return ipw_ppi_mean(self.d_f, np.where(labeled, self.d_y, np.nan), np.where(labeled, self.pi, 1.0),
                                lam=self.lam, confidence=confidence, bounds=(-1.0, 1.0))
        return ppi_mean(self.d_y[labeled], self.d_f[labeled], self.d_f[~labeled], lam=self.lam, confidence=confidence,
                        bounds=(-1.0, 1.0))

    def interval(self, confidence: float) -> tuple[float, float]:
        """The corrected difference's interval at `confidence` (NaN when not estimable): what a p-value inverts."""
        if not self.estimable:
            return np.nan, np.nan
        e = self.estimate(confidence)
        return e.ci_low, e.ci_high


def difference_pairs(scores: pd.DataFrame, gold: pd.DataFrame, model_a: str, model_b: str,
                     metric: str = "strict_ias") -> DifferencePairs:
    """The pairs corrected_difference estimates from (see there), drawn once for any number of confidences."""
    recorded = "probability" in gold.columns
    columns = ["response_id", metric, *(("probability", "draw") if recorded else ())]

    def side(model: str) -> pd.DataFrame:
        mine = scores[scores["model"] == model].merge(gold[columns].rename(columns={metric: "gold"}),
                                                      on="response_id", how="left")
        judged = mine[metric].astype(float)
        return mine.assign(f=judged.fillna(judged.mean() if judged.notna().any() else 0.0),
                           decided=judged.notna()).set_index("instance_uid")

    a, b = side(model_a), side(model_b)
    shared = a.index.intersection(b.index)
    decided = bool(a.loc[shared, "decided"].any() and b.loc[shared, "decided"].any())
    d_f = (a.loc[shared, "f"] - b.loc[shared, "f"]).to_numpy(float)
    d_y = (a.loc[shared, "gold"] - b.loc[shared, "gold"]).to_numpy(float)
    labeled = ~np.isnan(d_y)
    base = {"model_a": model_a, "model_b": model_b, "metric": metric, "shared": int(len(shared)),
            "n": int(labeled.sum()), "judge_diff": float(d_f.mean()) if len(shared) and decided else np.nan,
            "method": ""}
    estimable = bool(labeled.sum() >= MIN_LABELS and (~labeled).sum() >= 1)
    pi = (pair_probabilities(*(side_.loc[shared, "probability"].to_numpy(float) for side_ in (a, b)),
                             *(side_.loc[shared, "draw"].fillna("").to_numpy(str) for side_ in (a, b)))
          if recorded and estimable else np.full(len(shared), np.nan))
    weighted = recorded and not np.isnan(pi[labeled]).any()
    lam = None if decided else 0.0  # a judge that decided the metric for neither model earns no credit
    return DifferencePairs(base, d_f, d_y, labeled, pi, weighted, lam, decided, estimable)


def corrected_difference(scores: pd.DataFrame, gold: pd.DataFrame, model_a: str, model_b: str,
                         metric: str = "strict_ias", confidence: float = 0.95) -> dict:
    """Model A minus model B on the instances both answered: raw judge difference and its PPI++ correction.

    Per shared instance the gold difference Y_A - Y_B is known where both responses carry a gold label; the judge's
    difference f_A - f_B (undetermined values predicted by that model's judge mean) is known everywhere. When `gold`
    carries the recorded probabilities (gold_values with draws) for every labelled pair, the estimate is the
    inverse-probability-weighted one (ppi.ipw_ppi_mean, pair probability from pair_probabilities), unbiased under
    uncertainty or planned sampling; otherwise PPI++ assumes the labelled pairs are a uniform sample, and the note
    says so.
    """
    return pairs_difference(difference_pairs(scores, gold, model_a, model_b, metric), confidence)


def pairs_difference(pairs: DifferencePairs, confidence: float = 0.95) -> dict:
    """corrected_difference's row from pairs already drawn (difference_pairs)."""
    out = dict(pairs.base)
    if not pairs.estimable:
        return out | {"estimate": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                      "note": f"needs gold labels on both models' responses for at least {MIN_LABELS} shared instances"}
    e = pairs.estimate(confidence)
    decided, weighted = pairs.decided, pairs.weighted
    notes = ("" if decided else "the judge decided this metric for neither model here: labels only",
             "small sample of gold labels" if e.small_n else "",
             "" if weighted else "sampling probabilities not recorded: labelled pairs assumed a uniform sample")
    return out | {"estimate": e.estimate, "ci_low": e.ci_low, "ci_high": e.ci_high,
                  "effective_n": e.effective_n if decided else np.nan, "method": e.method if decided else LABELS_ONLY,
                  "weighted": weighted, "note": "; ".join(x for x in notes if x)}


def ranking_changes(corrected: pd.DataFrame) -> list[str]:
    """Metrics on which the corrected means order the models differently from the raw judge means."""
    changed = []
    for metric, g in corrected.dropna(subset=["estimate", "judge_value"]).groupby("metric"):
        if len(g) >= 2 and list(g.sort_values("judge_value", ascending=False)["model"]) != list(
                g.sort_values("estimate", ascending=False)["model"]):
            changed.append(GOLD_METRICS.get(metric, metric))
    return changed


def corrected_trust(corrected: pd.DataFrame) -> str:
    """What to make of a ranking the correction changed: trust the corrected column only where every corrected cell
    rests on at least SMALL_N gold labels; otherwise compare the intervals first."""
    shown = corrected.dropna(subset=["estimate"])
    if not shown.empty and (shown["n"] >= stats.SMALL_N).all():
        return "Trust the corrected column: it removes the judge's bias."
    return (f"Some corrected cells rest on fewer than {stats.SMALL_N} gold labels: compare their intervals before "
            "re-ranking, and label more to settle it.")


def load_corrected(engine: Engine, run_ids: Sequence[int], judge: str, scores: pd.DataFrame | None = None,
                   gold: dict[int, dict] | None = None) -> pd.DataFrame:
    """corrected_estimates of the runs under `judge` from the stored scores and the gold labels (reads only); pass
    `scores` (load_scores of the same runs and judge) or `gold` (gold_labels of the runs) when already loaded."""
    from core.store.labels import gold_labels, gold_probabilities

    gold = gold_labels(engine, list(run_ids)) if gold is None else gold
    probabilities = gold_probabilities(engine, list(run_ids)) if gold else {}  # only labelled responses use them
    return corrected_estimates(load_scores(engine, run_ids, judge) if scores is None else scores, gold_values(gold),
                               probabilities=probabilities)
