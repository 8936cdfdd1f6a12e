"""CLI command modules; each exposes register(app) and its commands are listed in core.cli.COMMANDS.

The root group (core.cli.LazyGroup, a GuardedGroup) makes every command's unexpected error one readable line on
stderr and exit code 1 instead of a traceback (GAUNTLET_DEBUG=1 shows the traceback).
Keep these modules light to import: a command imports its heavy dependencies inside its body.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types

import typer
from typer.core import TyperGroup

DEBUG_ENV = "GAUNTLET_DEBUG"


def error_line(exc: BaseException) -> str:
    """One readable line for an error: the file for OS errors, the database's own words for database errors."""
    if isinstance(exc, OSError) and exc.filename is not None:
        text = f"{exc.strerror or type(exc).__name__}: {exc.filename}"
    elif type(exc).__module__.startswith("sqlalchemy"):
        text = f"database error: {getattr(exc, 'orig', None) or exc}"
    elif isinstance(exc, ValueError | LookupError | RuntimeError | PermissionError) and str(exc):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}"
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(exc).__name__)
    return first if len(first) <= 500 else first[:497] + "..."


class GuardedGroup(TyperGroup):
    """A command group whose commands end with one 'error: ...' line and exit 1 on any unexpected exception."""

    def invoke(self, ctx) -> object:
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, typer.TyperException):  # typer's (vendored) click errors, e.g. BadParameter
            raise
        except Exception as exc:  # noqa: BLE001 - the CLI's last line of defence
            if os.environ.get(DEBUG_ENV):
                raise
            typer.echo(f"error: {error_line(exc)}", err=True)
            raise typer.Exit(1) from None


def lazy_module(name: str) -> types.ModuleType:
    """Module `name`, imported on first attribute access (for a command module that uses it in many functions)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"no module named {name!r}", name=name)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return module
