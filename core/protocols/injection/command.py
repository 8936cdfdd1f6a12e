"""`gauntlet injection report RUN_ID`: attack success and the task's answer per model of a run, by a breakdown."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

COMMAND = "injection"
HELP = "Prompt injection: attack success and the task's answer per model, by attack kind or position."


def register(app: typer.Typer) -> None:
    """Register `gauntlet injection report` on the app."""
    group = typer.Typer(help=HELP, no_args_is_help=True)
    app.add_typer(group, name=COMMAND)

    @group.command("report")
    def report(run_id: Annotated[int, typer.Argument(help="Run id.")],
               judge: Annotated[str, typer.Option("--judge", help="Scoring judge.")] = "heuristic",
               by: Annotated[str, typer.Option("--by", help="attack_kind, text_position, bundle_position, "
                                                            "decided_by or all.")] = "all") -> None:
        """Print attack success and exact match per model with n and the state counts."""
        from core.store.db import get_engine

        from .analysis import attack_table, overall

        engine = get_engine()
        table = overall(engine, [run_id], judge) if by == "all" else attack_table(engine, [run_id], judge, by)
        typer.echo(table.to_string(index=False))

    @group.command("build")
    def build(source: Annotated[Path, typer.Argument(help="A BIPIA folder, or question-answer records (JSONL).")],
              out: Annotated[Path, typer.Option("--out", help="Folder for instances.jsonl.")] = Path("var/built/injection"),
              fmt: Annotated[str, typer.Option("--format", help="bipia or qa (default: bipia for a folder).")] = "",
              seed: Annotated[int, typer.Option(help="Same seed, same file.")] = 0,
              limit: Annotated[int | None, typer.Option(help="At most this many instances.")] = None) -> None:
        """Write instances with planted attacks and print what was built and skipped."""
        from .builder import build as build_instances

        result = build_instances(source, out, fmt=fmt, seed=seed, limit=limit)
        for line in [*result.summary, *(f"skipped: {s}" for s in result.skipped)]:
            typer.echo(line)
        typer.echo(f"wrote {result.instances} instances to {result.out}")
