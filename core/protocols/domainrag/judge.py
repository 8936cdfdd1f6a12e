"""DomainRAG's GE (generation evaluation) as the authors grade it: an LLM rates a prediction 0-5 against the golden
answer on three criteria (ShootingWong/DomainRAG, BCM/evaluation/prediction_results/gpt_eval.py at bf13f195,
`pair_eval_prompt`): factually consistent with the golden answer, covering all of it, and holding no information the
golden answer does not hold. The product's `consistency` judge differs on the last point (extra correct detail is
fine there); Table 2's setting `ge=paper|product` picks one of the two.

Logic: long answers only (Table 2 reports GE on conversational and multi-document QA); an LLM judge is asked with the
typed input `GeInput` and must reply `GeReply` (score and reason; one repair call when the JSON cannot be read, else a
judge error); the value is score / 5. The heuristic judge has no model to ask: not applicable, with that reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from core.protocols.domainrag.declarations import LONG_ONLY, NEEDS_LLM

if TYPE_CHECKING:
    from core.scoring.judges.base import JudgeInput, MetricOutcome

PURPOSE = "judge:domainrag_ge"

GE_SYSTEM = """[task: domainrag_ge]
You grade a prediction against a golden answer on a 0-5 integer scale. Three things decide the grade:
a. agreement: every fact in the prediction agrees with the golden answer;
b. coverage: the prediction states everything the golden answer states;
c. nothing extra: the prediction says nothing that the golden answer does not say. Extra information lowers the
   grade even when it is true, and the more of it there is, the lower the grade.
Wording, order and language do not matter.

5 = agrees, covers everything, nothing extra;
4 = agrees and covers everything, with a little extra information; or one minor point missing, nothing extra;
3 = agrees, but a key point is missing or much extra information is added;
2 = agrees only in part, or covers only a small part;
1 = contradicts a key point of the golden answer;
0 = unrelated, a refusal, or wrong throughout.

Reply with one JSON object and nothing else: {"score": <0-5>, "reason": "<one or two sentences>"}

Example A
Golden answer: 中法学院用汉语、法语和英语三种语言教学。
Prediction: 中法学院采用汉语、法语、英语三语教学。
{"score": 5, "reason": "Same three languages, nothing added."}

Example B
Golden answer: 中法学院用汉语、法语和英语三种语言教学。
Prediction: 用汉语、法语和英语教学。学院还开设金融学和国民经济管理专业，并与巴黎高校合作办学。
{"score": 3, "reason": "Covers the three languages, but adds the majors and the partnership, which the golden answer does not contain."}

Example C
Golden answer: 中法学院用汉语、法语和英语三种语言教学。
Prediction: 中法学院只用法语教学。
{"score": 1, "reason": "Contradicts the golden answer: it names one language instead of three."}"""


class GeInput(BaseModel):
    """What the GE judge sees: the question, the golden answer and the prediction (no documents, as theirs)."""

    question: str
    golden: str
    prediction: str

    def user_message(self) -> str:
        """The user turn sent with GE_SYSTEM."""
        return f"Question: {self.question}\nGolden Answer: {self.golden}\nPrediction: {self.prediction}\nYour score:"


class GeReply(BaseModel):
    """The GE judge's verdict: an integer 0-5 and why."""

    score: int = Field(ge=0, le=5)
    reason: str = ""


def ge_input(item: JudgeInput) -> GeInput:
    """The typed GE input of a response (the golden answer: the reference's answers, one per line)."""
    assert item.reference is not None  # checked by ge_paper
    golden = "\n".join(a.text for a in item.reference.answers)
    return GeInput(question=item.query, golden=golden, prediction=item.response)


def _outcome(status: str, reason: str, **more: Any) -> MetricOutcome:
    from core.scoring.judges.base import MetricOutcome

    return MetricOutcome(status=status, reason=reason, **more)


async def ge_paper(judge: Any, item: JudgeInput) -> MetricOutcome:
    """The paper's GE of one response: the judge's 0-5 grade / 5, with its reason."""
    from core.generation.providers.base import ChatMessage
    from core.scoring.judges.llm_judge import LLMJudge
    from core.scoring.judges.parsing import ask_json

    if item.reference is None or item.reference.answer_type != "long":
        return _outcome("not_applicable", LONG_ONLY)
    if not isinstance(judge, LLMJudge):
        return _outcome("not_applicable", NEEDS_LLM)
    messages = [ChatMessage(role="system", content=GE_SYSTEM),
                ChatMessage(role="user", content=ge_input(item).user_message())]
    reply = await ask_json(judge.client, messages, GeReply, PURPOSE)
    accounting = {"method": "llm", "calls": reply.calls, "cost_usd": reply.cost_usd}
    if reply.parsed is None:
        return _outcome("error", reply.error or "judge error", details={"raw": reply.raw[:1000]}, **accounting)
    score = int(reply.parsed["score"])
    return _outcome("ok", reply.parsed.get("reason", ""), value=score / 5,
                    details={"score_0_5": score, "repaired": reply.repaired}, **accounting)
