"""`gauntlet conversation report|build`: per-turn scores of a run by a breakdown, the later-turn drop; turns built
from MTRAG-UN generation tasks or the team's conversations."""

from __future__ import annotations

from typing import Annotated

import typer

from core.commands.protocol_build import add_build_command

COMMAND = "conversation"
HELP = "Multi-turn conversations: per-turn scores by turn, question type, multi-turn type; the later-turn drop."


def register(app: typer.Typer) -> None:
    """Register `gauntlet conversation report` and `build` on the app."""
    group = typer.Typer(help=HELP, no_args_is_help=True)
    app.add_typer(group, name=COMMAND)

    @group.command("report")
    def report(run_id: Annotated[int, typer.Argument(help="Run id.")],
               judge: Annotated[str, typer.Option("--judge", help="Scoring judge.")] = "heuristic",
               by: Annotated[str, typer.Option("--by", help="turn, turn_group, question_type, multi_turn, "
                                                            "answerability or drop.")] = "drop") -> None:
        """Print the later-turn drop, or the per-turn metrics by a breakdown, with n and the state counts."""
        from core.store.db import get_engine

        from .analysis import later_turn_drop, turn_table

        engine = get_engine()
        table = later_turn_drop(engine, [run_id], judge) if by == "drop" else turn_table(engine, [run_id], judge, by)
        typer.echo(table.to_string(index=False))

    add_build_command(group, "conversation", "MTRAG-UN generation tasks or conversations (JSONL).", "mtrag (default) or turns.")
