"""The fitness statement of a judge: fit to decide, fit to explore, not fit, or undetermined, from its agreement with
human labels (Cohen's kappa) and its bias probes. Any surface that shows a judge's number can call judge_fitness.

Thresholds (docs/judges.md): kappa below 0.4 is at best "fair" agreement on Landis & Koch's (1977) scale
(0.21-0.40 fair, 0.41-0.60 moderate, 0.61-0.80 substantial), too weak to rank models on; 0.4 to 0.7 is moderate, enough
to explore (spot trends, choose what to label) but not to decide; 0.7 and above is toward "substantial", the level
McHugh (2012, Biochemia Medica 22(3)) asks of a rater whose labels are acted on. Fewer than MIN_LABELS compared labels
decide nothing. A probe that detected a bias (position, length, repeat flips) caps the statement at "fit to explore".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

FIT_TO_DECIDE = 0.7
FIT_TO_EXPLORE = 0.4
MIN_LABELS = 30
LABELS = ("fit to decide", "fit to explore", "not fit", "undetermined")


@dataclass(frozen=True)
class Fitness:
    """A judge's fitness label with the reason a reader sees beside it."""

    label: str
    reason: str

    @property
    def decides(self) -> bool:
        """True only when the judge's numbers may decide (a surface warns otherwise)."""
        return self.label == "fit to decide"


def judge_fitness(kappa: float | None, n_labels: int, biases: Sequence[str] = ()) -> Fitness:
    """The fitness of a judge whose preferences agree with humans at `kappa` over `n_labels`, given detected biases."""
    if kappa is None or n_labels < MIN_LABELS:
        return Fitness("undetermined", f"needs kappa on at least {MIN_LABELS} human labels (have {n_labels})")
    figure = f"kappa {kappa:.2f} on {n_labels} human labels"
    if kappa < FIT_TO_EXPLORE:
        return Fitness("not fit", f"{figure} < {FIT_TO_EXPLORE}")
    if biases:
        return Fitness("fit to explore", f"{figure}, but biased: {', '.join(biases)}")
    if kappa < FIT_TO_DECIDE:
        return Fitness("fit to explore", f"{figure}, between {FIT_TO_EXPLORE} and {FIT_TO_DECIDE}")
    return Fitness("fit to decide", f"{figure} >= {FIT_TO_DECIDE}")
