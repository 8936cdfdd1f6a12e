"""Seeded simulated worlds shared by the gold-label benchmarks (bench_labels_pay.py) and their CI-sized tests: two
models' 0/1 outcomes on shared instances, a judge right with a given accuracy that errs more often where the judges
disagree (the "hard" instances, uncertainty 0.25 per response against 0.02), optionally biased toward one model.

Vectorised over worlds: every array has the worlds as its first axis."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

HARD_SHARE = 0.3
HARD_RATIO = 3.0  # the judge errs this many times as often on hard instances
HARD_U, EASY_U = 0.25, 0.02


@dataclass(frozen=True)
class Paired:
    """Worlds x instances: gold and judge outcomes of models A and B, and the judges' uncertainty per response."""

    y_a: np.ndarray
    y_b: np.ndarray
    f_a: np.ndarray
    f_b: np.ndarray
    u_a: np.ndarray
    u_b: np.ndarray

    @property
    def gold(self) -> np.ndarray:
        """The gold difference A - B per instance."""
        return self.y_a - self.y_b

    @property
    def judged(self) -> np.ndarray:
        """The judge's difference A - B per instance."""
        return self.f_a - self.f_b


def error_rates(accuracy: float, hard: np.ndarray) -> np.ndarray:
    """Per response: the judge's error probability, HARD_RATIO times as high on hard ones, averaging 1 - accuracy."""
    easy = (1 - accuracy) / (1 - HARD_SHARE + HARD_RATIO * HARD_SHARE)
    return np.where(hard, min(0.5, HARD_RATIO * easy), easy)


def judge(y: np.ndarray, accuracy: float, hard: np.ndarray, rng: np.random.Generator, lean: float = 0.0) -> np.ndarray:
    """The judge's 0/1 verdicts, wrong with error_rates; a judge biased toward this model (`lean` > 0) also passes a
    failing response with probability `lean`."""
    wrong = rng.random(y.shape) < error_rates(accuracy, hard)
    f = np.where(wrong, 1 - y, y)
    return np.where((y == 0) & (rng.random(y.shape) < lean), 1.0, f)


def rates(rate: float, hard: np.ndarray, hard_shift: float) -> np.ndarray:
    """Per response: the model's success probability, `hard_shift` lower on hard responses and higher on the others
    so that it averages `rate` (clipped to [0, 1])."""
    return np.clip(np.where(hard, rate - hard_shift, rate + hard_shift * HARD_SHARE / (1 - HARD_SHARE)), 0.0, 1.0)


def paired(worlds: int, n: int, rate_a: float, difference: float, accuracy: float, seed: int,
           lean_b: float = 0.0, hard_shift: float = 0.0) -> Paired:
    """`worlds` seeded populations of n shared instances: A right with rate_a, B with rate_a - difference (each
    `hard_shift` less often on hard responses); the judge leans toward B by `lean_b` (passes B's failures that much
    more often)."""
    rng = np.random.default_rng(seed)
    shape = (worlds, n)
    hard_a, hard_b = rng.random(shape) < HARD_SHARE, rng.random(shape) < HARD_SHARE
    y_a = (rng.random(shape) < rates(rate_a, hard_a, hard_shift)).astype(float)
    y_b = (rng.random(shape) < rates(rate_a - difference, hard_b, hard_shift)).astype(float)
    f_a, f_b = judge(y_a, accuracy, hard_a, rng), judge(y_b, accuracy, hard_b, rng, lean_b)
    return Paired(y_a, y_b, f_a, f_b, np.where(hard_a, HARD_U, EASY_U), np.where(hard_b, HARD_U, EASY_U))
