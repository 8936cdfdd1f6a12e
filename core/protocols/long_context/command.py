"""`gauntlet long-context report|build`: which setting wins per generator and task, with the cost of each; questions
built from the user's copy of LaRA."""

from __future__ import annotations

from typing import Annotated

import typer

from core.commands.protocol_build import add_build_command

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

    add_build_command(group, "long_context", "Your copy of the LaRA repository.", "32k (default) or 128k: the LaRA context length.")
