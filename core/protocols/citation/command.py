"""`gauntlet citation report|build|alce-check|alce-import`: citation recall and precision per model of a run;
instances from ALCE's data files or question records; ALCE's published outputs checked in memory or stored as runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from core.commands.protocol_build import add_build_command

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

        from .analysis import citation_table, expert_support_agreement

        typer.echo(citation_table(get_engine(), [run_id], judge).to_string(index=False))
        typer.echo(f"judge {judge} vs experts' citation-support labels, per sentence: "
                   f"{expert_support_agreement(get_engine(), [run_id], judge).line()}")

    @group.command("alce-check")
    def alce_check(source: Annotated[Path, typer.Argument(help="ALCE's human_eval_citations_completed.json (or the "
                                                                "shipped subset, data/suites/alce/).")],
                   judge: Annotated[str, typer.Option("--judge", help="Support judge: heuristic or llm:<model>.")]
                   = "heuristic",
                   limit: Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N outputs.")]
                   = None) -> None:
        """Import ALCE's published outputs, score them with JUDGE and print every agreement with n."""
        from core.scoring.judges import resolve_judge
        from core.store.db import get_engine

        from .analysis_alce import compare_sync
        from .builder_alce_eval import AlceRecordError, read_alce_human_eval

        try:
            responses = read_alce_human_eval(source)[:limit]
        except AlceRecordError as exc:
            raise typer.BadParameter(str(exc), param_hint="SOURCE") from None
        typer.echo("\n".join(compare_sync(resolve_judge(judge, get_engine()), responses).lines()))

    @group.command("alce-import")
    def alce_import(source: Annotated[Path, typer.Argument(help="ALCE's human_eval_citations_completed.json (or the "
                                                                 "shipped subset, data/suites/alce/).")],
                    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N outputs.")]
                    = None) -> None:
        """Import ALCE's published outputs as stored runs (a set and a run per result file); score them with
        `gauntlet score RUN`."""
        from core.store.db import get_engine

        from .builder_alce_eval import AlceRecordError
        from .builder_alce_import import import_alce_outputs

        try:
            report = import_alce_outputs(get_engine(), source, limit=limit)
        except AlceRecordError as exc:
            raise typer.BadParameter(str(exc), param_hint="SOURCE") from None
        typer.echo("\n".join(report.lines()))
        if not report.ok:
            raise typer.Exit(1)

    add_build_command(group, "citation", "ALCE data file (JSON) or records (JSONL).", "alce or records (default: by the file's extension).")
