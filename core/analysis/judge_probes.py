"""Bias probes of a judge on the pairs of a suite, each a table of figures with its n and a cost estimated first.

A probe asks the judge which of two answers is better (pairwise). An LLM judge answers the PAIRWISE_SYSTEM prompt in
one call (sent fresh: no cache read or write, so repeats are real repeats); the offline heuristic judge prefers the
answer with the higher overall (F1 of correctness and completeness, as in core.analysis.judge_check).
- repeat: k verdicts per pair; flip rate (pairs whose verdicts differ) and the judge's agreement with itself;
- position: every pair in both orders; the share of decided verdicts that pick the answer shown first (0.5 when
  unbiased, by design) and the share of pairs whose verdict follows the swap;
- length: one answer padded with neutral text, each side once; the share of decided verdicts for the padded answer;
- language: the judge's verdicts against the human overall labels, per language of the suite (kappa, agreement).
A position or length share whose 95% exact (Clopper-Pearson) CI excludes 0.5 (either way: a judge may also penalise length), or a flip
rate above FLIP_LIMIT, is a detected bias.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, BeforeValidator

from core.analysis import stats
from core.analysis.judge_check import SuitePair, direction, score_pair
from core.generation.providers.base import ChatMessage
from core.metrics import MetricDeclaration, declare
from core.scoring.judges.base import Judge
from core.scoring.judges.parsing import ask_json

PROBE_SHARE = declare(MetricDeclaration(
    "judge_probe_share", "Share of probe verdicts", "rate", ("heuristic", "llm"),
    description="share of a probe's decided verdicts that fall on one side (first answer, padded answer, a flip)"))

Verdict = Literal["first", "second", "tie"]
PROBES: tuple[str, ...] = ("repeat", "position", "length", "language")
FLIP_LIMIT = 0.10
NEUTRAL_PADDING = ("\n\nThis answer was prepared from the available material. The points above are presented in a "
                   "neutral order and in plain language, for the convenience of the reader.")
PAIRWISE_SYSTEM = """[task: pairwise-preference]
You compare two answers to the same question against a reference answer. The better answer states more of the
reference's facts and fewer claims the reference contradicts or does not support. Judge content only: ignore the
order the answers are shown in and their length.

Reply with one JSON object and nothing else: {"better": "A" | "B" | "tie", "reason": "<short reason>"}"""
PAIRWISE_OUTPUT_TOKENS = 60


def _side(value: Any) -> Any:
    """'a' / ' B ' / 'Tie' as 'A' / 'B' / 'tie'; anything else is left for validation to reject."""
    if not isinstance(value, str):
        return value
    value = value.strip()
    return "tie" if value.lower() == "tie" else value.upper()


class PairwiseReply(BaseModel):
    """The judge's pairwise answer."""

    better: Annotated[Literal["A", "B", "tie"], BeforeValidator(_side)]
    reason: str = ""


def pairwise_user(query: str, reference: str, first: str, second: str) -> str:
    """The user message of a pairwise call."""
    return f"Question:\n{query}\n\nReference answer:\n{reference}\n\nAnswer A:\n{first}\n\nAnswer B:\n{second}"


class FreshClient:
    """An LLM client's provider calls without the cache (each call is sent, nothing is stored)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    async def complete(self, messages: list[ChatMessage], *, purpose: str) -> Any:
        """The provider's answer to `messages`, sent now."""
        return await self.client.fresh(messages)


async def prefer(judge: Judge, pair: SuitePair, first: str, second: str) -> Verdict | None:
    """Which answer the judge prefers (None: the judge's reply was unusable)."""
    client = getattr(judge, "client", None)
    if client is None:
        view = SuitePair(pair.key, pair.query, pair.reference, (first, second), pair.labels, pair.language)
        a, b = await score_pair(judge, view)
        if a.overall is None or b.overall is None:
            return None
        by_direction: dict[int, Verdict] = {1: "first", -1: "second", 0: "tie"}
        return by_direction[direction(a.overall - b.overall)]
    messages = [ChatMessage(role="system", content=PAIRWISE_SYSTEM),
                ChatMessage(role="user", content=pairwise_user(pair.query, pair.reference, first, second))]
    reply = await ask_json(FreshClient(client), messages, PairwiseReply, "judge:pairwise")
    if reply.parsed is None:
        return None
    by_letter: dict[str, Verdict] = {"A": "first", "B": "second", "tie": "tie"}
    return by_letter[reply.parsed["better"]]


@dataclass
class ProbeResult:
    """One probe's table: rows of figures (each with its n), and the biases it detected."""

    probe: str
    n_pairs: int
    rows: list[dict[str, Any]]
    biases: list[str] = field(default_factory=list)
    errors: int = 0


@dataclass(frozen=True)
class CostEstimate:
    """What a probe will cost before it runs."""

    calls: int
    input_tokens: int
    cost_usd: float


def arms(probe: str, k: int) -> int:
    """Judge verdicts per pair for a probe."""
    return {"repeat": k, "position": 2, "length": 3, "language": 1}[probe]


def estimate_cost(judge: Judge, probe: str, pairs: Sequence[SuitePair], k: int = 3) -> CostEstimate:
    """Calls, input tokens (about four characters a token) and dollars of a probe at the judge model's prices."""
    client = getattr(judge, "client", None)
    if client is None:
        return CostEstimate(0, 0, 0.0)
    per_pair = arms(probe, k)
    tokens = sum(per_pair * (len(PAIRWISE_SYSTEM) + len(pairwise_user(p.query, p.reference, *p.answers))
                             + (len(NEUTRAL_PADDING) if probe == "length" else 0)) // 4 for p in pairs)
    calls = per_pair * len(pairs)
    return CostEstimate(calls, tokens, client.config.cost_usd(tokens, calls * PAIRWISE_OUTPUT_TOKENS))


CHECK_CALLS_PER_PAIR = 7  # reference claims once; per answer: its claims, their verification, coverage
CHECK_OUTPUT_TOKENS = 200  # a rough allowance per judge reply (claim lists are short)


def estimate_check_cost(judge: Judge, pairs: Sequence[SuitePair]) -> CostEstimate:
    """Calls, input tokens and dollars of `judge check` before it runs (an upper bound: cached calls are free)."""
    client = getattr(judge, "client", None)
    if client is None:
        return CostEstimate(0, 0, 0.0)
    from core.scoring.judges import prompts

    system = sum(len(p) for p in (prompts.CONTEXT_CLAIMS_SYSTEM, prompts.RESPONSE_CLAIMS_SYSTEM,
                                  prompts.CLAIM_VERIFY_SYSTEM, prompts.COVERAGE_SYSTEM))
    chars = sum(len(p.query) + len(p.reference) + 2 * system
                + sum(3 * len(a) + 2 * len(p.reference) + len(p.query) for a in p.answers) for p in pairs)
    calls = CHECK_CALLS_PER_PAIR * len(pairs)
    return CostEstimate(calls, chars // 4, client.config.cost_usd(chars // 4, calls * CHECK_OUTPUT_TOKENS))


def share_row(name: str, hits: int, n: int, biased_if_not_half: bool) -> dict[str, Any]:
    """A share with its 95% CI (a rate's interval); flags it when the CI excludes 0.5 (and the row is a bias test)."""
    if n == 0:
        return {"figure": name, "value": None, "ci_low": None, "ci_high": None, "n": 0, "bias": False}
    ci = stats.interval(np.r_[np.ones(hits), np.zeros(n - hits)], PROBE_SHARE)
    biased = biased_if_not_half and not ci.ci_low <= 0.5 <= ci.ci_high
    return {"figure": name, "value": ci.mean, "ci_low": ci.ci_low, "ci_high": ci.ci_high, "n": n, "bias": biased}


def leaning(row: dict[str, Any], above: str, below: str) -> list[str]:
    """The bias a flagged share shows: `above` when it leans over 0.5, `below` under it; none when not flagged."""
    if not row["bias"]:
        return []
    return [above if row["value"] > 0.5 else below]


async def gather_verdicts(calls: list[Callable[[], Awaitable[Verdict | None]]], concurrency: int = 8) -> list[Verdict | None]:
    """Run verdict calls, at most `concurrency` at once, in order."""
    gate = asyncio.Semaphore(concurrency)

    async def bounded(call: Callable[[], Awaitable[Verdict | None]]) -> Verdict | None:
        async with gate:
            return await call()

    return list(await asyncio.gather(*(bounded(c) for c in calls)))


def _call(judge: Judge, pair: SuitePair, first: str, second: str) -> Callable[[], Awaitable[Verdict | None]]:
    return lambda: prefer(judge, pair, first, second)


async def repeat_probe(judge: Judge, pairs: Sequence[SuitePair], k: int = 3) -> ProbeResult:
    """k verdicts per pair: flip rate and the judge's agreement with itself."""
    flat = await gather_verdicts([_call(judge, p, *p.answers) for p in pairs for _ in range(k)])
    per_pair = [flat[i * k:(i + 1) * k] for i in range(len(pairs))]
    complete = [v for v in per_pair if None not in v]
    flips = sum(len(set(v)) > 1 for v in complete)
    agree = [a == b for v in complete for i, a in enumerate(v) for b in v[i + 1:]]
    flip = share_row(f"flip rate (verdicts differ over {k} repeats)", flips, len(complete), False)
    flip["bias"] = bool(complete) and flips / len(complete) > FLIP_LIMIT
    rows = [flip, share_row("self-agreement (pairs of repeats)", sum(agree), len(agree), False)]
    return ProbeResult("repeat", len(pairs), rows, ["flips between repeats"] if flip["bias"] else [],
                       errors=len(per_pair) - len(complete))


MIRROR: dict[str, str] = {"first": "second", "second": "first", "tie": "tie"}


async def position_probe(judge: Judge, pairs: Sequence[SuitePair]) -> ProbeResult:
    """Both orders of every pair: share of decided verdicts for the first-shown answer, and swap consistency."""
    calls = [c for p in pairs for c in (_call(judge, p, *p.answers), _call(judge, p, p.answers[1], p.answers[0]))]
    flat = await gather_verdicts(calls)
    both = [(flat[2 * i], flat[2 * i + 1]) for i in range(len(pairs))]
    complete = [(a, b) for a, b in both if a is not None and b is not None]
    decided = [v for a, b in complete for v in (a, b) if v != "tie"]
    rows = [share_row("prefers the answer shown first", decided.count("first"), len(decided), True),
            share_row("verdict follows the swap", sum(MIRROR[a] == b for a, b in complete), len(complete), False)]
    return ProbeResult("position", len(pairs), rows, leaning(rows[0], "prefers the answer shown first",
                                                             "prefers the answer shown second"),
                       errors=len(both) - len(complete))


async def length_probe(judge: Judge, pairs: Sequence[SuitePair]) -> ProbeResult:
    """Each side padded once with neutral text: share of decided verdicts for the padded answer, and verdict change."""
    calls = []
    for p in pairs:
        a, b = p.answers
        calls += [_call(judge, p, a, b), _call(judge, p, a + NEUTRAL_PADDING, b), _call(judge, p, a, b + NEUTRAL_PADDING)]
    flat = await gather_verdicts(calls)
    triples = [flat[3 * i:3 * i + 3] for i in range(len(pairs))]
    complete = [t for t in triples if None not in t]
    padded = [v == want for t in complete for v, want in ((t[1], "first"), (t[2], "second")) if v != "tie"]
    changed = sum(t[1] != t[0] or t[2] != t[0] for t in complete)
    rows = [share_row("prefers the padded answer", sum(padded), len(padded), True),
            share_row("verdict changed by padding", changed, len(complete), False)]
    return ProbeResult("length", len(pairs), rows, leaning(rows[0], "prefers the longer answer",
                                                           "penalises the longer answer"),
                       errors=len(triples) - len(complete))


async def language_probe(judge: Judge, pairs: Sequence[SuitePair]) -> ProbeResult:
    """The judge's verdicts against the human overall labels, per language (Cohen's kappa and agreement)."""
    verdicts = await gather_verdicts([_call(judge, p, *p.answers) for p in pairs])
    by_language: dict[str, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    code = {"first": -1, "tie": 0, "second": 1}  # the suite's sign: negative = model1 (shown first) better
    for pair, verdict in zip(pairs, verdicts, strict=True):
        if verdict is None:
            continue
        judge_side, human_side = by_language[pair.language]
        for label in pair.labels["overall"]:
            judge_side.append(code[verdict])
            human_side.append(direction(label))
    rows = []
    for language, (judge_side, human_side) in sorted(by_language.items()):
        k = stats.cohen_kappa(judge_side, human_side)
        rows.append({"figure": f"kappa with humans ({language})", "value": k.kappa, "agreement": k.agreement,
                     "ci_low": max(-1.0, k.ci_low), "ci_high": min(1.0, k.ci_high), "n": k.n, "bias": False})
    return ProbeResult("language", len(pairs), rows, [], errors=sum(v is None for v in verdicts))


async def run_probe(judge: Judge, probe: str, pairs: Sequence[SuitePair], k: int = 3) -> ProbeResult:
    """Run one probe by name."""
    if probe == "repeat":
        return await repeat_probe(judge, pairs, k)
    runners = {"position": position_probe, "length": length_probe, "language": language_probe}
    if probe not in runners:
        raise ValueError(f"unknown probe {probe!r}; probes: {', '.join(PROBES)}")
    return await runners[probe](judge, pairs)
