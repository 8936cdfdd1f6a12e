"""Scoring a run: the metrics of each instance's protocol per response, stored as Verdict rows (idempotent).

A protocol scored constraint by constraint (EnterpriseRAG): rule checks, judged constraints and the judged metrics its
declaration names per mode. Reference protocols (reference_qa): the
reference metrics of core.scoring.reference plus the judge's correctness and consistency (long answers only).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, Field
from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from core.generation.reasoning import UNFINISHED_REASON, split_reasoning
from core.metrics import DECLARATIONS, MetricDeclaration, concerns
from core.protocols import DEFAULT_PROTOCOL, Protocol, get_protocol
from core.scoring.benchmarks import BENCHMARK_METRICS, BenchmarkItem, benchmark_metric, benchmark_override
from core.scoring.calls import JudgeCalls
from core.scoring.checkers.guard import RegexPass
from core.scoring.judges.base import (
    ConstraintMode,
    ConstraintOutcome,
    ConstraintView,
    ContextClaimsOutcome,
    DocumentView,
    Judge,
    JudgeInput,
    MetricOutcome,
    precondition_triggered,
)
from core.scoring.judges.registry import METRICS, REFERENCE_JUDGE_METRICS, MetricSpec, resolve_judge
from core.scoring.judges.text import snippet
from core.scoring.reference import REFERENCE_METRICS, reference_metric
from core.store.db import table_of
from core.store.leases import Fence, LeaseLost, check_fences
from core.store.models import Constraint, ContextClaims, Document, Instance, Response, Run, Verdict, utc_now
from core.store.schema import ReferenceSpec
from core.store.writes import GroupWriter

RULE_JUDGE = "rule"

RAG_METRICS = ("faithfulness", "coverage")  # judged against the documents alone: any protocol may declare them
RESPONSES_PER_CALL_SLOT = 2  # responses scored at once per call slot: enough queued work to keep every slot busy
SAVE_EVERY_S = 0.05  # verdicts of the responses finished within this window are written together
LOAD_CHUNK = 256  # responses read (with their instances, documents, constraints, verdicts) per query batch
DEFAULT_CONCURRENCY = 16  # judge calls in flight (RAGAS' default max_workers is 16 too)
T = TypeVar("T")
VerdictKey = tuple[int, str, str, int | None]
CLAIMS = table_of(ContextClaims)
log = logging.getLogger("gauntlet.scorer")


class ScoreReport(BaseModel):
    """What one scoring pass did: verdicts written and skipped, errors, judge calls and cost per metric."""

    run_id: int
    judge: str
    constraint_mode: str
    responses: int = 0
    verdicts_written: int = 0
    verdicts_skipped: int = 0
    errors: dict[str, int] = Field(default_factory=dict)
    not_applicable: dict[str, int] = Field(default_factory=dict)
    unparseable: dict[str, int] = Field(default_factory=dict)  # answers that could not be read (e.g. no MCQ letter)
    calls: dict[str, int] = Field(default_factory=dict)
    cost_usd: float = 0.0
    context_claims_extracted: int = 0
    context_claims_reused: int = 0
    seconds: float = 0.0

    @property
    def total_calls(self) -> int:
        """All judge calls made in this pass."""
        return sum(self.calls.values())


async def ready(value: T) -> T:
    """`value`, as an awaitable (to gather with calls that are made)."""
    return value


def precondition_outcome(c: ConstraintView, mode: str) -> ConstraintOutcome:
    """A conditional constraint whose precondition the instance's mode does not trigger is satisfied."""
    return ConstraintOutcome(
        cid=c.cid, passed=True, method="precondition",
        reason=f"precondition '{c.precondition}' not triggered by a {mode} instance: automatically satisfied",
    )


def rule_outcome(c: ConstraintView, response: str, loose: bool = False) -> ConstraintOutcome:
    """Run the constraint's rule checker (strict; with `loose`, IFEval's loose verdict too, in details["loose"]); a
    missing or failing checker is a recorded error."""
    try:
        from core.scoring.checkers import build_checker  # lazy: checkers are a sibling package

        checker = build_checker(c.checker_id or "", c.checker_kwargs)
        passed = bool(checker.check(response))
        details = {"loose": bool(checker.check_loose(response))} if loose else {}
    except Exception as exc:  # noqa: BLE001 - any checker failure becomes an error verdict, never a silent "no"
        return ConstraintOutcome(cid=c.cid, status="error", method="rule",
                                 reason=f"rule checker {c.checker_id!r} failed: {type(exc).__name__}: {snippet(str(exc))}")
    return ConstraintOutcome(cid=c.cid, passed=passed, method="rule", details=details,
                             reason=f"rule {c.checker_id} {'satisfied' if passed else 'violated'}")


def unfinished_outcome(metric: str) -> MetricOutcome:
    """A metric of a response whose reasoning never finished: unparseable (no answer), its value the metric's worst
    (where the declaration counts an unreadable answer as wrong, it enters the mean as such), reason 'reasoning not
    finished'."""
    declared = DECLARATIONS.get(metric) if metric in DECLARATIONS else None
    worst = None if declared is None else declared.range[0] if declared.higher_is_better else declared.range[1]
    value = worst if worst is not None and math.isfinite(worst) else None
    return MetricOutcome(status="unparseable", value=value, passed=False if value is not None else None,
                         method="reasoning", reason=UNFINISHED_REASON, details={"reasoning": "unfinished"})


def answer_of(resp: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """A loaded response with its text the answer alone (any reasoning block still inside a stored or imported text
    kept apart) and whether its reasoning never finished (no answer to read)."""
    split = split_reasoning(resp.get("text"), resp.get("reasoning"))
    unfinished = split.unfinished or resp.get("reasoning_state") == "unfinished"
    return {**resp, "text": split.answer}, unfinished


def not_a_verdict(exc: Exception) -> None:
    """Re-raise what must stop the scoring pass rather than become an error verdict: the scoring lease was taken over
    or lapsed (LeaseLost), so no further judge call may be sent."""
    if isinstance(exc, LeaseLost):
        raise exc


def crash_outcome(exc: Exception, **accounting: Any) -> MetricOutcome:
    """An error outcome for a metric whose computation raised (recorded and counted, never silent); LeaseLost stops
    the pass instead."""
    not_a_verdict(exc)
    return MetricOutcome(status="error", reason=f"judge failed: {type(exc).__name__}: {snippet(str(exc))}", **accounting)


def constraint_verdict(base: dict[str, Any], c: ConstraintView, judge: str, o: ConstraintOutcome) -> Verdict:
    """A Verdict row for one constraint outcome."""
    value = None if o.passed is None or o.status != "ok" else float(o.passed)
    return Verdict(**base, judge=judge, metric="constraint", constraint_id=c.id, status=o.status, passed=o.passed,
                   value=value, method=o.method, reason=o.reason, details={"cid": c.cid, **o.details},
                   calls=o.calls, cost_usd=o.cost_usd)


def metric_verdict(base: dict[str, Any], metric: str, judge: str, o: MetricOutcome) -> Verdict:
    """A Verdict row for one metric outcome."""
    return Verdict(**base, judge=judge, metric=metric, status=o.status, passed=o.passed, value=o.value,
                   method=o.method, reason=o.reason, details=o.details, calls=o.calls, cost_usd=o.cost_usd)


class _Loaded(BaseModel):
    """Everything a chunk of the pass's responses needs, read in a handful of queries (released when it is scored)."""

    responses: list[dict[str, Any]]
    instances: dict[int, dict[str, Any]]
    constraints: dict[int, list[ConstraintView]]
    documents: dict[int, list[DocumentView]]
    existing: set[VerdictKey]
    claims: dict[int, ContextClaimsOutcome]


def done_response_ids(engine: Engine, run_id: int) -> list[int]:
    """Ids of the run's done responses, in id order."""
    with Session(engine) as s:
        rows = s.exec(select(Response.id).where(Response.run_id == run_id, Response.status == "done")
                      .order_by(col(Response.id)))
        return [rid for rid in rows if rid is not None]


def load_chunk(engine: Engine, run_id: int, judge: str, response_ids: list[int]) -> _Loaded:
    """These responses with their instances, constraints, documents, existing verdicts and stored claims."""
    with Session(engine) as s:
        responses = [r.model_dump() for r in s.exec(select(Response).where(col(Response.id).in_(response_ids))
                                                    .order_by(col(Response.id)))]
        ids = sorted({r["instance_id"] for r in responses})
        instances = {i.id: i.model_dump() for i in s.exec(select(Instance).where(col(Instance.id).in_(ids)))}
        constraints: dict[int, list[ConstraintView]] = {i: [] for i in ids}
        for c in s.exec(select(Constraint).where(col(Constraint.instance_id).in_(ids)).order_by(col(Constraint.position))):
            constraints[c.instance_id].append(ConstraintView.model_validate(c.model_dump()))
        documents: dict[int, list[DocumentView]] = {i: [] for i in ids}
        for d in s.exec(select(Document).where(col(Document.instance_id).in_(ids)).order_by(col(Document.position))):
            documents[d.instance_id].append(DocumentView.model_validate(d.model_dump()))
        rows = s.exec(select(Verdict.response_id, Verdict.metric, Verdict.judge, Verdict.constraint_id)
                      .where(Verdict.run_id == run_id, col(Verdict.judge).in_([judge, RULE_JUDGE]),
                             col(Verdict.response_id).in_(response_ids))).all()
        claims = {
            cc.instance_id: ContextClaimsOutcome(core=cc.core, supplementary=cc.supplementary, calls=cc.calls)
            for cc in s.exec(select(ContextClaims).where(ContextClaims.judge == judge, ContextClaims.status == "ok",
                                                         col(ContextClaims.instance_id).in_(ids)))
        }
    return _Loaded(responses=responses, instances=instances, constraints=constraints, documents=documents,
                   existing={tuple(r) for r in rows}, claims=claims)


def stored_context_claims(engine: Engine, instance_id: int, judge: str) -> ContextClaimsOutcome | None:
    """The good claims of (instance, judge) a scorer stored already, if any (one small read)."""
    where = (CLAIMS.c.instance_id == instance_id) & (CLAIMS.c.judge == judge) & (CLAIMS.c.status == "ok")
    with engine.connect() as conn:
        stored = conn.execute(select(CLAIMS.c.core, CLAIMS.c.supplementary, CLAIMS.c.calls).where(where)).first()
    return None if stored is None else ContextClaimsOutcome(core=stored.core, supplementary=stored.supplementary,
                                                             calls=stored.calls)


def store_context_claims(engine: Engine, instance_id: int, judge: str, out: ContextClaimsOutcome) -> ContextClaimsOutcome:
    """Insert the claims of (instance, judge), or reuse good ones another scorer stored first (a stored error is
    replaced); the claims in force."""
    from core.store.db import insert_ignore_statement

    values = {"instance_id": instance_id, "judge": judge, "status": out.status, "core": out.core,
              "supplementary": out.supplementary, "error": out.error, "calls": out.calls, "created_at": utc_now()}
    where = (CLAIMS.c.instance_id == instance_id) & (CLAIMS.c.judge == judge)
    with engine.begin() as conn:
        if conn.execute(insert_ignore_statement(engine, CLAIMS).values(**values)).rowcount == 1:
            return out
        stored = conn.execute(CLAIMS.select().where(where)).first()
        if stored is not None and stored.status == "ok":
            return ContextClaimsOutcome(core=stored.core, supplementary=stored.supplementary, calls=stored.calls)
        conn.execute(update(CLAIMS).where(where).values(**{k: v for k, v in values.items() if k != "created_at"}))
    return out


class _Scorer:
    """One scoring pass over a run with one judge, its responses read in chunks as call slots free up and each
    response's verdicts written and released as it finishes (memory stays flat whatever the run's size)."""

    def __init__(self, engine: Engine, run_id: int, judge: Judge, mode: ConstraintMode, concurrency: int) -> None:
        self.engine, self.run_id, self.mode = engine, run_id, mode
        bind = getattr(judge, "with_client", None)
        self.judge = bind(JudgeCalls(judge.client, concurrency)) if bind else judge  # type: ignore[attr-defined]
        self.window = asyncio.Semaphore(RESPONSES_PER_CALL_SLOT * max(1, concurrency))
        self.response_ids = done_response_ids(engine, run_id)
        self.claims: dict[int, ContextClaimsOutcome] = {}  # of the instances with a response loaded and not finished
        self.claim_locks: dict[int, asyncio.Lock] = {}
        self.live: Counter[int] = Counter()  # responses loaded and not finished, per instance
        self.report = ScoreReport(run_id=run_id, judge=judge.name, constraint_mode=mode, responses=len(self.response_ids))
        self.counts: dict[str, Counter] = {"errors": Counter(), "na": Counter(), "unparseable": Counter(),
                                           "calls": Counter()}
        self.regexes = RegexPass()  # one regex time budget per response; a pattern that ran over is not retried
        self.fences: list[Fence] = []  # the scoring lease's (set by _owned): every verdict write checks it
        self.tasks: set[asyncio.Task[list[Verdict]]] = set()  # responses being scored

    def has(self, chunk: _Loaded, key: VerdictKey) -> bool:
        if key in chunk.existing:
            self.report.verdicts_skipped += 1
            return True
        return False

    async def context_claims(self, item: JudgeInput) -> tuple[ContextClaimsOutcome, bool]:
        """Claims of the item's instance: stored/reused if present, else extracted once and stored."""
        iid = item.instance_id or 0
        async with self.claim_locks.setdefault(iid, asyncio.Lock()):
            if iid not in self.claims:  # stored by a response that finished before this chunk's read saw them?
                stored = stored_context_claims(self.engine, iid, self.judge.name)
                if stored is not None:
                    self.claims[iid] = stored
            if iid in self.claims:
                self.report.context_claims_reused += 1
                return self.claims[iid], False
            out = await self.judge.context_claims(item)
            kept = store_context_claims(self.engine, iid, self.judge.name, out)
            out = out if kept is out else kept.model_copy(update={"calls": out.calls, "cost_usd": out.cost_usd})
            self.report.context_claims_extracted += 1
            if out.status == "ok":
                self.claims[iid] = out
            return out, True

    async def metric(self, spec: MetricSpec, item: JudgeInput) -> MetricOutcome:
        """Compute one metric; a crash or failed claim extraction becomes an error outcome."""
        claims, fresh = (await self.context_claims(item)) if spec.needs_context_claims else (None, False)
        extra = {"calls": claims.calls, "cost_usd": claims.cost_usd} if claims and fresh else {"calls": 0, "cost_usd": 0.0}
        if claims is not None and claims.status == "error":
            return MetricOutcome(status="error", reason=f"context claim extraction failed: {claims.error}", **extra)
        try:
            out = await spec.compute(self.judge, item, claims)
        except Exception as exc:  # noqa: BLE001 - recorded, never silent
            return crash_outcome(exc, **extra)
        if claims is not None:
            out.details = {**out.details, "context_claims_reused": not fresh, "context_claims_calls": extra["calls"]}
        return out.model_copy(update={"calls": out.calls + extra["calls"], "cost_usd": out.cost_usd + extra["cost_usd"]})

    async def constraints(self, chunk: _Loaded, rid: int, item: JudgeInput, base: dict[str, Any],
                          loose: bool = False, unfinished: bool = False) -> list[Verdict]:
        """Rule verdicts (judge 'rule', with IFEval's loose verdict when `loose`) and judged verdicts for the
        constraints not yet scored."""
        out: list[Verdict] = []
        name = self.judge.name
        to_judge: list[ConstraintView] = []
        with self.regexes.response(f"response {rid}"):
            for c in chunk.constraints[item.instance_id or 0]:
                judge = RULE_JUDGE if c.judge_method == "rule" else name
                if self.has(chunk, (rid, "constraint", judge, c.id)):
                    continue
                if unfinished:
                    out.append(constraint_verdict(base, c, judge, ConstraintOutcome(
                        cid=c.cid, status="unparseable", method="reasoning", reason=UNFINISHED_REASON)))
                elif not precondition_triggered(c.precondition, item.mode):
                    out.append(constraint_verdict(base, c, judge, precondition_outcome(c, item.mode)))
                elif c.judge_method == "rule":
                    out.append(constraint_verdict(base, c, judge, rule_outcome(c, item.response, loose)))
                else:
                    to_judge.append(c)
        if to_judge:
            try:
                outcomes = await self.judge.judge_constraints(item, to_judge, self.mode)
            except Exception as exc:  # noqa: BLE001 - recorded, never silent
                not_a_verdict(exc)
                why = f"judge failed: {type(exc).__name__}: {snippet(str(exc))}"
                outcomes = [ConstraintOutcome(cid=c.cid, status="error", reason=why, method=self.mode) for c in to_judge]
            out += [constraint_verdict(base, c, name, o) for c, o in zip(to_judge, outcomes, strict=True)]
        return out

    async def score_response(self, chunk: _Loaded, resp: dict[str, Any]) -> list[Verdict]:
        """All missing verdicts of one response, with the metrics of its instance's protocol, read on its answer alone
        (reasoning kept apart: `answer_of`); reasoning that never finished is no answer, so every verdict of it is
        unparseable with reason 'reasoning not finished' (its window slot, taken by the feeder, is freed when it
        finishes)."""
        try:
            resp, unfinished = answer_of(resp)
            inst = chunk.instances[resp["instance_id"]]
            protocol = get_protocol(inst.get("protocol") or DEFAULT_PROTOCOL)
            if protocol.response_scoring == "constraints":
                return await self.constraints_response(chunk, resp, inst, protocol, unfinished)
            return await self.protocol_response(chunk, resp, inst, protocol.metrics, unfinished)
        finally:
            self.window.release()
            self.forget(resp["instance_id"])

    def forget(self, iid: int) -> None:
        """One response of instance `iid` finished: its claims and lock go with the instance's last loaded response."""
        self.live[iid] -= 1
        if self.live[iid] <= 0:
            del self.live[iid]
            self.claims.pop(iid, None)
            self.claim_locks.pop(iid, None)

    async def feed(self, finished: asyncio.Queue[asyncio.Task[list[Verdict]]]) -> None:
        """Start every response's scoring in id order, at most the window's number unfinished, reading them in
        chunks; each finished task goes to `finished`."""
        for start in range(0, len(self.response_ids), LOAD_CHUNK):
            ids = self.response_ids[start : start + LOAD_CHUNK]
            chunk = await asyncio.to_thread(load_chunk, self.engine, self.run_id, self.judge.name, ids)
            for iid, claims in chunk.claims.items():
                self.claims.setdefault(iid, claims)
            self.live.update(r["instance_id"] for r in chunk.responses)
            for resp in chunk.responses:
                await self.window.acquire()
                task = asyncio.create_task(self.score_response(chunk, resp))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
                task.add_done_callback(finished.put_nowait)

    async def constraints_response(self, chunk: _Loaded, resp: dict[str, Any], inst: dict[str, Any],
                                   protocol: Protocol, unfinished: bool = False) -> list[Verdict]:
        """A protocol scored constraint by constraint (EnterpriseRAG): rule and judged constraints, then the judged
        metrics its declaration computes in the instance's mode (`Protocol.metric_modes`)."""
        item = JudgeInput(query=inst["query"], mode=inst["mode"], documents=chunk.documents[inst["id"]],
                          response=resp["text"] or "", instance_id=inst["id"])
        base = {"response_id": resp["id"], "run_id": self.run_id}
        metrics: dict[str, Awaitable[MetricOutcome]] = {}
        for scope in sorted(protocol.metric_modes, key=lambda s: s.metric):
            name = scope.metric
            if self.has(chunk, (resp["id"], name, self.judge.name, None)):
                continue
            if item.mode in scope.modes:
                metrics[name] = ready(unfinished_outcome(name)) if unfinished else self.metric(METRICS.get(name), item)
            elif scope.outside:
                metrics[name] = ready(MetricOutcome(status="not_applicable", reason=scope.outside))
        return await self.together(chunk, resp["id"], item, base, True, metrics, unfinished=unfinished)

    async def together(self, chunk: _Loaded, rid: int, item: JudgeInput, base: dict[str, Any], constraints: bool,
                       metrics: Mapping[str, Awaitable[MetricOutcome]], loose: bool = False,
                       unfinished: bool = False) -> list[Verdict]:
        """The constraint verdicts (if asked; IFEval's loose rule verdicts too when `loose`; all unparseable when the
        reasoning never finished) and `metrics`' verdicts of one response, their calls made concurrently; verdicts in
        the same order as one after another."""
        judged, outcomes = await asyncio.gather(
            self.constraints(chunk, rid, item, base, loose, unfinished) if constraints else ready([]),
            asyncio.gather(*metrics.values()))
        return judged + [metric_verdict(base, n, self.judge.name, o) for n, o in zip(metrics, outcomes, strict=True)]

    async def protocol_response(self, chunk: _Loaded, resp: dict[str, Any], inst: dict[str, Any],
                                metrics: tuple[str, ...], unfinished: bool = False) -> list[Verdict]:
        """Other protocols: every metric the protocol declares (its constraints when it lists 'constraint', rule ones
        with IFEval's loose verdict too; reference metrics and judged ones like correctness against the instance's
        reference)."""
        ref = ReferenceSpec.model_validate(inst["reference"]) if inst.get("reference") else None
        item = JudgeInput(query=inst["query"], mode=inst["mode"] or "", documents=chunk.documents[inst["id"]],
                          response=resp["text"] or "", instance_id=inst["id"], reference=ref, language=inst.get("language"),
                          uid=inst.get("uid") or "", attributes=inst.get("attributes") or {},
                          doc_roles=(resp.get("prompt_meta") or {}).get("doc_roles") or [],
                          prompt_meta=resp.get("prompt_meta") or {})
        base = {"response_id": resp["id"], "run_id": self.run_id}
        outcomes = {name: ready(unfinished_outcome(name)) if unfinished else self.rag_or_reference_outcome(name, item)
                    for name in metrics if name != "constraint" and concerns(name, item.uid)
                    and not self.has(chunk, (resp["id"], name, self.judge.name, None))}
        return await self.together(chunk, resp["id"], item, base, "constraint" in metrics, outcomes, loose=True,
                                   unfinished=unfinished)

    def rag_or_reference_outcome(self, name: str, item: JudgeInput) -> Awaitable[MetricOutcome]:
        """A metric whose declaration brings its computation (a protocol package's own), a reference-free RAG
        metric (faithfulness, coverage: no reference needed, whatever the mode) or a reference metric."""
        declared = DECLARATIONS.get(name) if name in DECLARATIONS else None
        if declared is not None and declared.computes_itself:
            return self.declared_outcome(declared, item)
        if name in RAG_METRICS:
            return self.metric(METRICS.get(name), item)
        return self.reference_outcome(name, item)

    async def declared_outcome(self, declared: MetricDeclaration, item: JudgeInput) -> MetricOutcome:
        """A metric computed as its declaration says: lexically against the reference (none: not applicable), or
        by this pass's judge; a crash is an error outcome."""
        try:
            if (judged := declared.judged_compute()) is not None:
                return await judged(self.judge, item)
            if item.reference is None or (compute := declared.lexical_compute()) is None:
                return MetricOutcome(status="not_applicable", reason="the instance has no reference")
            return compute(item.reference, item.response, item.language)
        except Exception as exc:  # noqa: BLE001 - recorded, never silent
            return crash_outcome(exc)

    async def reference_outcome(self, name: str, item: JudgeInput) -> MetricOutcome:
        """A reference metric (pure, core.scoring.reference), a benchmark's own measure (core.scoring.benchmarks) or a
        judged one (correctness, consistency) of one response."""
        if item.reference is None:
            return MetricOutcome(status="not_applicable", reason="the instance has no reference")
        bench = BenchmarkItem(item.reference, item.response, item.language, item.uid, item.attributes,
                              tuple(item.doc_roles))
        judged = REFERENCE_JUDGE_METRICS.get(name) if name not in (*REFERENCE_METRICS, *BENCHMARK_METRICS) else None
        if judged is not None and item.reference.answer_type not in judged.answer_types:
            return MetricOutcome(status="not_applicable", reason=judged.not_applicable_reason)
        try:
            if name in BENCHMARK_METRICS:
                return benchmark_metric(name, bench)
            if judged is None:
                return benchmark_override(name, bench) or reference_metric(name, item.reference, item.response,
                                                                           item.language)
            return await judged.compute(self.judge, item)
        except Exception as exc:  # noqa: BLE001 - recorded, never silent
            return crash_outcome(exc)

    def save(self, verdicts: list[Verdict]) -> None:
        """Store the verdicts not already stored (another scorer may have stored some since this pass loaded)."""
        if not verdicts:
            return
        with Session(self.engine, expire_on_commit=False) as s:
            # take the write lock first (a no-op update of the run row), so the check below sees every commit
            s.exec(update(Run).where(col(Run.id) == self.run_id).values(heartbeat_at=Run.heartbeat_at))
            check_fences(s.connection(), self.fences)  # taken over: LeaseLost, nothing stored
            present = {tuple(r) for r in s.exec(
                select(Verdict.response_id, Verdict.metric, Verdict.judge, Verdict.constraint_id)
                .where(Verdict.run_id == self.run_id, col(Verdict.judge).in_([self.judge.name, RULE_JUDGE]),
                       col(Verdict.response_id).in_({v.response_id for v in verdicts})))}
            fresh = [v for v in verdicts if (v.response_id, v.metric, v.judge, v.constraint_id) not in present]
            s.add_all(fresh)
            s.commit()
        self.report.verdicts_skipped += len(verdicts) - len(fresh)
        for v in fresh:
            self.report.verdicts_written += 1
            self.report.cost_usd += v.cost_usd
            if v.calls:
                self.counts["calls"][v.metric] += v.calls
            if v.status == "error":
                self.counts["errors"][v.metric] += 1
            elif v.status == "not_applicable":
                self.counts["na"][v.metric] += 1
            elif v.status == "unparseable":
                self.counts["unparseable"][v.metric] += 1

    async def run(self, progress: Callable[[int, int], None] | None) -> ScoreReport:
        started = time.perf_counter()
        total = len(self.response_ids)
        finished: asyncio.Queue[asyncio.Task[Any]] = asyncio.Queue()
        feeder = asyncio.create_task(self.feed(finished))
        feeder.add_done_callback(lambda task: report_failure(task, finished))
        try:
            await self._collect(finished, total, progress)
        except BaseException:
            await self._abandon(feeder, finished)
            raise
        await feeder
        self.report.errors = dict(self.counts["errors"])
        self.report.not_applicable = dict(self.counts["na"])
        self.report.unparseable = dict(self.counts["unparseable"])
        self.report.calls = dict(self.counts["calls"])
        self.report.seconds = round(time.perf_counter() - started, 3)
        return self.report

    async def _collect(self, finished: asyncio.Queue[asyncio.Task[Any]], total: int,
                       progress: Callable[[int, int], None] | None) -> None:
        """Save the verdicts of the responses as they finish (a failed response or feeder raises here)."""
        done = 0
        while done < total:
            batch = [await finished.get()]
            await asyncio.sleep(SAVE_EVERY_S)  # the responses finishing meanwhile join this write
            while not finished.empty():
                batch.append(finished.get_nowait())
            for task in batch:
                task.exception()  # every failure of the batch is read; the first is raised below
            self.save([v for task in batch for v in task.result()])  # a failed feeder raises here
            finished_now = len(batch)
            del batch  # the saved verdicts go now, not with the next batch
            for _ in range(finished_now):
                done += 1
                if progress:
                    progress(done, total)

    async def _abandon(self, feeder: asyncio.Task[None], finished: asyncio.Queue[asyncio.Task[Any]]) -> None:
        """The pass stops (e.g. its lease was lost): cancel the feeder and every response still being scored, and
        take the outcomes of those that finished, so nothing is left running or unread."""
        pending = [feeder, *self.tasks]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        while not finished.empty():
            task = finished.get_nowait()
            if not task.cancelled():
                task.exception()


def report_failure(task: asyncio.Task[Any], finished: asyncio.Queue[asyncio.Task[Any]]) -> None:
    """A task that failed joins `finished`, so whoever reads its result there meets its error."""
    if not task.cancelled() and task.exception() is not None:
        finished.put_nowait(task)


def judge_mode(judge: Judge, requested: ConstraintMode) -> ConstraintMode:
    """The constraint mode a judge works in: its own when it has one (its id says it), else the requested one."""
    return getattr(judge, "constraint_mode", requested)


def score_lease(run_id: int, judge: str) -> str:
    """The lease name of scoring run `run_id` with `judge`."""
    return f"score:{run_id}:{judge}"


async def _owned(engine: Engine, run_id: int, judge: Judge, scorer: Callable[[], _Scorer],
                 progress: Callable[[int, int], None] | None) -> ScoreReport:
    """Score under the (run, judge) lease: a second scorer of the same judge waits for the first, then skips what
    it stored (idempotent); the lease is renewed while scoring. Every judge call checks the lease first, as a run's
    generation calls do (its fence, and its deadline on the database's clock: taken over or lapsed past a TTL
    without renewal, LeaseLost and the call is not sent), and so does every verdict write."""
    from core.store.leases import LeaseHeld, lease_ttl, release_lease, renew_lease, take_lease

    name = score_lease(run_id, judge.name)
    try:
        holding = await asyncio.to_thread(take_lease, engine, name, "gauntlet score")
    except LeaseHeld as held:
        log.warning("%s; waiting for it", held)
        holding = await asyncio.to_thread(take_lease, engine, name, "gauntlet score", wait_s=float("inf"))
    fences = [holding.fence]
    writer = getattr(getattr(judge, "client", None), "writer", None)
    if isinstance(writer, GroupWriter):
        writer.guard = lambda conn: check_fences(conn, fences)

    async def renew() -> None:
        while True:
            await asyncio.sleep(lease_ttl() / 3)
            await asyncio.to_thread(_renew, engine, holding, renew_lease)

    renewer = asyncio.create_task(renew())
    try:
        pass_ = scorer()
        pass_.fences = fences
        return await pass_.run(progress)
    finally:
        renewer.cancel()
        if isinstance(writer, GroupWriter):
            writer.guard = None
        await asyncio.to_thread(release_lease, engine, holding)


def _renew(engine: Engine, holding: Any, renew_lease: Callable[..., bool]) -> None:
    try:
        with engine.begin() as conn:
            renew_lease(conn, holding)
    except Exception as error:  # noqa: BLE001 - a missed renewal only risks a duplicate judge call, never a duplicate verdict
        log.warning("scoring lease not renewed: %s", str(error).splitlines()[0])


def check_run(engine: Engine, run_id: int) -> None:
    """ValueError when there is no run `run_id`."""
    with Session(engine) as s:
        if s.get(Run, run_id) is None:
            raise ValueError(f"no run with id {run_id}")


async def score_run(
    engine: Engine,
    run_id: int,
    judge: str | Judge,
    *,
    concurrency: int | None = None,
    constraint_mode: str = "batched",
    progress: Callable[[int, int], None] | None = None,
) -> ScoreReport:
    """Score every done response of a run with rule checks plus `judge`, at most `concurrency` judge calls in
    flight (default DEFAULT_CONCURRENCY; the independent calls of a response made at once); idempotent.

    `judge` is 'heuristic', 'llm:<Model.name>' (judged in `constraint_mode`), 'llm:<Model.name>@single' (always
    single) or a judge object (switched to `constraint_mode` when it has modes). The judge's name, which carries
    the mode, is the stored judge id: 'llm:X' for batched and 'llm:X@single' for single verdicts.
    """
    if constraint_mode not in ("single", "batched"):
        raise ValueError(f"constraint_mode must be 'single' or 'batched', not {constraint_mode!r}")
    mode: ConstraintMode = "single" if constraint_mode == "single" else "batched"
    check_run(engine, run_id)
    concurrency = concurrency or DEFAULT_CONCURRENCY
    if not isinstance(judge, str):
        with_mode = getattr(judge, "with_mode", None)
        judge = with_mode(mode) if with_mode else judge
        return await _owned(engine, run_id, judge, lambda: _Scorer(
            engine, run_id, judge, judge_mode(judge, mode), concurrency), progress)
    judge_obj = resolve_judge(judge, engine, mode, max_connections=concurrency)
    try:
        return await _owned(engine, run_id, judge_obj, lambda: _Scorer(
            engine, run_id, judge_obj, judge_mode(judge_obj, mode), concurrency), progress)
    finally:
        close = getattr(judge_obj, "aclose", None)
        if close is not None:
            await close()
