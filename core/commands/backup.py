"""Whole-database backup and restore for the CLI: `gauntlet export --all DIR` and `gauntlet import --all DIR`.

The `export` and `import` commands (core.commands.data, which registers them) hand `--all` over to these functions;
the work is core.store.backup's. A signing key is read only from the environment variable the operator names.
"""

from __future__ import annotations

import os
from pathlib import Path

import typer

from core.config import database_url
from core.store.backup import SIGNATURE, BackupError, export_all, import_all
from core.store.db import get_engine, upgrade

MIN_KEY_BYTES = 16


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


def key_from_env(variable: str | None) -> bytes | None:
    """The signing key held by environment variable `variable` (None when no variable is named); exits 2 when it is
    unset or shorter than MIN_KEY_BYTES."""
    if variable is None:
        return None
    key = os.environ.get(variable, "").encode("utf-8")
    if len(key) < MIN_KEY_BYTES:
        state = "is not set" if not key else f"holds {len(key)} bytes"
        typer.echo(f"environment variable {variable} {state}: a signing key needs at least {MIN_KEY_BYTES} bytes "
                   "(e.g. python -c 'import secrets; print(secrets.token_hex(32))')", err=True)
        raise typer.Exit(2)
    return key


def export_everything(directory: Path, with_password_hashes: bool, sign_key_env: str | None = None) -> None:
    """Back up every table to `directory` (new or empty); password hashes only when asked; signed when given a key."""
    key = key_from_env(sign_key_env)
    report = _or_fail(lambda: export_all(_migrated_engine(), directory, password_hashes=with_password_hashes,
                                         sign_key=key), "backup not written")
    hashes = "included" if with_password_hashes else "left out (--with-password-hashes to include them)"
    signed = f"; manifest signed ({SIGNATURE}, key from {sign_key_env})" if report.signed else ""
    typer.echo(f"wrote {report.total} rows of {len(report.rows)} tables to {directory} (manifest.json); "
               f"password hashes {hashes}{signed}")


def import_everything(directory: Path, replace: bool, with_accounts: bool = False,
                      verify_key_env: str | None = None) -> None:
    """Restore a backup into the database (migrated first) in one transaction; every problem with file, line, field.
    Accounts only with `with_accounts`; with `verify_key_env`, the manifest's signature must hold."""
    key = key_from_env(verify_key_env)
    report = _or_fail(lambda: import_all(_migrated_engine(), directory, replace=replace, with_accounts=with_accounts,
                                         verify_key=key),
                      "nothing imported; the database is unchanged")
    typer.echo(f"restored {report.total} rows of {len(report.rows)} tables from {directory}")
    if report.accounts:
        typer.echo(f"created {len(report.accounts)} accounts: "
                   + ", ".join(f"{name} ({role})" for name, role in report.accounts))
        if not report.manifest.get("password_hashes"):
            typer.echo("accounts have no password (gauntlet user set NAME --password-stdin, or single sign-on)")
    if report.verified:
        typer.echo(f"manifest signature verified (key from {verify_key_env})")
    elif report.signed:
        typer.echo("the backup is signed but its signature was not checked (--verify-key-env VAR)")
