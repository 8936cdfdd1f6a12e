"""The long-context protocol's accuracy of one response: on an unanswerable reference (LaRA's hallucination
questions) a refusal by rule; otherwise an LLM judge decides against the reference; the heuristic judge decides only
an answer that contains the reference (exact match 1) and says it cannot decide the rest."""

from __future__ import annotations

from typing import Any

from core.generation.reasoning import split_reasoning
from core.scoring.judges.base import JudgeInput, MetricOutcome
from core.scoring.reference import reference_metric, rejection

from .judge import AnswerInput, judge_answer

NEEDS_LLM = "the answer does not contain the reference: an LLM judge decides it (score with --judge llm:<model>)"


async def accuracy(judge: Any, item: JudgeInput) -> MetricOutcome:
    """1 when the answer is right (a refusal for an unanswerable question), 0 when wrong."""
    from core.scoring.judges.llm_judge import LLMJudge

    if item.reference is None:
        return MetricOutcome(status="not_applicable", reason="the instance has no reference")
    split = split_reasoning(item.response)
    if split.unfinished:
        return MetricOutcome(status="unparseable", value=0.0, reason="the reasoning never finished")
    if item.reference.answer_type == "unanswerable":
        return rejection(item.reference, split.answer, item.language)
    if isinstance(judge, LLMJudge):
        ask = AnswerInput(question=item.query, reference="\n".join(a.text for a in item.reference.answers),
                          prediction=split.answer)
        parsed, info = await judge_answer(judge.client, ask)
        if parsed is None:
            return MetricOutcome(status="error", reason=info["error"] or "judge error", method="llm",
                                 calls=info["calls"], cost_usd=info["cost_usd"])
        return MetricOutcome(value=float(parsed["correct"]), passed=bool(parsed["correct"]), method="llm",
                             reason=parsed.get("reason", ""), calls=info["calls"], cost_usd=info["cost_usd"])
    contained = reference_metric("exact_match", item.reference, split.answer, item.language)
    if contained.status == "ok" and contained.value == 1.0:
        return MetricOutcome(value=1.0, passed=True, method="rule", reason="the answer contains the reference")
    return MetricOutcome(status="not_applicable", reason=NEEDS_LLM, method="rule")
