"""Authorised benchmark writes: build a benchmark file, preview and import one into the store or as a named set."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from core.construction.build import BuildReport, build_benchmark, estimate_benchmark
from core.construction.cost import BuildEstimate, BuildSpend, model_complete_json, record_build
from core.construction.fact_checks import Assist
from core.generation.models_admin import model_config
from core.generation.providers.base import ModelConfig
from core.ingest.deployed import TraceImportReport, import_traces
from core.ingest.format_sets import FormatPreview, import_format_set, preview_format_file
from core.ingest.importers.traces import Trace, read_trace_parts
from core.ingest.io import ImportReport, LineError, import_file, validate_file
from core.ingest.sets import PlannedInstance, SetImportReport, import_set_file, plan_import
from core.plugins import DEFAULT_PROTOCOL
from core.review.auth import Principal, authorize


def named_config(engine: Engine, name: str | None) -> ModelConfig | None:
    """The registered model `name` (None for none; ValueError naming the fix when it is not registered)."""
    if not name:
        return None
    config = model_config(engine, name)
    if config is None:
        raise ValueError(f"no model named {name!r}; register it on Models or with `gauntlet models add`")
    return config


def estimate_benchmark_file(engine: Engine, principal: Principal | None, queries: list[Path], corpus: list[Path],
                            seed: int, generator: str | None = None, judge: str | None = None,
                            **options: Any) -> BuildEstimate:
    """An admin's estimate of a build's LLM cost before it starts (re-checked: build_benchmark)."""
    authorize(engine, principal, "build_benchmark")
    return estimate_benchmark(queries, corpus, seed=seed, generator=named_config(engine, generator),
                              judge=named_config(engine, judge or generator), **options)


def build_benchmark_file(engine: Engine, principal: Principal | None, queries: list[Path], corpus: list[Path],
                         libraries: list[Path], out: Path, seed: int, generator: str | None = None,
                         judge: str | None = None, budget_usd: float | None = None, **options: Any) -> BuildReport:
    """An admin builds a benchmark JSONL at `out` (re-checked: build_benchmark); the BuildReport. With a generator
    (and judge) model, conflicts and gaps the rules cannot make are written and checked, spent under `budget_usd`."""
    authorize(engine, principal, "build_benchmark")
    judge = judge or generator
    gen_config, judge_config = named_config(engine, generator), named_config(engine, judge)
    spend = record_build(engine, f"{DEFAULT_PROTOCOL} {out.name}", budget_usd, {
        "protocol": DEFAULT_PROTOCOL, "generator": generator, "judge": judge, "out": str(out)}) \
        if gen_config or judge_config else BuildSpend(budget_usd)
    assist = Assist(model_complete_json(engine, gen_config, spend) if gen_config else None,
                    model_complete_json(engine, judge_config, spend) if judge_config else None,
                    judge or "", generator or "") if gen_config or judge_config else None
    with spend.closing():
        report = build_benchmark(queries, corpus, libraries, out, seed, assist=assist, **options)
    report.spent = spend.to_dict()
    return report


def import_benchmark_file(engine: Engine, principal: Principal | None, path: Path) -> ImportReport:
    """An admin imports a benchmark JSONL, changed instances as new versions (re-checked: import_benchmark)."""
    admin = authorize(engine, principal, "import_benchmark")
    return import_file(engine, path, on_existing="new_version", author=admin.username)


def preview_benchmark_file(engine: Engine, principal: Principal | None, path: Path) -> tuple[list[LineError], list[PlannedInstance]]:
    """An admin's preview of importing a benchmark JSONL (re-checked: import_benchmark): its validation errors, or
    per instance whether it is new, unchanged or would change an existing instance (and how)."""
    authorize(engine, principal, "import_benchmark")
    validation = validate_file(path)
    return validation.errors, ([] if validation.errors else plan_import(engine, validation.instances))


def import_benchmark_set(engine: Engine, principal: Principal | None, path: Path, set_name: str, *,
                         on_changed: str | None = None, origin: str = "import") -> SetImportReport:
    """An admin imports a benchmark JSONL as its own named set (re-checked: import_benchmark); existing instances
    that would change need the explicit `on_changed` choice (core.ingest.sets.ON_CHANGED)."""
    admin = authorize(engine, principal, "import_benchmark")
    return import_set_file(engine, path, set_name, on_changed=on_changed, origin=origin, author=admin.username)


def preview_format(engine: Engine, principal: Principal | None, path: Path, fmt: str, skip_invalid: bool,
                   protocol: str | None = None) -> FormatPreview:
    """An admin's preview of importing a file of layout `fmt` (re-checked: import_benchmark): records, rejects."""
    authorize(engine, principal, "import_benchmark")
    return preview_format_file(engine, path, fmt, skip_invalid, protocol)


def import_format(engine: Engine, principal: Principal | None, path: Path, fmt: str, set_name: str, *,
                  skip_invalid: bool = False, on_changed: str | None = None,
                  protocol: str | None = None) -> tuple[FormatPreview, SetImportReport]:
    """An admin imports a file of layout `fmt` (under `protocol` if given) as a new named set (re-checked:
    import_benchmark)."""
    admin = authorize(engine, principal, "import_benchmark")
    return import_format_set(engine, path, fmt, set_name, skip_invalid=skip_invalid, on_changed=on_changed,
                             author=admin.username, protocol=protocol)


def preview_traces(engine: Engine, principal: Principal | None, path: Path,
                   fmt: str) -> tuple[list[Trace], list[LineError], list[LineError]]:
    """An admin's preview of a trace export (re-checked: import_benchmark): traces, record problems, incomplete ones."""
    authorize(engine, principal, "import_benchmark")
    return read_trace_parts(path, fmt)


def import_trace_export(engine: Engine, principal: Principal | None, path: Path, fmt: str, set_name: str, *,
                        redact: bool = False, skip_incomplete: bool = False) -> TraceImportReport:
    """An admin imports a trace export as a named set plus its deployed run, as `gauntlet import --format` does
    (re-checked: import_benchmark)."""
    admin = authorize(engine, principal, "import_benchmark")
    return import_traces(engine, path, fmt, set_name=set_name, redact=redact, author=admin.username,
                         skip_incomplete=skip_incomplete)
