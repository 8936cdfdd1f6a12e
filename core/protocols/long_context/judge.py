"""The long-context protocol's answer judge: is the prediction right for the question, given the reference answer?
Typed input (`AnswerInput`), typed reply (`AnswerReply`: correct + reason), one repair call, else a judge error."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

PURPOSE = "judge:long_context_answer"

ANSWER_SYSTEM = """[task: long_context_answer]
Decide whether the prediction answers the question correctly, judged against the reference answer: the facts that
answer the question must agree with the reference; wording, length and extra correct detail do not matter.
Reply with one JSON object and nothing else: {"correct": true or false, "reason": "<one sentence>"}"""


class AnswerInput(BaseModel):
    """The question, the reference answer and the prediction."""

    question: str
    reference: str
    prediction: str

    def user_message(self) -> str:
        """The user turn sent with ANSWER_SYSTEM."""
        return f"Question: {self.question}\nReference answer: {self.reference}\nPrediction: {self.prediction}"


class AnswerReply(BaseModel):
    """The judge's verdict."""

    correct: bool
    reason: str = ""


async def judge_answer(client: Any, item: AnswerInput) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(the parsed reply or None, accounting and error) of one judge call."""
    from core.generation.providers.base import ChatMessage
    from core.scoring.judges.parsing import ask_json

    messages = [ChatMessage(role="system", content=ANSWER_SYSTEM), ChatMessage(role="user", content=item.user_message())]
    reply = await ask_json(client, messages, AnswerReply, PURPOSE)
    return reply.parsed, {"calls": reply.calls, "cost_usd": reply.cost_usd, "error": reply.error}
