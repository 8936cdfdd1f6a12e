"""The LLM judge: any provider through an LLM client; JSON replies validated by pydantic, errors recorded, never guessed."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, BeforeValidator, Field

from core.generation.providers.base import ChatMessage
from core.scoring.judges import prompts
from core.scoring.judges.base import (
    CompletionClient,
    ConstraintMode,
    ConstraintOutcome,
    ConstraintView,
    ContextClaimsOutcome,
    JudgeInput,
    MetricOutcome,
    coverage_outcome,
    faithfulness_outcome,
    format_documents,
)
from core.scoring.judges.names import SINGLE_SUFFIX
from core.scoring.judges.parsing import JsonReply, ask_json, match_key
from core.scoring.judges.text import snippet


def _lower(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


def _binary(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, str) and value.strip() in {"0", "1"}:
        return int(value.strip())
    return value


YesNo = Annotated[Literal["yes", "no"], BeforeValidator(_lower)]
Graded = Annotated[Literal["correct", "incorrect"], BeforeValidator(_lower)]
Binary = Annotated[Literal[0, 1], BeforeValidator(_binary)]


class ConstraintReply(BaseModel):
    """Single-constraint judge reply."""

    verdict: YesNo
    reason: str = ""


class BatchedItem(BaseModel):
    """One constraint's entry in a batched reply."""

    id: str
    verdict: YesNo
    reason: str = ""


class BatchedReply(BaseModel):
    """Batched judge reply: one entry per constraint id."""

    verdicts: list[BatchedItem]


class ClaimsReply(BaseModel):
    """Atomic claims extracted from a response."""

    claims: list[str]


class VerifyItem(BaseModel):
    """Support verdict for one numbered claim."""

    index: int
    supported: bool
    reason: str = ""


class VerifyReply(BaseModel):
    """Support verdicts for numbered claims."""

    results: list[VerifyItem]


class ContextClaimsReply(BaseModel):
    """Core and supplementary claims from query + documents."""

    core: list[str] = Field(default_factory=list)
    supplementary: list[str] = Field(default_factory=list)


class CoverageItem(BaseModel):
    """Coverage verdict for one reference claim id."""

    id: str
    covered: bool
    reason: str = ""


class CoverageReply(BaseModel):
    """Coverage verdicts for reference claims."""

    results: list[CoverageItem]


class RefusedReply(BaseModel):
    """Rejection / refusal classification."""

    refused: Binary
    reason: str = ""


class ConflictReply(BaseModel):
    """Conflict recognition classification."""

    recognized: Binary
    reason: str = ""


class ScoreReply(BaseModel):
    """A 0/1 score with a reason (a released judge's output format: LIT-RAGBench's names it evaluation_reason)."""

    score: Binary
    reason: str = Field("", validation_alias=AliasChoices("reason", "evaluation_reason"))


class CorrectnessReply(BaseModel):
    """Correctness against the reference: correct or incorrect, with a reason."""

    verdict: Graded
    reason: str = ""


class ConsistencyReply(BaseModel):
    """Consistency of a long-form answer with the reference, 0-5."""

    score: int = Field(ge=0, le=5)
    reason: str = ""


def _messages(system: str, user: str) -> list[ChatMessage]:
    return [ChatMessage(role="system", content=system), ChatMessage(role="user", content=user)]


def _constraint_line(c: ConstraintView) -> str:
    check = f" Check: {c.criterion}" if c.criterion else ""
    return f"- id {c.cid}: {c.text}{check}"


def _metric_error(reply: JsonReply, method: str, extra_calls: int = 0, extra_cost: float = 0.0) -> MetricOutcome:
    return MetricOutcome(
        status="error", reason=reply.error or "judge error", method=method, details={"raw": snippet(reply.raw, 1000)},
        calls=reply.calls + extra_calls, cost_usd=reply.cost_usd + extra_cost,
    )


class LLMJudge:
    """Judges every metric and llm constraint by prompting a model; records 'single' / 'batched' / 'llm' as method.

    Its id is 'llm:<model>' in batched mode (the default) and 'llm:<model>@single' in single mode, so the verdicts of
    both modes can be stored side by side and compared on gold labels.
    """

    def __init__(self, client: CompletionClient, name: str, constraint_mode: ConstraintMode | None = None) -> None:
        self.client = client
        self.base_name = name.removesuffix(SINGLE_SUFFIX)
        self.constraint_mode: ConstraintMode = constraint_mode or ("single" if name.endswith(SINGLE_SUFFIX) else "batched")
        self.name = self.base_name + (SINGLE_SUFFIX if self.constraint_mode == "single" else "")

    def with_mode(self, constraint_mode: ConstraintMode) -> LLMJudge:
        """The same judge (same client) in `constraint_mode`, named for it."""
        return self if constraint_mode == self.constraint_mode else LLMJudge(self.client, self.base_name, constraint_mode)

    def with_client(self, client: CompletionClient) -> LLMJudge:
        """The same judge (same name and mode) calling through `client`."""
        return LLMJudge(client, self.base_name, self.constraint_mode)

    async def aclose(self) -> None:
        """Close the provider's HTTP client (if any) inside the running event loop."""
        http = getattr(getattr(self.client, "provider", None), "client", None)
        close = getattr(http, "close", None)
        if close is not None:
            await close()

    def _item(self, item: JudgeInput) -> str:
        return prompts.item_block(item.query, format_documents(item.documents), item.response)

    async def judge_constraints(
        self, item: JudgeInput, constraints: list[ConstraintView], mode: ConstraintMode
    ) -> list[ConstraintOutcome]:
        """Judge llm constraints one call each ('single') or all in one call ('batched')."""
        if not constraints:
            return []
        if mode == "batched":
            return await self._batched(item, constraints)
        return list(await asyncio.gather(*(self._single(item, c) for c in constraints)))

    async def _single(self, item: JudgeInput, c: ConstraintView) -> ConstraintOutcome:
        user = f"{self._item(item)}\n\nInstruction (id {c.cid}):\n{c.text}\nCheck: {c.criterion or c.text}"
        reply = await ask_json(self.client, _messages(prompts.CONSTRAINT_SINGLE_SYSTEM, user), ConstraintReply,
                               "judge:constraint_single")
        base = {"cid": c.cid, "method": "single", "calls": reply.calls, "cost_usd": reply.cost_usd}
        if reply.parsed is None:
            return ConstraintOutcome(status="error", reason=reply.error or "judge error",
                                     details={"raw": snippet(reply.raw, 1000)}, **base)
        return ConstraintOutcome(passed=reply.parsed["verdict"] == "yes", reason=reply.parsed["reason"],
                                 details={"repaired": reply.repaired}, **base)

    async def _batched(self, item: JudgeInput, constraints: list[ConstraintView]) -> list[ConstraintOutcome]:
        listing = "\n".join(_constraint_line(c) for c in constraints)
        user = f"{self._item(item)}\n\nInstructions:\n{listing}"
        reply = await ask_json(self.client, _messages(prompts.CONSTRAINT_BATCHED_SYSTEM, user), BatchedReply,
                               "judge:constraint_batched")
        by_id: dict[str, dict] = {}
        for v in (reply.parsed or {}).get("verdicts", []):
            by_id.setdefault(match_key(v["id"]), v)
        unmatched = sorted(set(by_id) - {match_key(c.cid) for c in constraints})
        outcomes = []
        for i, c in enumerate(constraints):
            share = {"calls": reply.calls if i == 0 else 0, "cost_usd": reply.cost_usd if i == 0 else 0.0}
            details = {"batch_size": len(constraints), "batch_calls": reply.calls}
            found = by_id.get(match_key(c.cid))
            if reply.parsed is None:
                outcomes.append(ConstraintOutcome(cid=c.cid, status="error", method="batched", reason=reply.error or "judge error",
                                                  details={**details, "raw": snippet(reply.raw, 1000)}, **share))
            elif found is None:
                outcomes.append(ConstraintOutcome(
                    cid=c.cid, status="error", method="batched",
                    reason=f"batched answer has no verdict for constraint id {c.cid}; raw: {snippet(reply.raw)}",
                    details={**details, "unmatched_ids": unmatched}, **share))
            else:
                outcomes.append(ConstraintOutcome(cid=c.cid, passed=found["verdict"] == "yes", reason=found["reason"],
                                                  method="batched", details={**details, "repaired": reply.repaired}, **share))
        return outcomes

    async def context_claims(self, item: JudgeInput) -> ContextClaimsOutcome:
        """Extract core / supplementary claims from query + documents (one call, plus a repair if needed)."""
        user = f"Question:\n{item.query}\n\nDocuments:\n{format_documents(item.documents)}"
        reply = await ask_json(self.client, _messages(prompts.CONTEXT_CLAIMS_SYSTEM, user), ContextClaimsReply,
                               "judge:context_claims")
        if reply.parsed is None:
            return ContextClaimsOutcome(status="error", error=reply.error, calls=reply.calls, cost_usd=reply.cost_usd)
        clean = lambda xs: [x.strip() for x in xs if x and x.strip()]  # noqa: E731
        return ContextClaimsOutcome(core=clean(reply.parsed["core"]), supplementary=clean(reply.parsed["supplementary"]),
                                    calls=reply.calls, cost_usd=reply.cost_usd)

    async def faithfulness(self, item: JudgeInput) -> MetricOutcome:
        """Extract the response's claims, then verify them against the documents in one call."""
        extract = await ask_json(self.client, _messages(prompts.RESPONSE_CLAIMS_SYSTEM, f"Answer:\n{item.response}"),
                                 ClaimsReply, "judge:response_claims")
        if extract.parsed is None:
            return _metric_error(extract, "llm")
        claims = [c.strip() for c in extract.parsed["claims"] if c and c.strip()]
        if not claims:
            out = faithfulness_outcome([], "llm")
            return out.model_copy(update={"calls": extract.calls, "cost_usd": extract.cost_usd})
        numbered = "\n".join(f"{i}. {c}" for i, c in enumerate(claims, start=1))
        user = f"Documents:\n{format_documents(item.documents)}\n\nClaims:\n{numbered}"
        verify = await ask_json(self.client, _messages(prompts.CLAIM_VERIFY_SYSTEM, user), VerifyReply, "judge:claim_verify")
        calls, cost = extract.calls + verify.calls, extract.cost_usd + verify.cost_usd
        if verify.parsed is None:
            return _metric_error(verify, "llm", extract.calls, extract.cost_usd)
        by_index = {r["index"]: r for r in verify.parsed["results"]}
        missing = [i for i in range(1, len(claims) + 1) if i not in by_index]
        if missing:
            return MetricOutcome(status="error", method="llm", calls=calls, cost_usd=cost,
                                 reason=f"verification answer has no verdict for claims {missing}; raw: {snippet(verify.raw)}")
        rows = [{"claim": c, "supported": by_index[i]["supported"], "reason": by_index[i]["reason"]}
                for i, c in enumerate(claims, start=1)]
        return faithfulness_outcome(rows, "llm").model_copy(update={"calls": calls, "cost_usd": cost})

    async def coverage(self, item: JudgeInput, claims: ContextClaimsOutcome) -> MetricOutcome:
        """Check which stored context claims the response conveys (one call)."""
        ids = [(f"K{i}", c, "core") for i, c in enumerate(claims.core, start=1)]
        ids += [(f"S{i}", c, "supplementary") for i, c in enumerate(claims.supplementary, start=1)]
        if not ids:
            return coverage_outcome([], [], "llm")
        listing = "\n".join(f"{cid}. {text}" for cid, text, _ in ids)
        user = f"Question:\n{item.query}\n\nClaims:\n{listing}\n\nAnswer to evaluate:\n{item.response}"
        reply = await ask_json(self.client, _messages(prompts.COVERAGE_SYSTEM, user), CoverageReply, "judge:coverage")
        if reply.parsed is None:
            return _metric_error(reply, "llm")
        by_id = {match_key(r["id"]): r for r in reply.parsed["results"]}
        missing = [cid for cid, _, _ in ids if match_key(cid) not in by_id]
        if missing:
            return MetricOutcome(status="error", method="llm", calls=reply.calls, cost_usd=reply.cost_usd,
                                 reason=f"coverage answer has no verdict for claims {missing}; raw: {snippet(reply.raw)}")
        rows: dict[str, list[dict[str, Any]]] = {"core": [], "supplementary": []}
        for cid, text, kind in ids:
            found = by_id[match_key(cid)]
            rows[kind].append({"claim": text, "covered": found["covered"], "reason": found["reason"]})
        out = coverage_outcome(rows["core"], rows["supplementary"], "llm")
        return out.model_copy(update={"calls": reply.calls, "cost_usd": reply.cost_usd})

    async def _binary(self, item: JudgeInput, system: str, model: type[BaseModel], key: str, purpose: str) -> MetricOutcome:
        reply = await ask_json(self.client, _messages(system, self._item(item)), model, purpose)
        if reply.parsed is None:
            return _metric_error(reply, "llm")
        value = reply.parsed[key]
        return MetricOutcome(value=float(value), passed=bool(value), reason=reply.parsed["reason"], method="llm",
                             calls=reply.calls, cost_usd=reply.cost_usd, details={"repaired": reply.repaired})

    async def rejection(self, item: JudgeInput) -> MetricOutcome:
        """Valid refusal on a gap instance (1) or not (0)."""
        return await self._binary(item, prompts.REJECTION_SYSTEM, RefusedReply, "refused", "judge:rejection")

    async def refusal(self, item: JudgeInput) -> MetricOutcome:
        """Whether the response abstains (used for over-abstention on noisy instances)."""
        return await self._binary(item, prompts.REFUSAL_SYSTEM, RefusedReply, "refused", "judge:refusal")

    async def conflict_recognition(self, item: JudgeInput) -> MetricOutcome:
        """Conflict named with both sides (1) or not (0)."""
        return await self._binary(item, prompts.CONFLICT_SYSTEM, ConflictReply, "recognized", "judge:conflict")

    async def _reference_reply(self, item: JudgeInput, system: str, model: type[BaseModel], purpose: str) -> JsonReply:
        if item.reference is None:
            raise ValueError("a reference metric needs item.reference")
        user = prompts.reference_block(item.query, prompts.describe_reference(item.reference), item.response)
        return await ask_json(self.client, _messages(system, user), model, purpose)

    async def correctness(self, item: JudgeInput) -> MetricOutcome:
        """Correct (1) or incorrect (0) against the reference answer and reasoning (one call, plus a repair if needed)."""
        reply = await self._reference_reply(item, prompts.CORRECTNESS_SYSTEM, CorrectnessReply, "judge:correctness")
        if reply.parsed is None:
            return _metric_error(reply, "llm")
        ok = reply.parsed["verdict"] == "correct"
        return MetricOutcome(value=float(ok), passed=ok, reason=reply.parsed["reason"], method="llm",
                             calls=reply.calls, cost_usd=reply.cost_usd, details={"repaired": reply.repaired})

    async def score_with_prompt(self, messages: list[ChatMessage], purpose: str) -> MetricOutcome:
        """A 0/1 verdict asked with messages a protocol built (e.g. a paper's released judge prompt)."""
        reply = await ask_json(self.client, messages, ScoreReply, purpose)
        if reply.parsed is None:
            return _metric_error(reply, "llm")
        value = reply.parsed["score"]
        return MetricOutcome(value=float(value), passed=bool(value), reason=reply.parsed["reason"], method="llm",
                             calls=reply.calls, cost_usd=reply.cost_usd,
                             details={"repaired": reply.repaired, "purpose": purpose})

    async def consistency(self, item: JudgeInput) -> MetricOutcome:
        """A 0-5 consistency score with the reference answer, normalised to [0, 1] (score / 5)."""
        reply = await self._reference_reply(item, prompts.CONSISTENCY_SYSTEM, ConsistencyReply, "judge:consistency")
        if reply.parsed is None:
            return _metric_error(reply, "llm")
        score = reply.parsed["score"]
        return MetricOutcome(value=score / 5, reason=reply.parsed["reason"], method="llm", calls=reply.calls,
                             cost_usd=reply.cost_usd, details={"score_0_5": score, "repaired": reply.repaired})
