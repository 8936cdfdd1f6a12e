"""The `gauntlet` command line: one table names every command, the module that registers it and its one-line help.

A command's module is imported only when that command runs (or shows its own help), so `gauntlet --help` and
`gauntlet ifeval` never pay for pandas, the database layer or the other commands' dependencies.
Each module exposes register(app); tests/test_cli_startup.py checks the table against what the modules register.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

import typer
from typer.core import TyperCommand, TyperGroup

from core.commands import GuardedGroup
from core.plugins import protocol_commands

# (command, module that registers it, the help line `gauntlet --help` shows: the command's own first line);
# a protocol package's command (core/protocols/<id>/command.py) is not listed here: core.plugins finds it.
CORE_COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("init-db", "core.commands.data",
     "Create or migrate the database; load the bundled sample benchmark if it is empty."),
    ("validate", "core.commands.data",
     "Check every line of a benchmark JSONL file; report each problem with line and field; exit 1 if any."),
    ("import", "core.commands.data",
     "Import a benchmark atomically (native JSONL, or --format LAYOUT): any bad record imports nothing."),
    ("export", "core.commands.data", "Export the latest instance versions in the interchange format."),
    ("stats", "core.commands.data", "Print each protocol's composition: its declared tables (EnterpriseRAG's Tables 5 and 6), else its facets."),
    ("schema", "core.commands.data",
     "Write the JSON Schema of the interchange format (data/schema/instance.schema.json)."),
    ("ifeval", "core.commands.checks",
     "Score IFEval responses with our checkers; print prompt- and instruction-level accuracy, strict and loose."),
    ("checkers", "core.commands.checks", "List every registered rule checker id with its kwargs."),
    ("build", "core.commands.build",
     "Build benchmark instances: retrieve, fuse constraints, simulate noisy / gap / conflict bundles."),
    ("draft-queries", "core.commands.build",
     "Draft candidate questions from documents with an LLM, each marked generated (experts verify them)."),
    ("run", "core.commands.run",
     "Generate answers for models x instances; every item ends done or failed with a reason."),
    ("report", "core.commands.run",
     "Per-model results of a run under one judge: generation figures and every metric with its CI and n."),
    ("fake-server", "core.commands.run",
     "Serve the OpenAI and Anthropic wire formats locally for tests, demos and benchmarks."),
    ("gate", "core.commands.gate",
     "Gate a candidate run against a baseline: exit 0 pass, 2 regression, 1 could not decide, 64 usage error."),
    ("decide", "core.commands.decide",
     "The decision report: candidates, data, judges, corrected estimates, rank-sets, segments, cost, recommendation."),
    ("score", "core.commands.score",
     "Score every done response of RUN_ID: rule checks, judged constraints and RAG metrics (idempotent)."),
    ("models", "core.commands.run", "Register and list model configurations (keys stay in env / secrets.toml)."),
    ("user", "core.commands.users", "Accounts: admins, experts (with domains), analysts, viewers."),
    ("labels", "core.commands.users", "Human labels: export to and import from JSONL (one label per line)."),
    ("traces", "core.commands.traces",
     "Production traces: sample items into the experts' queues; promote verified ones into a versioned set."),
    ("reproduce", "core.commands.reproduce",
     "Reproduce a seed paper's main results table from scored runs: its rows and columns, CI and n in every cell."),
    ("judge", "core.commands.judge",
     "Check a judge against human labels (judge check) and probe it for biases (judge probe)."),
)
# Renamed commands: the old name still runs the new command, after a deprecation notice on stderr (not listed in help).
RENAMED_COMMANDS: dict[str, str] = {"ragstress": "kb-corruption", "rag-stress": "misleading-evidence"}


def all_commands() -> tuple[tuple[str, str, str], ...]:
    """The core commands, then every protocol package's command (including extra packages registered so far)."""
    return (*CORE_COMMANDS, *protocol_commands())


COMMANDS = all_commands()
COMMAND_MODULES: list[str] = list(dict.fromkeys(module for _, module, _ in COMMANDS))


@cache
def module_commands(module: str) -> dict[str, TyperCommand | TyperGroup]:
    """The click commands a command module registers, by name (the module is imported here, once)."""
    registry = typer.Typer()
    importlib.import_module(module).register(registry)
    commands = typer.main.get_group(registry).commands.items()
    return {name: c for name, c in commands if isinstance(c, TyperCommand | TyperGroup)}  # typer builds only these


def deprecated_name(old: str) -> str:
    """The current name of renamed command `old`, after telling stderr that the old name is deprecated."""
    new = RENAMED_COMMANDS[old]
    typer.echo(f"warning: `gauntlet {old}` is deprecated; use `gauntlet {new}` (same options)", err=True)
    return new


class LazyGroup(GuardedGroup):
    """The root group: lists every command from COMMANDS and imports a command's module only to run or show it."""

    def __init__(self, **attrs) -> None:
        super().__init__(**attrs)
        listed = all_commands()
        self._module_of = {name: module for name, module, _ in listed}
        self.commands.update({name: TyperCommand(name=name, help=help_) for name, _, help_ in listed})
        self._listing = False

    def get_command(self, ctx, cmd_name: str):
        """The real command (its module imported now), or the table's stand-in while the help lists commands."""
        if not self._listing and cmd_name in RENAMED_COMMANDS:
            cmd_name = deprecated_name(cmd_name)
        if self._listing or cmd_name not in self._module_of:
            return super().get_command(ctx, cmd_name)
        return module_commands(self._module_of[cmd_name])[cmd_name]

    @contextmanager
    def _stand_ins(self) -> Iterator[None]:
        self._listing = True
        try:
            yield
        finally:
            self._listing = False

    def format_help(self, ctx, formatter) -> None:
        with self._stand_ins():
            return super().format_help(ctx, formatter)

    def shell_complete(self, ctx, incomplete: str) -> list:
        with self._stand_ins():
            return super().shell_complete(ctx, incomplete)


app = typer.Typer(
    name="gauntlet",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    cls=LazyGroup,
)


@app.callback()
def main() -> None:
    """RAG Gauntlet: benchmark LLM generators for enterprise RAG under noisy, missing and conflicting retrieval."""


if __name__ == "__main__":
    app()
