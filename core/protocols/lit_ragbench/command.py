"""`gauntlet lit-ragbench import|report`: LIT-RAGBench files under the lit_ragbench protocol, and its category table."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from core.config import database_url

if TYPE_CHECKING:
    import pandas as pd
    from sqlalchemy.engine import Engine

    from core.ingest.io import ImportReport

COMMAND = "lit-ragbench"  # `gauntlet lit-ragbench` (core.cli reads COMMAND and HELP without importing this module)
HELP = "LIT-RAGBench: import under the lit_ragbench protocol; category and aspect accuracy."
lit_app = typer.Typer(help=HELP,
                      no_args_is_help=True)


def spread_sample(records: list, size: int | None) -> list:
    """`size` records spread evenly over `records` (every k-th from the first, so each part of a file is drawn);
    all of them when `size` is None."""
    if size is None:
        return records
    if size < 1:
        raise ValueError(f"sample size {size} must be at least 1")
    return records[:: max(1, len(records) // size)][:size]


def import_lit(engine: Engine, paths: list[Path], *, on_existing: str = "reject",
               sample: int | None = None) -> ImportReport:
    """Read LIT-RAGBench files with the lit-ragbench importer (lossless, metadata.source kept) and import every
    record (or a spread `sample` of each file) as a lit_ragbench instance, atomically over all files: any problem in
    any file imports nothing."""
    from core.ingest.importers import get_importer
    from core.ingest.io import ImportReport, LineError, import_specs
    from core.protocols.lit_ragbench import as_lit_ragbench, conversion_errors

    specs, errors, origin = [], [], defaultdict(set)
    for path in paths:
        parsed = get_importer("lit-ragbench").parse(Path(path))
        errors += [LineError(e.line, e.field, e.message, str(path)) for e in parsed.errors]
        for line, spec in spread_sample(parsed.instances, sample):
            problems = conversion_errors(spec)
            errors += [LineError(line, field, message, str(path)) for field, message in problems]
            specs.append((line, as_lit_ragbench(spec)))
            origin[line].add(str(path))
    if errors:
        return ImportReport(errors=errors)
    report = import_specs(engine, specs, on_existing=on_existing)
    report.errors = [replace(e, file=" or ".join(sorted(origin[e.line])) or " or ".join(map(str, paths)))
                     for e in report.errors]  # each its file (both when that line number is in both)
    return report


def format_table(report: dict[str, pd.DataFrame]) -> str:
    """The overall and per-category accuracy per model, language and condition, with n and CIs, as text."""
    overall, cells, abstention = report["overall"], report["categories"], report["abstention"]
    if overall.empty:
        return "no lit_ragbench responses in these runs"
    lines = [f"judge: {overall['judge_label'].iloc[0]}  (accuracy = the judge's 1/0 per question; † n < 30)"]
    for _, o in overall.iterrows():
        mine = (cells["model"] == o["model"]) & (cells["language"] == o["language"]) & (cells["condition"] == o["condition"])
        a = abstention[(abstention["model"] == o["model"]) & (abstention["language"] == o["language"])
                       & (abstention["condition"] == o["condition"])].iloc[0]
        lines.append(f"\n{o['model']} · {o['language']} · condition {o['condition'] or '(default)'}: "
                     f"category-averaged accuracy {_ci(o['value'], o['ci_low'], o['ci_high'])} over "
                     f"{o['n_categories']}/5 categories; all questions {_ci(o['micro_value'], o['micro_ci_low'], o['micro_ci_high'])} "
                     f"n={o['n']}; over-abstention {_ci(a['over_abstention'], a['oa_ci_low'], a['oa_ci_high'])} "
                     f"n={a['oa_n']} (undetermined {a['oa_undetermined']})")
        for _, c in cells[mine].iterrows():
            lines.append(f"  {c['key']:<12} {_ci(c['value'], c['ci_low'], c['ci_high'])}  n={c['n']}"
                         f"{'†' if c['small_n'] else ''}  errors={c['n_error']} unscored={c['n_unscored']}")
    return "\n".join(lines + _settings_lines(report.get("settings")))


def _settings_lines(settings: pd.DataFrame | None) -> list[str]:
    """The category average under the product prompts beside the paper's, when the runs hold both settings."""
    if settings is None or settings.empty:
        return []
    lines = ["\nprompt settings side by side (category-averaged accuracy; paper = condition paper_prompts):"]
    lines += [f"  {s['model']} · {s['language']}: product {_ci(s['product_value'], s['product_ci_low'], s['product_ci_high'])} "
              f"n={s['product_n']}; paper {_ci(s['paper_value'], s['paper_ci_low'], s['paper_ci_high'])} n={s['paper_n']}; "
              f"paper - product {s['diff_paper_product']:+.3f}" for _, s in settings.iterrows()]
    return lines


def _ci(value: float, low: float, high: float) -> str:
    import pandas as pd

    return "no data" if pd.isna(value) else f"{value:.3f} [{low:.3f}, {high:.3f}]"


def _records(frame: pd.DataFrame) -> list[dict]:
    return json.loads(frame.drop(columns=[c for c in ("aspects", "categories") if c in frame]).to_json(orient="records"))


@lit_app.command("import")
def import_command(
    files: Annotated[list[Path], typer.Argument(help="en.jsonl and/or ja.jsonl of LIT-RAGBench.")],
    new_version: Annotated[bool, typer.Option("--new-version", help="Store changed existing ids as a new version "
                                              "(e.g. instances imported before with --format lit-ragbench).")] = False,
    sample: Annotated[int | None, typer.Option("--sample", min=1, help="Only this many records of each file, spread "
                                               "evenly over it (a quick look; the paper uses all 114).")] = None,
) -> None:
    """Import LIT-RAGBench files as lit_ragbench instances (all or nothing); `gauntlet export` round-trips them."""
    from core.store.db import get_engine, upgrade

    upgrade(database_url())
    report = import_lit(get_engine(), files, on_existing="new_version" if new_version else "reject", sample=sample)
    for error in report.errors:
        typer.echo(error.located(files[0]), err=True)
    if not report.ok:
        typer.echo("nothing imported; the database is unchanged", err=True)
        raise typer.Exit(1)
    typer.echo(f"imported {len(report.created)} new, {len(report.new_versions)} new versions, "
               f"{len(report.unchanged)} unchanged lit_ragbench instances")


@lit_app.command("report")
def report_command(
    run_ids: Annotated[list[int], typer.Argument(help="Run ids (the latest response wins where runs overlap).")],
    judge: Annotated[str, typer.Option("--judge", help="'heuristic' or 'llm:<model name>'.")] = "heuristic",
    fmt: Annotated[str, typer.Option("--format", help="table | json")] = "table",
) -> None:
    """Category and aspect accuracy, category average and over-abstention per model, language and condition."""
    from core.protocols.lit_ragbench.analysis import lit_report
    from core.store.db import get_engine

    report = lit_report(get_engine(), run_ids, judge)
    if fmt == "json":
        keys = ("overall", "categories", "aspects", "abstention", "languages", "settings")
        typer.echo(json.dumps({key: _records(report[key]) for key in keys}, ensure_ascii=False, indent=1))
    else:
        typer.echo(format_table(report))


def register(app: typer.Typer) -> None:
    """Register the lit-ragbench command group on the gauntlet app."""
    app.add_typer(lit_app, name=COMMAND)
