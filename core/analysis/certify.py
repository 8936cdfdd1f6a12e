"""A judge certified against what the suite's own humans reach (docs/judges.md, "Fitness relative to the humans").

Per aspect of a human-labelled suite:
- the judge's scores are put on the annotators' scale by matching the annotators' label distribution (rank-based:
  the judge gets each label, ties included, as often as the annotators used it), and so are the baselines';
- judge-human kappa is Cohen's kappa over every (judge label, annotator label) pair of the scored items;
  human-human kappa over every ordered pair of two annotators of the same item; weights as the suite's scale
  (unweighted for ragchecker-meta's model1 / tie / model2, linear for mtRAG's 1-4 ratings);
- intervals are percentile bootstraps over items (an item keeps all its labels), 95% two-sided for the figures and
  the one-sided 95% lower bound for the two tests:
  - non-inferior to a second human: lower bound of (judge-human kappa - human-human kappa) >= -MARGIN;
  - better than a baseline: lower bound of (judge-human kappa - baseline-human kappa) > 0;
- verdict: "fit to decide" = non-inferior and better than every baseline; "fit to explore" = better than every
  baseline only; "not fit" otherwise; "undetermined" below MIN_ITEMS scored items.
Baselines: word overlap of the answer with the passages (share of its words found there), the answer's length in
words, and always the majority label.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

MARGIN = 0.15
MIN_ITEMS = 30
RESAMPLES = 1000
DECIDE, EXPLORE, NOT_FIT, UNDETERMINED = "fit to decide", "fit to explore", "not fit", "undetermined"
ORDER = (NOT_FIT, UNDETERMINED, EXPLORE, DECIDE)  # weakest first
BASELINES = ("word overlap", "answer length", "majority label")
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Row:
    """One rater's kappa against the annotators with its 95% bootstrap interval."""

    rater: str
    kappa: float
    ci: tuple[float, float]
    n_items: int
    n_labels: int  # compared label pairs behind the kappa


@dataclass(frozen=True)
class Certificate:
    """A judge's verdict on one aspect of a suite, with every row it rests on."""

    aspect: str
    judge: Row
    human: Row
    baselines: list[Row]
    margin: float
    gap_low: float  # one-sided 95% lower bound of judge - human kappa
    beats: dict[str, float]  # baseline -> one-sided 95% lower bound of judge - baseline kappa
    n_missing: int
    verdict: str
    pair_row: str = "human vs human"  # who the second row compares (the hard set's passes are not human)
    note: str = ""  # a state the verdict rests on (e.g. a labelling pass missing)

    def as_dict(self) -> dict:
        """The certificate as stored JSON (an undefined kappa or bound as null: JSON has no NaN or infinity)."""
        return finite(asdict(self))


def finite(value: Any) -> Any:
    """A JSON-ready copy with every non-finite float as None (JSON, and PostgreSQL's JSON, have no NaN)."""
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return None if isinstance(value, float) and not np.isfinite(value) else value


def _k(value: float | None) -> str:
    return "undefined" if value is None or not np.isfinite(value) else f"{value:.2f}"


# --------------------------------------------------------------------------- baselines


def words(text: str) -> list[str]:
    """Lower-cased word tokens (letters, digits; a CJK run counts per character)."""
    out: list[str] = []
    for w in _WORD.findall(text.lower()):
        out += list(w) if re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", w) else [w]
    return out


def word_overlap(answer: str, passages: str) -> float:
    """Share of the answer's words found in the passages (0 for an empty answer)."""
    answer_words, pool = words(answer), set(words(passages))
    return sum(w in pool for w in answer_words) / len(answer_words) if answer_words else 0.0


def answer_length(answer: str) -> float:
    """The answer's length in words."""
    return float(len(words(answer)))


def f1(precision: float | None, recall: float | None) -> float | None:
    """Harmonic mean of claim precision and recall (0 when both are 0; None when either is missing)."""
    if precision is None or recall is None:
        return None
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


# --------------------------------------------------------------------------- scale and kappa


def to_scale(scores: Sequence[float], pooled_labels: Sequence[float], categories: Sequence[float]) -> np.ndarray:
    """Scores turned into the annotators' categories at the annotators' rates, by rank: a score whose share of lower
    scores is p gets the first category whose cumulative share exceeds p (equal scores get one category). A judge
    that gives 0/1 verdicts on a 0/1 label scale keeps them: ranking tied binary scores would put them all in one
    category (an exact judge then scores kappa 0)."""
    x = np.asarray(scores, dtype=float)
    if len(x) and set(map(float, categories)) == {0.0, 1.0} and np.isin(x, (0.0, 1.0)).all():
        return x
    pooled = np.asarray(pooled_labels, dtype=float)
    cumulative = np.cumsum([np.mean(pooled == c) for c in categories])
    below = np.searchsorted(np.sort(x), x, side="left") / max(len(x), 1)
    index = np.minimum(np.searchsorted(cumulative, below, side="right"), len(categories) - 1)
    return np.asarray(categories, dtype=float)[index]


def _weights(k: int, scheme: str) -> np.ndarray:
    i = np.arange(k)
    if scheme == "linear":
        return 1.0 - np.abs(i[:, None] - i[None, :]) / max(k - 1, 1)
    return np.eye(k)


def kappa_of(tables: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted kappa of contingency tables (..., k, k) (nan where chance agreement is 1)."""
    total = tables.sum(axis=(-2, -1))[..., None, None]
    p = np.divide(tables, total, out=np.zeros_like(tables), where=total > 0)
    rows, cols = p.sum(axis=-1), p.sum(axis=-2)
    observed = (p * weights).sum(axis=(-2, -1))
    chance = np.einsum("...i,ij,...j->...", rows, weights, cols)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(chance < 1, (observed - chance) / (1 - chance), np.nan)


def item_tables(rater: Sequence[float | None], labels: Sequence[Sequence[float]], categories: Sequence[float],
                ) -> np.ndarray:
    """Per item, the (rater label, annotator label) counts; a None rater label counts nothing."""
    index = {float(c): i for i, c in enumerate(categories)}
    out = np.zeros((len(labels), len(categories), len(categories)))
    for n, (r, ls) in enumerate(zip(rater, labels, strict=True)):
        if r is not None:
            for label in ls:
                out[n, index[float(r)], index[float(label)]] += 1
    return out


def human_tables(labels: Sequence[Sequence[float]], categories: Sequence[float]) -> np.ndarray:
    """Per item, the counts of every ordered pair of two different annotators' labels."""
    index = {float(c): i for i, c in enumerate(categories)}
    out = np.zeros((len(labels), len(categories), len(categories)))
    for n, ls in enumerate(labels):
        for a in range(len(ls)):
            for b in range(len(ls)):
                if a != b:
                    out[n, index[float(ls[a])], index[float(ls[b])]] += 1
    return out


# --------------------------------------------------------------------------- the verdict


def verdict(gap_low: float, beats: dict[str, float], margin: float, n_items: int) -> str:
    """The rule: non-inferior to a second human and better than every baseline decides; baselines only explores."""
    if n_items < MIN_ITEMS:
        return UNDETERMINED
    better = all(low > 0 for low in beats.values())
    if better and gap_low >= -margin:
        return DECIDE
    return EXPLORE if better else NOT_FIT


def _row(name: str, draws: np.ndarray, point: float, tables: np.ndarray, n_items: int) -> Row:
    finite = draws[np.isfinite(draws)]
    low, high = (np.quantile(finite, [0.025, 0.975]) if len(finite) else (np.nan, np.nan))
    clip = ((round(max(-1.0, float(low)), 12) + 0.0, round(min(1.0, float(high)), 12) + 0.0) if len(finite)
            else (float("nan"), float("nan")))  # no resample defines kappa: no interval (stored as null)
    return Row(name, float(point), clip, n_items, int(tables.sum()))


def _lower(diff: np.ndarray) -> float:
    finite = diff[np.isfinite(diff)]
    return float(np.quantile(finite, 0.05)) if len(finite) else float("-inf")


def certify(aspect: str, judge: Sequence[float | None], labels: Sequence[Sequence[float]],
            baselines: Mapping[str, Sequence[float]], categories: Sequence[float], scheme: str = "none",
            margin: float = MARGIN, resamples: int = RESAMPLES, seed: int = 0) -> Certificate:
    """The judge's certificate on one aspect: judge scores and baseline scores per item (higher = better, on any
    scale), the annotators' labels per item (at least two per item for the human row)."""
    keep = [i for i, s in enumerate(judge) if s is not None]
    labels_k = [labels[i] for i in keep]
    pooled = [label for ls in labels_k for label in ls]
    raters = {"judge": to_scale([float(judge[i] or 0.0) for i in keep], pooled, categories)}
    for name, scores in baselines.items():
        raters[name] = to_scale([scores[i] for i in keep], pooled, categories)
    majority = max(categories, key=pooled.count)
    raters["majority label"] = np.full(len(keep), float(majority))
    tables = {name: item_tables(list(r), labels_k, categories) for name, r in raters.items()}
    tables["human"] = human_tables(labels_k, categories)
    w = _weights(len(categories), scheme)
    counts = np.random.default_rng(seed).multinomial(len(keep), np.full(len(keep), 1 / len(keep)), size=resamples)
    k = len(categories)
    draws = {name: kappa_of((counts @ t.reshape(len(keep), k * k)).reshape(-1, k, k), w) for name, t in tables.items()}
    points = {name: float(kappa_of(t.sum(axis=0), w)) for name, t in tables.items()}
    rows = {name: _row(name, draws[name], points[name], tables[name], len(keep)) for name in tables}
    gap_low = _lower(draws["judge"] - draws["human"])
    beats = {name: _lower(draws["judge"] - draws[name]) for name in raters if name != "judge"}
    return Certificate(aspect, rows["judge"], rows["human"], [rows[n] for n in raters if n != "judge"], margin,
                       gap_low, beats, len(judge) - len(keep), verdict(gap_low, beats, margin, len(keep)))


def _best_baseline(certificate: dict) -> str:
    defined = [b for b in certificate["baselines"] if b["kappa"] is not None and np.isfinite(b["kappa"])]
    best = max(defined, key=lambda b: b["kappa"], default=None)
    return "no baseline" if best is None else f"best baseline {best['rater']} {_k(best['kappa'])}"


def _pair(certificate: dict) -> str:
    who = "humans" if certificate.get("pair_row", "human vs human") == "human vs human" else "annotators"
    if certificate.get("note"):
        return f"vs {who}: {certificate['note']}"
    return f"vs {who} {_k(certificate['human']['kappa'])}"


def summary(certificates: Sequence[dict]) -> tuple[str, str]:
    """(label, reason) of a judge over a suite's aspects: the weakest aspect's verdict, and every aspect's verdict."""
    if not certificates:
        return UNDETERMINED, "no aspect certified"
    worst = min((c["verdict"] for c in certificates), key=ORDER.index)
    parts = [f"{c['aspect']} {c['verdict']} (κ {_k(c['judge']['kappa'])} {_pair(c)}, "
             f"margin {c['margin']:.2f}, {_best_baseline(c)})" for c in certificates]
    return worst, "; ".join(parts)


Scorer = Callable[[str, str], float]
BASELINE_SCORERS: dict[str, Scorer] = {"word overlap": word_overlap, "answer length": lambda a, _p: answer_length(a)}
