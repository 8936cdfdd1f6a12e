"""Judges: an LLM judge (any provider) and the offline `heuristic` judge, with their registries and prompt texts."""

from core.scoring.judges.base import (
    ConstraintOutcome,
    ConstraintView,
    ContextClaimsOutcome,
    DocumentView,
    Judge,
    JudgeInput,
    MetricOutcome,
    coverage_score,
    precondition_triggered,
)
from core.scoring.judges.heuristic import HeuristicJudge
from core.scoring.judges.llm_judge import LLMJudge
from core.scoring.judges.registry import JUDGES, METRICS, MetricSpec, resolve_judge

__all__ = [
    "JUDGES",
    "METRICS",
    "ConstraintOutcome",
    "ConstraintView",
    "ContextClaimsOutcome",
    "DocumentView",
    "HeuristicJudge",
    "Judge",
    "JudgeInput",
    "LLMJudge",
    "MetricOutcome",
    "MetricSpec",
    "coverage_score",
    "precondition_triggered",
    "resolve_judge",
]
