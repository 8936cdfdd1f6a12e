"""The gate command: a candidate run against a baseline run under a rules file; exit 0 pass, 2 significant
regression, 1 could not decide (each with its reason), 64 a usage error (a mistyped option or argument); a Markdown
summary for a pull request and a JSON file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from typer._click.exceptions import UsageError  # typer vendors click: its commands raise this one
from typer.core import TyperCommand

from core.config import database_url

USAGE_ERROR = 64  # sysexits' EX_USAGE: never one of the verdicts' codes (0 pass, 1 undecided, 2 regression)


class GateCommand(TyperCommand):
    """The gate's command: a usage error (unknown option, missing or malformed argument) exits USAGE_ERROR, not
    click's 2, which is the gate's 'significant regression'."""

    def make_context(self, info_name, args, parent=None, **extra):
        """Parse the arguments; a usage error carries the gate's own exit code."""
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except UsageError as error:
            error.exit_code = USAGE_ERROR
            raise


def gate(
    baseline: Annotated[int, typer.Argument(help="Baseline run id.")],
    candidate: Annotated[int, typer.Argument(help="Candidate run id.")],
    rules: Annotated[Path, typer.Option(help="Rules file (YAML): gated metrics, tolerated drops, alpha, segments; "
                                             "see docs/gate.md.")] = Path("gauntlet-gate.yaml"),
    judge: Annotated[str | None, typer.Option(help="Judge whose verdicts to compare (default: the one judge that "
                                                   "scored both runs).")] = None,
    baseline_model: Annotated[str | None, typer.Option(help="Model of the baseline run (when it holds several).")] = None,
    candidate_model: Annotated[str | None, typer.Option(help="Model of the candidate run (when it holds several).")] = None,
    markdown: Annotated[Path | None, typer.Option(help="Write the Markdown summary here (default: print it).")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the JSON verdict here.")] = None,
) -> None:
    """Gate a candidate run against a baseline: exit 0 pass, 2 regression, 1 could not decide, 64 usage error."""
    from core.analysis import gate as core_gate
    from core.store.db import get_engine, upgrade

    try:
        parsed = core_gate.load_rules(rules)
    except (OSError, ValueError) as error:
        typer.echo(f"rules {rules}: {error}", err=True)
        raise typer.Exit(core_gate.UNDECIDED) from None
    url = database_url()
    upgrade(url)
    result = core_gate.run_gate(get_engine(url), baseline, candidate, parsed, judge, baseline_model, candidate_model)
    summary = core_gate.markdown_summary(result)
    if markdown is None:
        typer.echo(summary)
    else:
        markdown.write_text(summary, encoding="utf-8")
    if json_out is not None:
        json_out.write_text(json.dumps(core_gate.json_document(result), indent=2, ensure_ascii=False), encoding="utf-8")
    typer.echo(f"gate: {result.verdict}" + "".join(f"\n  {reason}" for reason in result.reasons), err=True)
    raise typer.Exit(result.code)


def model_args(config: dict) -> list[str]:
    """The `gauntlet models add` arguments of a JSON model configuration (name, provider, model_name, prices,
    temperature, max_output_tokens, settings), as the CI script and the pytest plugin register models."""
    args = [config["name"], "--provider", config.get("provider", "openai"),
            "--model-name", config.get("model_name", config["name"])]
    for key, flag in (("price_in", "--price-in"), ("price_out", "--price-out"), ("temperature", "--temperature"),
                      ("max_output_tokens", "--max-output-tokens")):
        if config.get(key) is not None:
            args += [flag, str(config[key])]
    for key, value in (config.get("settings") or {}).items():
        args += ["--setting", f"{key}={value if isinstance(value, str) else json.dumps(value)}"]
    return args


def register(app: typer.Typer) -> None:
    """Add gate to the CLI."""
    app.command("gate", cls=GateCommand)(gate)
