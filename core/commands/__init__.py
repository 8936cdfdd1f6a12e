"""CLI command modules; each exposes register(app) and is listed in core.cli.COMMAND_MODULES."""
