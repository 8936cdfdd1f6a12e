"""Authorised builds of a protocol's benchmark file, as the app runs them: the build its package declares
(`Protocol.builder`, the same core builder its `gauntlet <protocol> build` command calls), after re-checking the admin's
role (build_benchmark)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from core.construction.cost import BuildEstimate, model_complete_json, record_build
from core.construction.fact_checks import Assist
from core.protocols import PROTOCOLS, get_protocol
from core.protocols.base import Builder, BuildResult
from core.protocols.progress import Progress
from core.review.auth import Principal, authorize
from core.services.benchmarks import named_config


def builders() -> dict[str, Builder]:
    """Every registered protocol that declares a builder, by id (sorted)."""
    return {name: b for name in PROTOCOLS.names() if (b := PROTOCOLS.get(name).builder) is not None}


def build_tabs() -> dict[str, str]:
    """The Build benchmark tabs, protocol id to tab label: those declaring their own build tab (`Protocol.build_panel`)
    first, then those declaring a builder, each by id."""
    panels = {name: p.tab for name in PROTOCOLS.names() if (p := PROTOCOLS.get(name).build_panel) is not None}
    return {**panels, **{name: b.tab for name, b in builders().items() if name not in panels}}


def _builder(protocol: str) -> Builder:
    builder = get_protocol(protocol).builder
    if builder is None:
        raise KeyError(f"protocol {protocol!r} declares no builder; these do: {', '.join(builders())}")
    return builder


def estimate_protocol(engine: Engine, principal: Principal | None, protocol: str, source: Path, *, fmt: str = "",
                      limit: int | None = None, generator: str | None = None,
                      judge: str | None = None) -> BuildEstimate:
    """An admin's upper-bound LLM cost of a protocol build with `generator` (and `judge`, else the generator), before
    it starts (re-checked: build_benchmark); the same computation as the protocol's `--estimate`."""
    authorize(engine, principal, "build_benchmark")
    return _builder(protocol).estimator()(source, fmt=fmt, limit=limit, generator=named_config(engine, generator),
                                          judge=named_config(engine, judge or generator))


def build_protocol(engine: Engine, principal: Principal | None, protocol: str, source: Path, out_dir: Path, *,
                   fmt: str = "", seed: int = 0, limit: int | None = None, bm25_only: bool = True,
                   progress: Progress | None = None, generator: str | None = None, judge: str | None = None,
                   budget_usd: float | None = None) -> BuildResult:
    """Build `protocol`'s benchmark from `source` into out_dir/instances.jsonl with its declared builder (a protocol
    without one: KeyError naming those with one). With a generator or judge model (a builder with an estimate), its
    calls go through the cached client and are spent, under `budget_usd`, on a recorded build run row."""
    authorize(engine, principal, "build_benchmark")
    builder = _builder(protocol)
    options: dict[str, Any] = {"fmt": fmt, "seed": seed, "limit": limit, "bm25_only": bm25_only, "progress": progress}
    if not generator and not judge:
        return builder.function()(source, out_dir, **options)
    builder.estimator()  # KeyError for a builder that uses no LLM
    judge = judge or generator
    gen_config, judge_config = named_config(engine, generator), named_config(engine, judge)
    spend = record_build(engine, f"{protocol} {source.name}", budget_usd, {
        "protocol": protocol, "source": str(source), "generator": generator, "judge": judge, "out": str(out_dir)})
    assist = Assist(model_complete_json(engine, gen_config, spend) if gen_config else None,
                    model_complete_json(engine, judge_config, spend) if judge_config else None,
                    judge or "", generator or "")
    with spend.closing():
        built = builder.function()(source, out_dir, assist=assist, **options)
    spent = spend.to_dict()
    built.summary.append(f"LLM calls: {spent['calls']} paid (${spent['paid_usd']:.4f}), {spent['cached']} from the "
                         f"cache, {spend.refused} refused by the budget; recorded as run {spent['run_id']}")
    return built
