"""`gauntlet traces sample|promote`: production items to the experts' queues, verified ones into a versioned set."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer

from core.config import database_url


def _engine():
    from core.store.db import get_engine, upgrade

    url = database_url()
    upgrade(url)
    return get_engine(url)


def _principal(username: str):
    """The account the command acts as; its role is re-read from the database by every write."""
    from core.review.auth import Principal

    now = datetime.now(UTC)
    return Principal(username, "", (), now, now)


def register(app: typer.Typer) -> None:
    """Register the traces command group on the gauntlet app."""
    traces_app = typer.Typer(help="Production traces: sample items into the experts' queues; promote verified ones "
                             "into a versioned set.", no_args_is_help=True)
    app.add_typer(traces_app, name="traces")

    @traces_app.command("sample")
    def sample(
        run_id: int,
        n: Annotated[int, typer.Option("--n", min=1, help="Items to draw.")] = 50,
        seed: Annotated[int, typer.Option("--seed", help="Seed of the draw.")] = 0,
        experts: Annotated[str, typer.Option("--experts", help="Comma-separated experts (default: every active "
                                             "expert).")] = "",
        as_user: Annotated[str, typer.Option("--as", help="The admin account the draw is made as.")] = "admin",
    ) -> None:
        """Draw N items of RUN_ID by segment x judge uncertainty into the labelling and verification queues, each
        with its inclusion probability recorded."""
        from core.review.auth import AuthError
        from core.review.traces import sample_traces

        chosen = [e.strip() for e in experts.split(",") if e.strip()] or None
        try:
            report = sample_traces(_engine(), _principal(as_user), run_id, n, seed, chosen)
        except (ValueError, AuthError, PermissionError) as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from None
        typer.echo(f"batch {report.batch}: {report.sampled} items sampled, {report.assignments} labelling assignments "
                   "(two experts each), their instances in the same experts' verification queues")
        for stratum, count in report.strata.items():
            typer.echo(f"  {stratum}: {count}")
        for domain, count in report.uncovered.items():
            typer.echo(f"  left out: {domain}: {count} items (fewer than two experts cover this domain)", err=True)

    @traces_app.command("promote")
    def promote(
        run_id: int,
        set_name: Annotated[str, typer.Option("--set", help="Base name of the versioned set: creates '<name> vN'.")],
        as_user: Annotated[str, typer.Option("--as", help="The admin account the promotion is made as.")] = "admin",
    ) -> None:
        """Put the sampled items of RUN_ID that experts accepted into the next version of a benchmark set."""
        from core.review.auth import AuthError
        from core.review.traces import promote_verified

        try:
            report = promote_verified(_engine(), _principal(as_user), run_id, set_name)
        except (ValueError, AuthError, PermissionError) as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from None
        waiting = f"{report.waiting} sampled items still waiting for verification, {report.rejected} rejected"
        if report.version is None:
            typer.echo(f"nothing new to promote: {report.accepted} accepted items, all in the latest version "
                       f"({waiting})")
            return
        v = report.version
        typer.echo(f"set {v.name!r}: {v.kept} kept from the previous version, {v.added} added ({waiting})")

    @traces_app.command("estimate")
    def estimate(
        run_id: int,
        judge: Annotated[str, typer.Option("--judge", help="The judge whose faithfulness scores are corrected.")] = "heuristic",
    ) -> None:
        """Faithfulness of RUN_ID's answers: the judge's mean, corrected by the experts' labels on the sample
        (inverse-probability weighted, so the recorded probabilities keep it unbiased)."""
        from core.review.traces import faithfulness_estimate

        e = faithfulness_estimate(_engine(), run_id, judge)
        judge_part = "no scores" if e.judge_mean is None else f"mean {e.judge_mean:.3f}"
        typer.echo(f"faithfulness by {judge}: {judge_part} over {e.judged} of {e.answers} answers (n judged / N)")
        if e.corrected is None:
            typer.echo(f"corrected: not available ({e.reason}); {e.labelled} labelled")
            return
        c = e.corrected
        typer.echo(f"corrected ({c.method}): {c.estimate:.3f} [{max(c.ci_low, 0.0):.3f}, {min(c.ci_high, 1.0):.3f}] "
                   f"from {c.n_labeled} expert labels; gold only (Horvitz-Thompson): {c.gold_mean:.3f} "
                   f"[{max(c.gold_ci_low, 0.0):.3f}, {min(c.gold_ci_high, 1.0):.3f}]")
