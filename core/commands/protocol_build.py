"""`gauntlet <protocol> build SOURCE`: a protocol command's build subcommand, calling the builder its package declares
(`Protocol.builder`, the one the Build benchmark page runs), then printing its summary and skipped items."""

# no `from __future__ import annotations`: typer reads the options' help from the closure's variables, so the
# annotations are evaluated when the command is defined
from pathlib import Path
from typing import Annotated

import typer


def add_build_command(group: typer.Typer, protocol: str, source_help: str, format_help: str) -> None:
    """Register `build` on a protocol's command group: SOURCE, --out, --format, --seed, --limit."""

    @group.command("build")
    def build(source: Annotated[Path, typer.Argument(help=source_help)],
              out: Annotated[Path, typer.Option("--out", help="Folder for instances.jsonl.")] = Path(
                  f"var/built/{protocol}"),
              fmt: Annotated[str, typer.Option("--format", help=format_help)] = "",
              seed: Annotated[int, typer.Option(help="Same seed, same file.")] = 0,
              limit: Annotated[int | None, typer.Option(help="At most this many items.")] = None) -> None:
        """Write out/instances.jsonl with the protocol's builder; print what was built and skipped."""
        from core.protocols import get_protocol

        builder = get_protocol(protocol).builder
        assert builder is not None, f"protocol {protocol!r} declares no builder"
        result = builder.function()(source, out, fmt=fmt, seed=seed, limit=limit)
        for line in [*result.summary, *(f"skipped: {s}" for s in result.skipped)]:
            typer.echo(line)
        typer.echo(f"wrote {result.instances} instances to {result.out}")
