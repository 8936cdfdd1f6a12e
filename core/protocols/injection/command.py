"""`gauntlet injection report RUN_ID`: attack success and the task's answer per model of a run, by a breakdown."""

from __future__ import annotations

from typing import Annotated

import typer

from core.commands.protocol_build import add_build_command

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

    add_build_command(group, "injection", "A BIPIA folder, or question-answer records (JSONL).", "bipia or qa (default: bipia for a folder).")
