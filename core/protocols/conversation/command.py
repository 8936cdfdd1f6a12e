"""`gauntlet conversation report|build|non-ideal`: per-turn scores of a run by a breakdown, the later-turn drop; turns
built from MTRAG-UN generation tasks, the team's conversations or its production traces; one turn made non-ideal."""

from __future__ import annotations

from pathlib import Path
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

    @group.command("non-ideal")
    def non_ideal(instances: Annotated[Path, typer.Argument(help="Built conversation instances (JSONL).")],
                  turn: Annotated[int, typer.Option("--turn", help="The turn to make non-ideal.")],
                  mode: Annotated[str, typer.Option("--mode", help="noisy, gap or conflict.")],
                  out: Annotated[Path, typer.Option("--out", help="Where to write the instances.")]) -> None:
        """Add a noisy, gap or conflict copy of one turn of every conversation (its earlier turns unchanged)."""
        import json

        from .builder import with_non_ideal_turn

        records = [json.loads(line) for line in instances.read_text(encoding="utf-8").splitlines() if line.strip()]
        made, skipped = with_non_ideal_turn(records, turn, mode)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in made), encoding="utf-8")
        for why in skipped:
            typer.echo(f"skipped: {why}")
        typer.echo(f"wrote {len(made)} instances ({len(made) - len(records)} non-ideal turns) to {out}")

    add_build_command(group, "conversation", "MTRAG-UN generation tasks, conversations (JSONL) or a trace export.",
                      "mtrag (default), turns, or a trace format: otel, openinference, langfuse, phoenix (sessions "
                      "become conversations).")
