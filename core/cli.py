"""The `gauntlet` command line: each command module registers its commands on one Typer app."""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="gauntlet",
    help="RAG Gauntlet: benchmark LLM generators for enterprise RAG under noisy, missing and conflicting retrieval.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

COMMAND_MODULES: list[str] = [
    "core.commands.data",
    "core.commands.checks",
    "core.commands.build",
    "core.commands.run",
    "core.commands.score",
    "core.commands.users",
    "core.commands.rag_stress",
    "core.commands.lit_ragbench",
    "core.commands.ragstress",
    "core.commands.domainrag",
]

for module_name in COMMAND_MODULES:
    importlib.import_module(module_name).register(app)


if __name__ == "__main__":
    app()
