"""LIT-RAGBench's paper setting, judged: a response generated under the released prompts is judged with the released
judge prompt (core.protocols.lit_ragbench.released builds its messages). core.scoring.judges.registry dispatches on
prompt_meta['judge_prompt'] to `paper_accuracy`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.protocols.lit_ragbench.released import judge_messages

if TYPE_CHECKING:
    from core.scoring.judges.base import Judge, JudgeInput, MetricOutcome


async def paper_accuracy(judge: Judge, item: JudgeInput) -> MetricOutcome:
    """judged_accuracy of a response generated under the paper setting: an LLM judge asked with the released judge
    prompt; the heuristic judge (no prompt) decides as it does for the product setting."""
    from core.scoring.judges.base import MetricOutcome

    ask = getattr(judge, "score_with_prompt", None)
    if ask is None:
        return await judge.correctness(item)
    try:
        messages = judge_messages(item)
    except (KeyError, ValueError) as error:
        return MetricOutcome(status="error", reason=f"released judge prompt unavailable: {error}", method="llm")
    return await ask(messages, "judge:lit_ragbench_paper")
