"""The citation protocol's support judge: does a passage (one document, or several joined) support a claim (one
sentence of the answer, citations removed)? Typed input (`SupportInput`), typed reply (`SupportReply`: supported +
reason), one repair call when the JSON cannot be read, else a judge error. It stands where ALCE runs its NLI model
(TRUE, t5_xxl_true_nli_mixture)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

PURPOSE = "judge:citation_support"

SUPPORT_SYSTEM = """[task: citation_support]
Decide whether the passage fully supports the claim: everything the claim states must be stated in or follow
directly from the passage. A claim the passage supports only in part is not supported.
Reply with one JSON object and nothing else: {"supported": true or false, "reason": "<one sentence>"}"""


class SupportInput(BaseModel):
    """A claim and the passage it cites."""

    claim: str
    passage: str

    def user_message(self) -> str:
        """The user turn sent with SUPPORT_SYSTEM (the claim first, then the passage)."""
        return f"Claim: {self.claim}\n\nPassage:\n{self.passage}"


class SupportReply(BaseModel):
    """The support judge's verdict."""

    supported: bool
    reason: str = ""


async def judge_support(client: Any, item: SupportInput) -> tuple[bool | None, dict[str, Any]]:
    """(supported, or None on a judge error; accounting and error details) of one claim and passage."""
    from core.generation.providers.base import ChatMessage
    from core.scoring.judges.parsing import ask_json

    messages = [ChatMessage(role="system", content=SUPPORT_SYSTEM), ChatMessage(role="user", content=item.user_message())]
    reply = await ask_json(client, messages, SupportReply, PURPOSE)
    info = {"calls": reply.calls, "cost_usd": reply.cost_usd, "error": reply.error}
    return (None if reply.parsed is None else bool(reply.parsed["supported"])), info
