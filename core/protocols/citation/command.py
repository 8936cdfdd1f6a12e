"""`gauntlet citation report|build`: citation recall and precision per model of a run; instances from ALCE's data
files or question records."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

COMMAND = "citation"
HELP = "Citations: ALCE-style citation recall and precision per model, with the state counts."


def register(app: typer.Typer) -> None:
    """Register `gauntlet citation report` and `build` on the app."""
    group = typer.Typer(help=HELP, no_args_is_help=True)
    app.add_typer(group, name=COMMAND)

    @group.command("report")
    def report(run_id: Annotated[int, typer.Argument(help="Run id.")],
               judge: Annotated[str, typer.Option("--judge", help="Scoring judge.")] = "heuristic") -> None:
        """Print citation recall and precision per model with n and the state counts."""
        from core.store.db import get_engine

        from .analysis import citation_table

        typer.echo(citation_table(get_engine(), [run_id], judge).to_string(index=False))

    @group.command("build")
    def build(source: Annotated[Path, typer.Argument(help="ALCE data file (JSON) or records (JSONL).")],
              out: Annotated[Path, typer.Option("--out", help="Folder for instances.jsonl.")] = Path(
                  "var/built/citation"),
              fmt: Annotated[str, typer.Option("--format", help="alce or records.")] = "",
              limit: Annotated[int | None, typer.Option(help="At most this many questions.")] = None) -> None:
        """Write citation instances and print what was built and skipped."""
        from .builder import build as build_questions

        result = build_questions(source, out, fmt=fmt, limit=limit)
        for line in [*result.summary, *(f"skipped: {s}" for s in result.skipped)]:
            typer.echo(line)
        typer.echo(f"wrote {result.instances} instances to {result.out}")
