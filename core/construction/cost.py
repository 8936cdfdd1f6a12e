"""What a build's LLM steps would cost before it starts (calls x tokens x the model's prices, an upper bound), and the
spend while it runs: every call goes through the cached LLM client (a rebuild with the same inputs is answered from
the cache and pays nothing twice) and reserves its cost against the build's budget the way a run's calls do."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine

from core.construction.fact_checks import MAX_ATTEMPTS
from core.generation.providers.base import Completion, ModelConfig
from core.generation.tokens import count_tokens

if TYPE_CHECKING:
    from core.construction.build_lease import BuildLease

FUSION_CALLS = 3  # conflict re-check, untriggerable filter, quality score (fusion.fuse), plus one when augmenting
PROMPT_OVERHEAD_TOKENS = 350  # the fixed words of a construction prompt


@dataclass
class BuildEstimate:
    """Calls, input tokens and an upper-bound cost per model role (output at the model's max tokens)."""

    calls: int = 0
    input_tokens: int = 0
    max_output_tokens: int = 0
    max_cost_usd: float = 0.0
    per_role: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, role: str, config: ModelConfig, calls: int, input_tokens: int) -> None:
        """Add `calls` of `role` with `input_tokens` in all, at `config`'s prices."""
        if not calls:
            return
        output = calls * config.max_output_tokens
        cost = config.cost_usd(input_tokens, output)
        row = self.per_role.setdefault(role, {"model": config.name, "calls": 0, "input_tokens": 0, "max_cost_usd": 0.0})
        row["calls"] += calls
        row["input_tokens"] += input_tokens
        row["max_cost_usd"] = round(row["max_cost_usd"] + cost, 6)
        self.calls, self.input_tokens = self.calls + calls, self.input_tokens + input_tokens
        self.max_output_tokens += output
        self.max_cost_usd = round(self.max_cost_usd + cost, 6)

    def to_dict(self) -> dict:
        """Plain data for the build report."""
        return asdict(self)

    def summary(self) -> str:
        """One line: calls, tokens and the upper-bound cost, per role."""
        roles = "; ".join(f"{role} ({row['model']}): {int(row['calls'])} calls, ${row['max_cost_usd']:.4f}"
                          for role, row in self.per_role.items())
        return (f"estimate before the build: at most {self.calls} LLM calls, {self.input_tokens} input tokens, "
                f"${self.max_cost_usd:.4f} ({roles or 'no LLM step'}); calls an earlier build already made come "
                "from the cache and cost nothing")


def estimate_build(planned: Iterable[tuple[dict, str]], doc_tokens: dict[str, int], top_k: int, *,
                   fusion: ModelConfig | None = None, augment: bool = False, generator: ModelConfig | None = None,
                   judge: ModelConfig | None = None) -> BuildEstimate:
    """The upper bound of a build's LLM calls: fusion's calls per instance, and per conflict or gap every check and
    generator attempt it may need (MAX_ATTEMPTS writes, each checked)."""
    estimate = BuildEstimate()
    mean_doc = max(1, round(sum(doc_tokens.values()) / max(1, len(doc_tokens))))
    bundle = top_k * mean_doc + PROMPT_OVERHEAD_TOKENS
    counts = {"noisy": 0, "gap": 0, "conflict": 0}
    support_tokens = {"gap": 0, "conflict": 0}
    for q, mode in planned:
        counts[mode] += 1
        if mode in support_tokens:
            support = [doc_tokens.get(d, mean_doc) for d in q.get("supporting_doc_ids", [])[:1]] or [mean_doc]
            support_tokens[mode] += support[0] + PROMPT_OVERHEAD_TOKENS
    items = sum(counts.values())
    if fusion is not None:
        per = FUSION_CALLS + augment
        estimate.add("fusion", fusion, items * per, items * (per * PROMPT_OVERHEAD_TOKENS + (1 + augment) * bundle))
    if generator is not None:
        estimate.add("generator", generator, MAX_ATTEMPTS * (counts["conflict"] + counts["gap"]),
                     MAX_ATTEMPTS * (support_tokens["conflict"] + support_tokens["gap"]))
    if judge is not None:
        conflict_judge = MAX_ATTEMPTS * counts["conflict"]
        gap_judge = (1 + MAX_ATTEMPTS * (generator is not None)) * counts["gap"]
        estimate.add("judge", judge, conflict_judge + gap_judge,
                     conflict_judge * PROMPT_OVERHEAD_TOKENS + gap_judge * bundle)
    return estimate


def estimate_stress(evidence_tokens: list[int], *, reword: ModelConfig | None = None,
                    generator: ModelConfig | None = None, judge: ModelConfig | None = None,
                    attempts: int = MAX_ATTEMPTS) -> BuildEstimate:
    """The upper bound of a misleading-evidence build's LLM calls, one entry of `evidence_tokens` per open-QA item:
    a re-wording call each (without a generator), or `attempts` written edits each; a judge call per check."""
    estimate = BuildEstimate()
    items, tokens = len(evidence_tokens), sum(evidence_tokens) + PROMPT_OVERHEAD_TOKENS * len(evidence_tokens)
    if generator is not None:
        estimate.add("generator", generator, attempts * items, attempts * tokens)
    elif reword is not None:
        estimate.add("reword", reword, items, items * PROMPT_OVERHEAD_TOKENS)
    if judge is not None:
        checked = (1 + attempts * (generator is not None)) * items
        estimate.add("judge", judge, checked, checked * PROMPT_OVERHEAD_TOKENS + (checked // max(1, items)) * tokens)
    return estimate


@dataclass
class BuildSpend:
    """A build's LLM spend: calls answered by a provider, calls answered from the cache, dollars paid; with a budget,
    each call reserves its upper-bound cost first (LLMClient.complete's reserve) and is refused past the budget.
    Recorded (`record_build`), the spend lives where a run's does: in a `run` row of its own (config kind 'build'),
    reserved and paid with the runs' own statements, so the budget holds in the database and the spend is listed."""

    budget_usd: float | None = None
    calls: int = 0
    cached: int = 0
    paid_usd: float = 0.0
    reserved_usd: float = 0.0
    engine: Engine | None = field(default=None, repr=False, compare=False)
    run_id: int | None = None
    refused: int = 0  # calls the budget refused
    lease: BuildLease | None = field(default=None, repr=False, compare=False)  # a recorded build's ownership

    async def reserve(self, amount: float) -> None:
        """Reserve `amount` before a paid call; BudgetReached when the budget cannot cover it."""
        from core.generation.runner import BudgetReached  # the runs' refusal: a call past the budget is not sent

        refused = (not self._reserve_recorded(amount) if self.run_id is not None else
                   self.budget_usd is not None and self.paid_usd + self.reserved_usd + amount > self.budget_usd + 1e-9)
        if refused:
            self.refused += 1
            raise BudgetReached(f"the build's budget ${self.budget_usd:.4f} is spent (${self.paid_usd:.4f} paid); "
                                "a rebuild with the same inputs gets the answers already paid from the cache")
        self.reserved_usd += amount

    def _reserve_recorded(self, amount: float) -> bool:
        """Reserve on the build's run row as a run's executor does (within the budget, in one conditional update)."""
        from core.generation.runner import BUDGET_SLACK_USD, RUN_RESERVE, RUN_RESERVE_WITHIN

        assert self.engine is not None and self.run_id is not None
        with self.engine.begin() as conn:
            self._check_lease(conn)  # a build whose row was swept as interrupted sends nothing more
            if self.budget_usd is None:
                return bool(conn.execute(RUN_RESERVE, {"p_id": self.run_id, "p_amount": amount}).rowcount)
            return bool(conn.execute(RUN_RESERVE_WITHIN, {"p_id": self.run_id, "p_amount": amount,
                                                          "p_limit": self.budget_usd + BUDGET_SLACK_USD}).rowcount)

    def settle(self, completion: Completion, reserved: float) -> None:
        """Count one answered call (a cached one costs nothing) and release its reservation."""
        if completion.cached:
            self.cached += 1
            return
        self.calls += 1
        self.paid_usd = round(self.paid_usd + completion.cost_usd, 9)
        self.reserved_usd = max(0.0, self.reserved_usd - reserved)
        if self.run_id is not None and self.engine is not None:
            from core.generation.runner import RUN_SPEND

            with self.engine.begin() as conn:
                conn.execute(RUN_SPEND, {"p_id": self.run_id, "p_paid": completion.cost_usd, "p_released": reserved})

    @contextmanager
    def closing(self) -> Iterator[BuildSpend]:
        """The build inside: its run row closed after it, done (budget_stopped when the budget refused a call) or
        failed, the exception passed on; a recorded build's lease is renewed while it runs."""
        if self.lease is not None:
            self.lease.beat()
        try:
            yield self
        except Exception as exc:
            self.finish("budget_stopped" if self.refused else "failed", str(exc)[:500])
            raise
        self.finish("budget_stopped" if self.refused else "done")

    def _check_lease(self, conn: Any) -> None:
        """Inside a write: LeaseLost when the build's lease was taken over (its row swept as interrupted)."""
        if self.lease is not None:
            from core.store.leases import check_fences

            check_fences(conn, [self.lease.holding.fence])

    def finish(self, status: str = "done", message: str = "") -> None:
        """Close the build's run row: done, budget_stopped or failed, with the calls counted (nothing unrecorded),
        and release its lease; a row already swept as interrupted (its lease taken over) is left as it is."""
        if self.run_id is None or self.engine is None:
            return
        from sqlalchemy import update

        from core.generation.runner import RUNS
        from core.store.leases import LeaseLost
        from core.store.models import utc_now

        note = f"{self.calls} paid calls, {self.cached} from the cache" + (f"; {message}" if message else "")
        try:
            with self.engine.begin() as conn:
                self._check_lease(conn)
                conn.execute(update(RUNS).where(RUNS.c.id == self.run_id).values(
                    status=status, message=note, finished_at=utc_now(), reserved_usd=0.0))
        except LeaseLost:
            return
        finally:
            if self.lease is not None:
                self.lease.release()

    def to_dict(self) -> dict:
        """Plain data for the build report."""
        return {"calls": self.calls, "cached": self.cached, "paid_usd": round(self.paid_usd, 6),
                "budget_usd": self.budget_usd, "run_id": self.run_id}


def record_build(engine: Engine, name: str, budget_usd: float | None, config: dict[str, Any]) -> BuildSpend:
    """A BuildSpend recorded in a `run` row of its own (status running until `finish`), named 'build: <name>', owned
    by a lease taken first and renewed while the build runs; builds whose process died are marked failed first."""
    from sqlmodel import Session

    from core.construction.build_lease import BuildLease, sweep_interrupted_builds
    from core.generation.runs import BUILD_KIND, code_version
    from core.store.models import Run, utc_now

    sweep_interrupted_builds(engine)
    lease = BuildLease.take(engine)
    run = Run(name=f"build: {name}", status="running", config={"kind": BUILD_KIND, **config, "lease": lease.name},
              code_version=code_version(), budget_usd=budget_usd, started_at=utc_now())
    with Session(engine) as session:
        session.add(run)
        session.commit()
        run_id = run.id
    return BuildSpend(budget_usd, engine=engine, run_id=run_id, lease=lease)


def text_tokens(texts: dict[str, str]) -> dict[str, int]:
    """Tokens of each document's text (the count the budget uses)."""
    return {key: count_tokens(text) for key, text in texts.items()}


def model_complete_json(engine: Engine, config: ModelConfig, spend: BuildSpend | None = None) -> Callable[[str], dict]:
    """A `complete_json(prompt) -> dict` on `config` through the cached, retried LLM client; with `spend`, each paid
    call reserves its cost against the build's budget first and is counted."""
    from core.generation.llm import make_client
    from core.generation.providers.base import ChatMessage
    from core.scoring.judges.parsing import extract_json_object

    client = make_client(config, engine)
    loop = asyncio.new_event_loop()  # one loop for every call: the provider's async HTTP client is bound to it

    def complete_json(prompt: str) -> dict:
        messages = [ChatMessage(role="user", content=prompt)]
        reserve = spend.reserve if spend is not None else None
        completion = loop.run_until_complete(client.complete(messages, purpose="build:construction", reserve=reserve))
        if spend is not None:
            spend.settle(completion, client.max_cost(messages))
        return extract_json_object(completion.text) or {}

    return complete_json
