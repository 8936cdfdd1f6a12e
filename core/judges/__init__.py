"""Judges: an LLM judge (any provider) and the offline `heuristic` judge, with their registries and prompt texts."""

from core.judges.base import (
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
from core.judges.heuristic import HeuristicJudge
from core.judges.llm_judge import LLMJudge
from core.judges.registry import JUDGES, METRICS, MetricSpec, resolve_judge

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
