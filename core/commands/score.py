"""The `gauntlet score` command: judge a run's responses with the heuristic or an LLM judge."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Annotated

import typer

from core.config import default_judge

if TYPE_CHECKING:
    from core.scoring.scorer import ScoreReport


def heuristic_warning(why: str) -> str:
    """The stderr line that says loudly that the heuristic judge is in use, and how to configure an LLM judge."""
    from core.scoring.judges.names import HEURISTIC, judge_label

    return (f"warning: scoring with the {judge_label(HEURISTIC)} judge ({why}): its numbers come from lexical rules, "
            "not a model. To use an LLM judge, pass --judge llm:<model name>, or set GAUNTLET_JUDGE=llm:<model name>, "
            'or add judge = "llm:<model name>" to .streamlit/secrets.toml.')


def format_report(report: ScoreReport) -> str:
    """A short human-readable summary of a scoring pass."""
    from core.scoring.judges.names import judge_label

    lines = [
        f"run {report.run_id} scored by {judge_label(report.judge)} ({report.constraint_mode} constraints): "
        f"{report.responses} responses, {report.verdicts_written} verdicts written, "
        f"{report.verdicts_skipped} already present",
        f"judge calls: {report.total_calls} {dict(sorted(report.calls.items()))}; cost ${report.cost_usd:.4f}",
        f"context claims: {report.context_claims_extracted} extracted, {report.context_claims_reused} reused",
    ]
    if report.errors:
        lines.append(f"judge errors (excluded from denominators): {dict(sorted(report.errors.items()))}")
    if report.not_applicable:
        lines.append(f"not applicable / unjudged: {dict(sorted(report.not_applicable.items()))}")
    if report.unparseable:
        lines.append(f"unparseable answers (no option letter; counted as declared): "
                     f"{dict(sorted(report.unparseable.items()))}")
    return "\n".join(lines)


def resolve_default(judge: str | None) -> str:
    """The --judge value, else the configured judge, else the heuristic judge announced loudly on stderr."""
    from core.scoring.judges.names import HEURISTIC, judge_label

    if judge:
        return judge
    configured = default_judge()
    if configured and configured != HEURISTIC:
        typer.echo(f"judge: {judge_label(configured)} (configured default)", err=True)
        return configured
    typer.echo(heuristic_warning("the configured default" if configured else "no LLM judge is configured"), err=True)
    return HEURISTIC


def register(app: typer.Typer) -> None:
    """Register the score command on the gauntlet app."""

    @app.command("score")
    def score_command(
        run_id: int,
        judge: Annotated[str | None, typer.Option(
            "--judge", help="'heuristic', 'llm:<model name>' or 'llm:<model name>@single'. Default: the configured "
            "judge (GAUNTLET_JUDGE or judge in .streamlit/secrets.toml), else heuristic with a warning.")] = None,
        constraint_mode: Annotated[
            str, typer.Option("--constraint-mode", help="batched: one call per response (stored as llm:<model>); "
                              "single: one call per constraint (stored as llm:<model>@single).")
        ] = "batched",
        concurrency: Annotated[int, typer.Option(
            "--concurrency", min=1, help="Judge calls in flight at once, across all responses.")] = 16,
    ) -> None:
        """Score every done response of RUN_ID: rule checks, judged constraints and RAG metrics (idempotent)."""
        from core.pipeline import score_and_summarise
        from core.store.db import get_engine
        from core.store.run_kinds import require_evaluation_runs

        if constraint_mode not in ("single", "batched"):
            raise typer.BadParameter("must be 'single' or 'batched'", param_hint="--constraint-mode")

        judge = resolve_default(judge)

        def progress(stage: str, done: int, total: int) -> None:
            if stage.startswith("scoring") and (done == total or done % 25 == 0):
                typer.echo(f"  {done}/{total} responses", err=True)

        try:
            require_evaluation_runs(get_engine(), [run_id])  # a build's spend row has no responses to score
            result = asyncio.run(score_and_summarise(get_engine(), run_id, [judge], concurrency=concurrency,
                                                     constraint_mode=constraint_mode, progress=progress))
        except (LookupError, ValueError) as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        for report in result.scores:
            typer.echo(format_report(report))
