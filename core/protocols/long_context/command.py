"""`gauntlet long-context report|build`: which setting wins per generator and task, with the cost of each; questions
built from the user's copy of LaRA."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

COMMAND = "long-context"
HELP = "RAG vs long context: accuracy with chunks and with the whole document, the winner and the cost of each."


def register(app: typer.Typer) -> None:
    """Register `gauntlet long-context report` and `build` on the app."""
    group = typer.Typer(help=HELP, no_args_is_help=True)
    app.add_typer(group, name=COMMAND)

    @group.command("report")
    def report(run_id: Annotated[int, typer.Argument(help="Run id.")],
               judge: Annotated[str, typer.Option("--judge", help="Scoring judge.")] = "heuristic",
               detail: Annotated[bool, typer.Option("--detail", help="Accuracy by task and setting with every "
                                                                     "state's count.")] = False) -> None:
        """Print the winner per generator and task (or the detailed table)."""
        from core.store.db import get_engine

        from .analysis import setting_table, setting_winners

        engine = get_engine()
        table = setting_table(engine, [run_id], judge) if detail else setting_winners(engine, [run_id], judge)
        typer.echo(table.to_string(index=False))

    @group.command("build")
    def build(source: Annotated[Path, typer.Argument(help="Your copy of the LaRA repository.")],
              out: Annotated[Path, typer.Option("--out", help="Folder for instances.jsonl.")] = Path(
                  "var/built/long_context"),
              length: Annotated[str, typer.Option("--length", help="32k or 128k.")] = "32k",
              limit: Annotated[int | None, typer.Option(help="At most this many questions.")] = None) -> None:
        """Write the questions with their chunks and whole documents; print what was built and skipped."""
        from .builder import build as build_questions

        result = build_questions(source, out, fmt=length, limit=limit)
        for line in [*result.summary, *(f"skipped: {s}" for s in result.skipped)]:
            typer.echo(line)
        typer.echo(f"wrote {result.instances} instances to {result.out}")
