"""RAG Gauntlet scoring package: data model, IO, checkers, judges, metrics, stats, runner, CLI."""

__version__ = "0.1.0"
