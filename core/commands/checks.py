"""Checker commands: IFEval conformance report and the checker catalogue."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Register `gauntlet ifeval` and `gauntlet checkers` on the app."""

    @app.command("ifeval")
    def ifeval_command(
        input_data: Annotated[Path, typer.Option("--input-data", help="IFEval input_data.jsonl")],
        responses: Annotated[Path, typer.Option("--responses", help="JSONL of prompt/response pairs")],
        verdicts_out: Annotated[Path | None, typer.Option("--verdicts-out", help="Write per-key verdicts here")] = None,
        reference: Annotated[
            Path | None, typer.Option("--reference", help="reference_verdicts.jsonl to compare item by item")
        ] = None,
    ) -> None:
        """Score IFEval responses with our checkers; print prompt- and instruction-level accuracy, strict and loose."""
        from core.scoring.ifeval_conformance import compare_with_reference, format_report, run_ifeval, write_verdicts

        report = run_ifeval(input_data, responses)
        typer.echo(format_report(report))
        if verdicts_out:
            write_verdicts(report, verdicts_out)
            typer.echo(f"wrote per-key verdicts to {verdicts_out}")
        if reference:
            disagreements = compare_with_reference(report, reference)
            typer.echo(f"{len(disagreements)} instruction verdicts differ from {reference}")
            for d in disagreements:
                typer.echo(f"  {d}")

    @app.command("checkers")
    def checkers_command() -> None:
        """List every registered rule checker id with its kwargs."""
        from core.scoring.checkers import CHECKERS

        for name, cls in CHECKERS.items():
            fields = ", ".join(cls.Kwargs.model_fields) or "-"
            typer.echo(f"{name:<48} {fields}")
