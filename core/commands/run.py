"""Run commands: run (new, --resume, --retry-failed, --dry-run), report, models add/list/baselines, fake-server."""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import json
import logging
import math
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from core.commands import lazy_module
from core.config import database_url
from core.metrics import STATES

runs = lazy_module("core.generation.runs")
run_estimates = lazy_module("core.generation.run_estimates")
run_progress = lazy_module("core.generation.run_progress")
registered_models = lazy_module("core.generation.registered_models")
leases = lazy_module("core.store.leases")

if TYPE_CHECKING:
    from core.analysis.fitness import Notice
    from core.generation.run_progress import RunSpend

console = Console(stderr=True)
models_app = typer.Typer(help="Register and list model configurations (keys stay in env / secrets.toml).")


def _split(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def _conditions(value: str | None) -> list[str]:
    """Condition names from --conditions ('default' or an empty name is the protocol's default)."""
    if value is None:
        return [""]
    names = ["" if part.strip() == "default" else part.strip() for part in value.split(",")]
    return list(dict.fromkeys(names))


def _engine():
    from core.store.db import get_engine, upgrade

    url = database_url()
    upgrade(url)
    return get_engine(url)


def print_estimate(estimate: Any) -> None:
    """Print the pre-launch estimate (calls, tokens, upper-bound cost) per model and in total."""
    table = Table(title="Estimate (output tokens at their maximum: an upper bound)")
    for column in ("model", "calls", "cached", "over context window", "max cost $"):
        table.add_column(column)
    for name, row in estimate.per_model.items():
        table.add_row(name, str(int(row["calls"])), str(int(row["cached"])), str(int(row.get("over_window", 0))),
                      f"{row['max_cost_usd']:.4f}")
    console.print(table)
    console.print(f"items {estimate.items} | calls {estimate.calls} | cached {estimate.cached} | input tokens "
                  f"~{estimate.input_tokens} | output tokens <= {estimate.max_output_tokens} | "
                  f"cost <= ${estimate.max_cost_usd:.4f}")
    console.print(estimate.shape())
    if estimate.over_window:
        console.print(estimate.context_summary())


def _released_prompts(given: Path | None, conditions: str | None) -> None:
    """--prompts-dir, or LIT-RAGBench's paper_prompts condition: the released prompts folder, checked before the run
    is made and handed to the prompt builders (and worker processes) through the environment."""
    from core.protocols.lit_ragbench.released import PAPER_CONDITION, PROMPTS_ENV, prompts_dir

    if given is not None or PAPER_CONDITION in _split(conditions):
        os.environ[PROMPTS_ENV] = str(prompts_dir(given))


def run(
    models: Annotated[str, typer.Option(help="Comma-separated registered model names.")] = "",
    domains: Annotated[str, typer.Option(help="Comma-separated domain names (default: all).")] = "",
    modes: Annotated[str, typer.Option(help="Comma-separated modes: noisy,gap,conflict (default: all).")] = "",
    limit: Annotated[int | None, typer.Option(help="At most this many instances.")] = None,
    concurrency: Annotated[int | None, typer.Option(help="Concurrent calls per provider.")] = None,
    rpm: Annotated[float | None, typer.Option(help="Requests per minute per provider.")] = None,
    tpm: Annotated[float | None, typer.Option(help="Tokens per minute per provider.")] = None,
    budget_usd: Annotated[float | None, typer.Option(help="Stop cleanly once this much is spent.")] = None,
    judge: Annotated[str | None, typer.Option(help="Score after generation (comma-separated): heuristic, llm:<model>.")] = None,
    order: Annotated[str | None, typer.Option(help="Document order: stored|shuffle|support_first|...")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed for shuffled document order.")] = None,
    conditions: Annotated[str | None, typer.Option(
        help="Comma-separated protocol conditions (default: each protocol's default, also called 'default'); one "
             "item per model x instance x condition its protocol declares, e.g. default,closed_book,html_as_text.",
    )] = None,
    context_policy: Annotated[str | None, typer.Option(
        help="A prompt over the model's context window (prompt + max output tokens): refuse (default: the item "
             "fails unsent) or truncate (drop whole documents from the end of the bundle until it fits; "
             "recorded in prompt_meta).")] = None,
    max_retries: Annotated[int | None, typer.Option(help="Retries per call after the first attempt.")] = None,
    repeats: Annotated[int | None, typer.Option(
        min=1, help="Answers per item (default 1): each repeat has its own seed (the model's seed setting + repeat) "
                    "and cache key, so each is paid once; `gauntlet gate` uses per-item pass rates and reports flaky "
                    "items apart.")] = None,
    workers: Annotated[int | None, typer.Option(
        min=1, help="Worker processes (default 1). The pending items are sharded by id modulo N; each worker gets "
             "concurrency/N (rounded up) and rpm/tpm divided by N. The budget holds across workers: each call's "
             "worst case is reserved on the run before it is sent.")] = None,
    executor: Annotated[str | None, typer.Option(
        help="local (default: this process, or --workers processes) or ray: the items as Ray tasks, one shard per "
             "CPU of the cluster (or --workers shards), same cache, budget, resume and re-bought accounting; needs "
             "pip install 'rag-gauntlet[ray]' and a database file or server.")] = None,
    address: Annotated[str | None, typer.Option(
        help="With --executor ray: the Ray cluster (auto, HOST:PORT or ray://HOST:PORT); default: a local instance "
             "on loopback.")] = None,
    name: Annotated[str, typer.Option(help="A label for the run.")] = "",
    resume: Annotated[int | None, typer.Option(help="Finish the pending items of this run.")] = None,
    retry_failed: Annotated[int | None, typer.Option(help="Retry the failed items of this run.")] = None,
    dry_run: Annotated[bool, typer.Option(help="Print the estimate and exit.")] = False,
    quiet: Annotated[bool, typer.Option(help="No progress bar.")] = False,
    wait: Annotated[bool, typer.Option(help="If another live process owns the run (--resume, --retry-failed), wait "
                                            "for it to finish instead of refusing.")] = False,
    prompts_dir: Annotated[Path | None, typer.Option(
        "--prompts-dir", help="LIT-RAGBench's released prompts/ folder, read at run time by its paper_prompts "
                              "condition (and by the judge when scoring those answers).")] = None,
) -> None:
    """Generate answers for models x instances; every item ends done or failed with a reason."""

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    engine = _engine()
    overrides = {"concurrency": concurrency, "rpm": rpm, "tpm": tpm, "budget_usd": budget_usd, "judge": judge,
                 "max_retries": max_retries, "workers": workers, "context_policy": context_policy,
                 "executor": executor, "ray_address": address}
    try:
        for price in (price for price in (budget_usd,) if price is not None):
            if not math.isfinite(price) or price < 0:
                raise ValueError(f"--budget-usd {price} must be a finite number >= 0")
        _released_prompts(prompts_dir, conditions)
        if repeats is not None and (resume is not None or retry_failed is not None):
            raise ValueError("--repeats applies to a new run (its items are made when the run is created)")
        owner_run = resume if resume is not None else retry_failed
        if wait and owner_run is not None:
            _wait_for_owner(engine, owner_run)
        run_id = _target_run(engine, models, domains, modes, limit, order, seed, name, overrides,
                             resume, retry_failed, dry_run, _conditions(conditions), repeats or 1)
        if run_id is None:
            return
        print_estimate(run_estimates.estimate_run(engine, run_id))
        result = _execute(engine, run_id, overrides, quiet)
    except leases.LeaseHeld as error:
        _error(error)
        raise typer.Exit(3) from None
    except ValueError as error:
        _error(error)
        raise typer.Exit(2) from None
    _finish(engine, run_id, result)


def _error(error: BaseException) -> None:
    console.print(f"[red]{escape(str(error))}[/red]", highlight=False, soft_wrap=True)


def _wait_for_owner(engine, run_id: int) -> None:
    """Block while another live process owns run `run_id` (--wait)."""
    announced = False
    while (holder := leases.lease_holder(engine, leases.run_lease(run_id))) is not None:
        if not announced:
            console.print(f"waiting: {leases.held_message(leases.run_lease(run_id), holder)}", highlight=False)
            announced = True
        time.sleep(leases.LEASE_POLL_S)


def _target_run(engine, models, domains, modes, limit, order, seed, name, overrides, resume, retry_failed,
                dry_run, conditions, repeats: int = 1) -> int | None:
    if resume is not None:
        runs.run_options(engine, resume)  # ValueError for an unknown run
        holder = leases.lease_holder(engine, leases.run_lease(resume))
        if holder is not None:
            raise leases.LeaseHeld(leases.held_message(leases.run_lease(resume), holder))
        return resume
    if retry_failed is not None:
        count = runs.retry_failed(engine, retry_failed)
        console.print(f"run {retry_failed}: {count} failed item(s) back to pending")
        return retry_failed
    options = runs.RunOptions(models=_split(models), domains=_split(domains), modes=_split(modes), limit=limit,
                                name=name, order=order or "stored", seed=seed or 0, conditions=conditions,
                                repeats=repeats)
    for key, value in overrides.items():
        if value is not None:
            setattr(options, key, value)
    if not options.models:
        raise ValueError("--models is required (see `gauntlet models list`)")
    if dry_run:
        print_estimate(run_estimates.estimate_options(engine, options))
        return None
    run_id = runs.create_run(engine, options)
    typer.echo(f"run {run_id} created")
    return run_id


def _execute(engine, run_id: int, overrides: dict[str, Any], quiet: bool):
    from core.pipeline import run_and_score

    def stage(name: str, done: int, total: int) -> None:
        if name.startswith("scoring") and (done == total or done % 25 == 0):
            console.print(f"  {name.split(':', 1)[1]}: {done}/{total} responses scored")

    if quiet:
        return asyncio.run(run_and_score(engine, run_id, overrides=overrides))
    columns = (TextColumn("run {task.fields[run]}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("failed {task.fields[failed]}"), TextColumn("{task.fields[rate]:.1f}/s"),
               TextColumn("generation ${task.fields[spent]:.4f}"), TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console) as bar:
        snap = run_progress.progress_snapshot(engine, run_id)
        task = bar.add_task("run", total=snap.total, completed=snap.finished, run=run_id, failed=snap.failed,
                            rate=0.0, spent=snap.spent_usd)

        def update(p) -> None:
            bar.update(task, completed=p.finished, failed=p.failed, rate=p.rate, spent=p.spent_usd)

        return asyncio.run(run_and_score(engine, run_id, overrides=overrides, generation_progress=update,
                                         progress=stage))


def _finish(engine, run_id: int, outcome) -> None:
    result = outcome.generation
    failures = runs.failed_items(engine, run_id)
    typer.echo(f"run {run_id} {result.status}: {result.done} done, {result.failed} failed, {result.pending} pending, "
               f"spent {run_progress.spend_text(run_progress.run_spend(engine, run_id))}")
    snapshot = run_progress.progress_snapshot(engine, run_id)
    if snapshot.rebought_calls:
        from core.generation.runner import rebought_note

        typer.echo(rebought_note(snapshot.rebought_calls, snapshot.rebought_usd))
    if result.status == "pending" and result.pending:
        typer.echo(f"stopped early ({run_progress.run_message(engine, run_id)}); finish with: gauntlet run --resume {run_id}")
    for failure in failures:
        condition = f" [{failure['condition']}]" if failure["condition"] else ""
        typer.echo(f"  failed #{failure['response_id']} {failure['model']} {failure['instance']}{condition} "
                   f"after {failure['attempts']} attempt(s): {failure['error']}")
    if failures:
        typer.echo(f"retry them with: gauntlet run --retry-failed {run_id}")
    if result.status == "budget_stopped":
        typer.echo(f"budget reached; finish with: gauntlet run --resume {run_id} --budget-usd <more>")
    from core.commands.score import format_report

    for report in outcome.scores:
        typer.echo(format_report(report))


def report(
    run_id: Annotated[int, typer.Argument(help="Run id.")],
    judge: Annotated[str | None, typer.Option("--judge", help="Judge whose verdicts to report (needed when several "
                                              "judges scored the run).")] = None,
    format: Annotated[str, typer.Option("--format", help="table | csv | json")] = "table",  # noqa: A002
    mode: Annotated[list[str], typer.Option("--mode", help="Only these EnterpriseRAG subsets (noisy, gap, conflict; "
                                            "repeat for several), e.g. --mode noisy for the paper's Table 2.")] = [],  # noqa: B006
) -> None:
    """Per-model results of a run under one judge: generation figures and every metric with its CI and n."""
    from core.analysis import readmodel
    from core.analysis.judge_check import fitness_notice
    from core.store.run_kinds import require_evaluation_runs

    if format not in ("table", "csv", "json"):
        raise typer.BadParameter("format must be table, csv or json", param_hint="--format")
    engine = _engine()
    try:
        require_evaluation_runs(engine, [run_id])
        result = readmodel.run_report(engine, run_id, judge, mode)
    except ValueError as error:
        _error(error)
        raise typer.Exit(2) from None
    fitness = fitness_notice(engine, result.judge) if result.judge else None
    spend = run_progress.run_spend(engine, run_id)
    from core.construction.soundness import benchmark_notes

    typer.echo(render_report(result, format, runs.failed_items(engine, run_id), fitness, spend,
                             benchmark_notes(engine, [run_id]).lines()))


def render_report(result: Any, fmt: str, failures: list[dict[str, Any]], fitness: Notice | None = None,
                  spend: RunSpend | None = None, notes: list[str] | None = None) -> str:
    """The report as a table, CSV (one row per model) or JSON (also lists the failed items, the judge's fitness,
    the run's spend: generation, judging, total, and the data notes); the table opens with the judge's fitness
    statement and its warning unless the judge may decide, then the spend, and ends with the data notes (built sets'
    expert sound rates, LLM-generated instances)."""
    from core.analysis import readmodel

    doc = readmodel.report_document(result, failures)
    if fitness is not None:
        doc["fitness"] = fitness.as_dict()
    if spend is not None:
        doc["spend"] = {"generation_usd": spend.generation_usd, "judging_usd": spend.judging_usd,
                        "total_usd": spend.total_usd}
    if notes:
        doc["data_notes"] = notes
    if fmt == "json":
        return json.dumps(doc, indent=2, ensure_ascii=False)
    if fmt == "csv":
        rows = [{"run": doc["run"], "judge": doc["judge_label"], "model": m["model"], **m["generation"],
                 **{f"{metric}{suffix}": cell[key] for metric, cell in m["metrics"].items()
                    for suffix, key in (("", "value"), ("_ci_low", "ci_low"), ("_ci_high", "ci_high"), ("_n", "n"))},
                 **m["counts"], **section_cells(doc, m["model"])} for m in doc["models"]]
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(dict.fromkeys(k for row in rows for k in row)))
        writer.writeheader()
        writer.writerows(rows)
        return buffer.getvalue().rstrip("\n")
    buffer = io.StringIO()
    out = Console(file=buffer, width=10_000)
    out.print(f"run {doc['run']} · judge: {doc['judge_label']}" + (f" · {doc['note']}" if doc["note"] else ""))
    if fitness is not None:
        out.print(fitness.text(), markup=False)
    if spend is not None:
        out.print(f"spent {run_progress.spend_text(spend)}", markup=False)
    sections = [(f"{s.title} ({s.protocol}): mean [95% CI], n and the count of each state per model and condition",
                 s.table) for s in result.sections]
    for title, frame in (("Generation", result.generation), ("Metrics (mean [95% CI] n; † n < 30)",
                                                               readmodel.leaderboard_table(result.board)),
                         ("Undetermined and not-applicable counts", result.counts), *sections):
        if frame is None or frame.empty:
            continue
        table = Table(title=title)
        for column in frame.columns:
            table.add_column(str(column))
        for row in frame.itertuples(index=False):
            table.add_row(*("" if v is None or (isinstance(v, float) and v != v) else str(v) for v in row))
        out.print(table)
    for failure in doc["failed"]:
        out.print(f"failed #{failure['response_id']} {failure['model']} {failure['instance']}: {failure['error']}")
    for note in notes or []:
        out.print(f"note: {note}", markup=False)
    return buffer.getvalue().rstrip("\n")


SECTION_CELLS = ("value", "ci_low", "ci_high", "n", *(f"n_{state}" for state in STATES))


def section_cells(doc: dict[str, Any], model: str) -> dict[str, Any]:
    """The CSV cells of `model` in the report's protocol sections: '<protocol>:<metric>[<condition>]_<field>' for
    the mean, CI, n and the count of each state."""
    cells: dict[str, Any] = {}
    for protocol, section in doc["protocols"].items():
        for row in (r for r in section["metrics"] if r["model"] == model):
            name = f"{protocol}:{row['metric']}" + (f"[{row['condition']}]" if row["condition"] else "")
            cells |= {f"{name}_{field}": row[field] for field in SECTION_CELLS}
    return cells


@models_app.command("add")
def models_add(
    name: Annotated[str, typer.Argument(help="Display name, e.g. gpt-4.1.")],
    provider: Annotated[str, typer.Option(help="openai | anthropic | openai_compatible | baseline")] = "openai",
    model_name: Annotated[str, typer.Option(help="API model id (default: the name).")] = "",
    price_in: Annotated[float | None, typer.Option(help="USD per million input tokens.")] = None,
    price_out: Annotated[float | None, typer.Option(help="USD per million output tokens.")] = None,
    paradigm: Annotated[str, typer.Option(help="standard | reasoning")] = "standard",
    access: Annotated[str, typer.Option(help="open | closed")] = "closed",
    temperature: Annotated[float | None, typer.Option(help="Sampling temperature.")] = 0.0,
    max_output_tokens: Annotated[int, typer.Option(help="Max output tokens.")] = 1024,
    context_window: Annotated[int | None, typer.Option(
        min=1, help="Tokens the model accepts (prompt + output); prompts over it follow the run's "
                    "--context-policy. Default: unchecked.")] = None,
    setting: Annotated[list[str] | None, typer.Option(help="key=value, e.g. reasoning_effort=high, "
                                                      "base_url_env=MY_URL, api_key_env=MY_KEY.")] = None,
) -> None:
    """Register or update a model configuration (prices default to core/generation/providers/prices.py)."""
    from core.generation.providers.base import ModelConfig
    from core.generation.providers.prices import PRICES_AS_OF, default_price

    model_name = model_name or name
    default_in, default_out = default_price(model_name)
    settings = dict(_parse_setting(s) for s in setting or [])
    try:
        config = ModelConfig(name=name, provider=provider, model_name=model_name, temperature=temperature,
                             max_output_tokens=max_output_tokens, paradigm=paradigm, access=access,
                             price_input_per_mtok=default_in if price_in is None else price_in,
                             price_output_per_mtok=default_out if price_out is None else price_out,
                             is_baseline=provider == "baseline", settings=settings, context_window=context_window)
        from core.generation.providers import PROVIDERS

        PROVIDERS.get(provider)
        row = registered_models.register_model(_engine(), config)
    except (ValueError, KeyError) as error:
        _error(error)
        raise typer.Exit(2) from None
    typer.echo(f"model {row.name} ({row.provider}/{row.model_name}) ${row.price_input_per_mtok}/"
               f"${row.price_output_per_mtok} per Mtok{_defaults_note(price_in, price_out, PRICES_AS_OF)}")


def _defaults_note(price_in: float | None, price_out: float | None, as_of: str) -> str:
    defaulted = [side for side, price in (("input", price_in), ("output", price_out)) if price is None]
    if not defaulted:
        return ""
    what = "defaults" if len(defaulted) == 2 else f"{defaulted[0]} price default"
    return f" ({what} as of {as_of})"


def _parse_setting(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep:
        raise typer.BadParameter(f"setting {text!r} must be key=value")
    try:
        return key.strip(), json.loads(value)
    except json.JSONDecodeError:
        return key.strip(), value


@models_app.command("baselines")
def models_baselines() -> None:
    """Register baseline:always-refuse and baseline:extractive."""

    for row in registered_models.ensure_baselines(_engine()):
        typer.echo(f"model {row.name} (baseline)")


@models_app.command("list")
def models_list() -> None:
    """List registered models with prices and settings (no secrets are ever stored)."""
    from sqlmodel import Session, select

    from core.store.models import Model

    with Session(_engine()) as session:
        rows = session.exec(select(Model).order_by(Model.name)).all()
    table = Table()
    for column in ("name", "provider", "model", "paradigm", "in $/Mtok", "out $/Mtok", "context window", "settings"):
        table.add_column(column)
    for m in rows:
        table.add_row(m.name, m.provider, m.model_name, m.paradigm, f"{m.price_input_per_mtok:g}",
                      f"{m.price_output_per_mtok:g}", str(m.context_window or "-"), json.dumps(m.settings))
    Console(width=200).print(table)


def fake_server(
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0 = any free port).")] = 8765,
    latency_ms: Annotated[float, typer.Option(help="Latency added to every call.")] = 0.0,
    error_rate: Annotated[float, typer.Option(help="Share of calls given a random fault.")] = 0.0,
    script: Annotated[str | None, typer.Option(help=(
        "JSON/YAML list of rules, tried in order; each a mapping of optional fields: match (regex on the "
        "prompt), reply (answer text), choices (answers drawn by the seeded generator), fault (429 | 500 | 503 | "
        "reset | timeout | malformed | truncated), times (fault on the first N matches only), retry_after "
        "(seconds, with a 429), seed (only requests with this seed), reasoning (a thinking block returned apart "
        "from the reply)."))] = None,
    seed: Annotated[int, typer.Option(help="Seed of the random faults.")] = 0,
) -> None:
    """Serve the OpenAI and Anthropic wire formats locally for tests, demos and benchmarks."""
    from core.generation.fake_server import FakeLLMServer, load_script

    try:
        rules = load_script(script) if script else None
    except (OSError, ValueError) as error:
        _error(error)
        raise typer.Exit(2) from None
    server = FakeLLMServer(rules, latency_ms=latency_ms, error_rate=error_rate, seed=seed, port=port)
    typer.echo(f"fake LLM server on {server.base_url} (OpenAI base_url {server.base_url}/v1)", err=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()


def register(app: typer.Typer) -> None:
    """Add run, report, models and fake-server to the CLI."""
    app.command("run")(run)
    app.command("report")(report)
    app.command("fake-server")(fake_server)
    app.add_typer(models_app, name="models")
