"""Account and label commands: `gauntlet user add|list|set`, `gauntlet labels export|import`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from core.commands import lazy_module
from core.config import database_url
from core.permissions import ROLES
from core.store.label_models import KINDS

auth = lazy_module("core.review.auth")
sets = lazy_module("core.ingest.sets")
labels = lazy_module("core.review.annotations")  # not `annotations`: that name is the __future__ import's
label_import = lazy_module("core.review.label_import")


def _engine():
    from core.store.db import get_engine, upgrade

    url = database_url()
    upgrade(url)
    return get_engine(url)


def _domains(values: list[str] | None) -> list[str]:
    return [d.strip() for v in values or [] for d in v.split(",") if d.strip()]


def register(app: typer.Typer) -> None:
    user_app = typer.Typer(help="Accounts: admins, experts (with domains), analysts, viewers.", no_args_is_help=True)
    labels_app = typer.Typer(help="Human labels: export to and import from JSONL (one label per line).", no_args_is_help=True)
    app.add_typer(user_app, name="user")
    app.add_typer(labels_app, name="labels")

    @user_app.command("add")
    def add(
        name: Annotated[str, typer.Argument(help="Username.")],
        role: Annotated[str, typer.Option("--role", help=f"One of {', '.join(ROLES)}.")] = "viewer",
        domains: Annotated[list[str] | None, typer.Option("--domains", help="Expert domains (repeat or comma-separate).")] = None,
        email: Annotated[str | None, typer.Option("--email", help="Email for single sign-on.")] = None,
        password_stdin: Annotated[bool, typer.Option("--password-stdin", help="Read the password from stdin.")] = False,
    ) -> None:
        """Create an account; without --password-stdin a random password is generated and printed once."""
        password = sys.stdin.readline().rstrip("\n") if password_stdin else auth.generate_password()
        try:
            sets.check_domains(_engine(), _domains(domains))
            auth.create_user(_engine(), name, role, password, _domains(domains), email)
        except ValueError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from exc
        typer.echo(f"created {role} {name!r}" + ("" if password_stdin else f" with password: {password}"))

    @user_app.command("set")
    def set_(
        name: Annotated[str, typer.Argument(help="Username.")],
        role: Annotated[str | None, typer.Option("--role")] = None,
        domains: Annotated[list[str] | None, typer.Option("--domains")] = None,
        active: Annotated[bool | None, typer.Option("--active/--disabled")] = None,
        password_stdin: Annotated[bool, typer.Option("--password-stdin")] = False,
    ) -> None:
        """Change an account's role, domains, status or password."""
        password = sys.stdin.readline().rstrip("\n") if password_stdin else None
        try:
            sets.check_domains(_engine(), _domains(domains) if domains else [])
            auth.update_user(_engine(), name, role=role, domains=_domains(domains) if domains else None, active=active,
                        password=password)
        except ValueError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from exc
        typer.echo(f"updated {name!r}")

    @user_app.command("list")
    def list_() -> None:
        """List accounts (never passwords)."""
        for u in auth.list_users(_engine()):
            state = "" if u.active else " (disabled)"
            typer.echo(f"{u.username}\t{u.role}\t{','.join(u.domains)}\t{u.email or ''}{state}")

    @user_app.command("first-admin")
    def first_admin() -> None:
        """Create the 'admin' account with a random password when no account exists yet."""
        typer.echo(auth.ensure_first_admin(_engine()) or "accounts exist already; nothing to do")

    @labels_app.command("export")
    def export(
        path: Annotated[Path, typer.Argument(help="Output JSONL file, e.g. annotations/labels.jsonl.")],
        kind: Annotated[list[str] | None, typer.Option("--kind", help=f"Only these kinds: {', '.join(KINDS)}.")] = None,
    ) -> None:
        """Write every label (verification, gold_label, adjudication) as one JSON object per line."""
        typer.echo(f"exported {labels.export_annotations(_engine(), path, kind or None)} labels to {path}")

    @labels_app.command("import")
    def import_(path: Annotated[Path, typer.Argument(help="JSONL file of labels.")]) -> None:
        """Import labels atomically: one bad line imports nothing and is reported with its line number and field."""
        report = label_import.import_annotations(_engine(), path, cli=True)
        if not report.ok:
            for error in report.errors:
                typer.echo(error.located(path), err=True)
            raise typer.Exit(1)
        typer.echo(f"imported {report.imported} labels ({report.skipped} already present)")
