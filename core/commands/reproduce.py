"""`gauntlet reproduce PROTOCOL`: a seed paper's main table from scored runs, in the paper's own shape, as Markdown,
CSV or LaTeX (core.protocols.paper). The commands that lead from the shared slices to it are on each protocol's docs
page, under "Reproducing Table N"."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def parse_settings(pairs: list[str]) -> dict[str, str]:
    """`--set name=value` options as a dict; a pair without '=' raises BadParameter."""
    settings = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise typer.BadParameter(f"expected name=value, got {pair!r}", param_hint="--set")
        settings[name.strip()] = value.strip()
    return settings


def reproduce(
    protocol: Annotated[str, typer.Argument(help="Protocol id: one whose package declares paper tables "
                                             "(docs/protocols.md lists them).")],
    run: Annotated[list[int], typer.Option("--run", help="Scored run id (repeat for several runs).")] = [],  # noqa: B006
    table: Annotated[str | None, typer.Option("--table", help="The paper's table number (default: its main "
                                               "table); --list shows them.")] = None,
    judge: Annotated[str | None, typer.Option("--judge", help="Judge whose verdicts fill the table (default: the "
                                               "one that scored the runs, LLM judges first).")] = None,
    settings: Annotated[list[str], typer.Option("--set", help="A table setting name=value (see --list).")] = [],  # noqa: B006
    fmt: Annotated[str, typer.Option("--format", help="markdown | csv | latex")] = "markdown",
    out: Annotated[Path | None, typer.Option("--out", help="Write the table to this file instead of stdout.")] = None,
    list_tables: Annotated[bool, typer.Option("--list", help="List the protocol's tables and settings.")] = False,
) -> None:
    """Reproduce a seed paper's main results table from scored runs: its rows and columns, CI and n in every cell."""
    from core.analysis.readmodel import run_judges
    from core.commands.run import _engine
    from core.protocols import get_protocol
    from core.protocols.paper import FORMATS, build_table, render, table_spec
    from core.store.run_kinds import require_evaluation_runs

    try:
        spec_list = get_protocol(protocol).paper_tables
        if list_tables:
            for spec in spec_list:
                options = "; ".join(f"{k}: {' | '.join(v)}" for k, v in spec.settings.items()) or "no settings"
                typer.echo(f"Table {spec.key}: {spec.title} ({options})")
            return
        spec = table_spec(spec_list, table, protocol)
        if not run:
            raise typer.BadParameter("name the scored runs: --run ID (repeat for several)", param_hint="--run")
        if fmt not in FORMATS:
            raise typer.BadParameter(f"format must be one of {', '.join(FORMATS)}", param_hint="--format")
        engine = _engine()
        require_evaluation_runs(engine, run)
        chosen = judge or next(iter(run_judges(engine, run)), None)
        if chosen is None:
            typer.echo(f"runs {run} hold no verdicts: score them first (gauntlet score RUN_ID)", err=True)
            raise typer.Exit(2)
        text = render(build_table(spec, engine, run, chosen, parse_settings(settings)), fmt)
    except (KeyError, ValueError) as error:
        typer.echo(str(error.args[0] if isinstance(error, KeyError) and error.args else error), err=True)
        raise typer.Exit(2) from None
    if out is None:
        typer.echo(text, nl=False)
    else:
        out.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {out}", err=True)


def register(app: typer.Typer) -> None:
    """Add `reproduce` to the CLI."""
    app.command("reproduce")(reproduce)
