"""`gauntlet toy-echo report RUN_ID`: the toy protocol's aggregate of a run."""

from __future__ import annotations

from typing import Annotated

import typer

COMMAND = "toy-echo"
HELP = "Toy echo: echo match per model of a run, with the state counts."


def register(app: typer.Typer) -> None:
    """Register `gauntlet toy-echo report` on the app."""
    group = typer.Typer(help=HELP, no_args_is_help=True)
    app.add_typer(group, name=COMMAND)

    @group.command("report")
    def report(run_id: Annotated[int, typer.Argument(help="Run id.")],
               judge: Annotated[str, typer.Option("--judge", help="Scoring judge.")] = "heuristic") -> None:
        """Print echo match per model with n and the state counts."""
        from core.store.db import get_engine

        from .analysis import accuracy

        typer.echo(accuracy(get_engine(), [run_id], judge).to_string(index=False))
