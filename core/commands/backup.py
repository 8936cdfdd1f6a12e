"""Whole-database backup and restore for the CLI: `gauntlet export --all DIR` and `gauntlet import --all DIR`.

The `export` and `import` commands (core.commands.data, which registers them) hand `--all` over to these functions;
the work is core.store.backup's.
"""

from __future__ import annotations

from pathlib import Path

import typer

from core.config import database_url
from core.store.backup import BackupError, export_all, import_all
from core.store.db import get_engine, upgrade


def _migrated_engine():
    url = database_url()
    upgrade(url)
    return get_engine(url)


def _or_fail(action, after: str):
    try:
        return action()
    except BackupError as exc:
        for problem in exc.problems:
            typer.echo(str(problem), err=True)
        typer.echo(after, err=True)
        raise typer.Exit(1) from None


def export_everything(directory: Path, with_password_hashes: bool) -> None:
    """Back up every table to `directory` (new or empty); password hashes only when asked."""
    report = _or_fail(lambda: export_all(_migrated_engine(), directory, password_hashes=with_password_hashes),
                      "backup not written")
    hashes = "included" if with_password_hashes else "left out (--with-password-hashes to include them)"
    typer.echo(f"wrote {report.total} rows of {len(report.rows)} tables to {directory} (manifest.json); "
               f"password hashes {hashes}")


def import_everything(directory: Path, replace: bool) -> None:
    """Restore a backup into the database (migrated first) in one transaction; every problem with file, line, field."""
    report = _or_fail(lambda: import_all(_migrated_engine(), directory, replace=replace),
                      "nothing imported; the database is unchanged")
    typer.echo(f"restored {report.total} rows of {len(report.rows)} tables from {directory}"
               + ("" if report.manifest.get("password_hashes") else
                  "; accounts have no password (gauntlet user set NAME --password-stdin, or single sign-on)"))
