"""The fitness statement of a judge: fit to decide, fit to explore, not fit, or undetermined, from its agreement with
human labels (Cohen's kappa) and its bias probes. Any surface that shows a judge's number can call judge_fitness.

Thresholds (docs/judges.md): kappa below 0.4 is at best "fair" agreement on Landis & Koch's (1977) scale
(0.21-0.40 fair, 0.41-0.60 moderate, 0.61-0.80 substantial), too weak to rank models on; 0.4 to 0.7 is moderate, enough
to explore (spot trends, choose what to label) but not to decide; 0.7 and above is toward "substantial", the level
McHugh (2012, Biochemia Medica 22(3)) asks of a rater whose labels are acted on. Fewer than MIN_LABELS compared labels
decide nothing. A probe that detected a bias (position, length, repeat flips) caps the statement at "fit to explore".

`notice` turns a judge's fitness into what every surface that shows the judge's numbers prints (Judge alignment, the
Leaderboard, Pick a generator, the decision report and its summaries, `gauntlet decide` and `gauntlet report`): the
statement, and a warning whenever the judge is not fit to decide or its fitness was never measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

FIT_TO_DECIDE = 0.7
FIT_TO_EXPLORE = 0.4
MIN_LABELS = 30
LABELS = ("fit to decide", "fit to explore", "not fit", "undetermined")
CHECK_SUITE = "ragchecker-meta"


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


def check_command(judge: str) -> str:
    """The command that measures a judge's fitness on the public human labels."""
    return f"gauntlet judge check {judge} --suite {CHECK_SUITE}"


def unmeasured(judge: str) -> Fitness:
    """The fitness of a judge that was never checked against human labels."""
    return Fitness("undetermined", f"fitness not measured: run `{check_command(judge)}`")


@dataclass(frozen=True)
class Notice:
    """What a surface shows beside a judge's numbers: the statement, and a warning unless the judge may decide."""

    judge: str
    fitness: Fitness
    statement: str
    warning: str | None
    level: str  # "ok", "warning" (fit to explore, undetermined) or "error" (not fit)

    def text(self) -> str:
        """The notice as plain text for a command's output: the warning (if any) above the statement."""
        return self.statement if self.warning is None else f"WARNING: {self.warning}\n{self.statement}"

    def as_dict(self) -> dict[str, str | None]:
        """The notice for a JSON document."""
        return {"judge": self.judge, "fitness": self.fitness.label, "reason": self.fitness.reason,
                "warning": self.warning}


def _warning(name: str, fitness: Fitness) -> tuple[str | None, str]:
    if fitness.label == "fit to decide":
        return None, "ok"
    if fitness.label == "not fit":
        return (f"Not fit to decide: these numbers come from the {name} judge, which is NOT FIT ({fitness.reason}). "
                "Do not decide on them; check them against gold labels or use a judge fit to decide."), "error"
    if fitness.label == "fit to explore":
        return (f"Fit to explore only: these numbers come from the {name} judge ({fitness.reason}). Use them for "
                "trends and to choose what to label, not to decide."), "warning"
    return f"Judge {name}: {fitness.reason}. Until then no number here is known to be fit to decide.", "warning"


def notice(judge: str, fitness: Fitness) -> Notice:
    """The statement and warning for the numbers of `judge` (an id such as 'heuristic' or 'llm:<model>')."""
    from core.scoring.judges.names import judge_label

    name = judge_label(judge)
    warning, level = _warning(name, fitness)
    return Notice(judge, fitness, f"Judge fitness, {name}: {fitness.label.upper()} ({fitness.reason})", warning, level)
