"""The decide command: the decision report (one self-contained HTML file) for runs under one judge and the picker's
weights, floors and budget; the Pick a generator page's button writes the same file for the same inputs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from core.config import database_url


def _pairs(values: list[str], option: str) -> dict[str, float]:
    """'metric=value' options as a dict, metric as `protocol:metric` (the default protocol's bare); a bad metric name
    or value is a usage error naming the known ones."""
    from core.analysis.decide_rules import metric_values

    raw = {}
    for item in values:
        metric, sep, value = item.rpartition("=")
        if not sep or not metric:
            raise typer.BadParameter(f"{item!r}: expected metric=number", param_hint=option)
        raw[metric] = value
    try:
        return metric_values(raw, option, fraction=option == "--floor")
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint=option) from None


def decide(
    run_ids: Annotated[list[int], typer.Argument(help="Run ids the decision rests on.")],
    out: Annotated[Path, typer.Option("--out", help="Write the HTML report here.")] = Path("decision_report.html"),
    pdf: Annotated[Path | None, typer.Option("--pdf", help="Also write it as PDF here (WeasyPrint, no browser).")] = None,
    judge: Annotated[str | None, typer.Option(help="Judge whose verdicts to use (needed when several scored the "
                                                   "runs).")] = None,
    question: Annotated[str | None, typer.Option(help="The question the decision answers.")] = None,
    rules: Annotated[Path | None, typer.Option(help="Rules file (YAML): preset, weights and floors per "
                                                    "protocol:metric, budget_per_1k, domains, subsets, question "
                                                    "(docs/decision.md); options given beside it override it.")] = None,
    weight: Annotated[list[str] | None, typer.Option(help="metric=weight, repeatable; any given replaces the default "
                                                          "weights (the page's).")] = None,
    floor: Annotated[list[str] | None, typer.Option(help="metric=fraction, repeatable; any given replaces the default "
                                                         "floors (the page's: the declared floor of each weighted metric, "
                                                         "kept only where the judge decided it).")] = None,
    no_floors: Annotated[bool, typer.Option("--no-floors", help="No hard floors.")] = False,
    budget: Annotated[float | None, typer.Option(help="Generation budget per 1k queries (USD).")] = None,
    domain: Annotated[list[str] | None, typer.Option(help="Restrict to a domain (repeatable).")] = None,
    subset: Annotated[list[str] | None, typer.Option(help="Restrict to a subset: noisy, gap, conflict (repeatable).")] = None,
    generated_at: Annotated[str | None, typer.Option("--at", help="The time the report states (default: the newest "
                                                                   "time in its data, so the file depends on the data "
                                                                   "only).")] = None,
) -> None:
    """The decision report: candidates, data, judges, corrected estimates, rank-sets, segments, cost, recommendation."""
    from core.analysis import decide_rules, decision, decision_report, picker, readmodel
    from core.analysis.readmodel import decision_scores as keys
    from core.store.db import get_engine, upgrade
    from core.store.run_kinds import require_evaluation_runs

    url = database_url()
    upgrade(url)
    engine = get_engine(url)
    try:
        require_evaluation_runs(engine, run_ids)
    except ValueError as error:
        typer.echo(str(error), err=True)
        raise typer.Exit(2) from None
    judges = [j for j in readmodel.run_judges(engine, run_ids) if j != readmodel.RULE_JUDGE]
    if judge is None and len(judges) != 1:
        typer.echo(f"runs {', '.join(map(str, run_ids))} were scored by {len(judges)} judges "
                   f"({', '.join(judges) or 'none'}): pick one with --judge", err=True)
        raise typer.Exit(2)
    try:
        chosen = decide_rules.load_rules(rules) if rules else decide_rules.DecideRules()
    except (OSError, ValueError) as error:
        typer.echo(f"rules {rules}: {error}", err=True)
        raise typer.Exit(2) from None
    chosen = replace(chosen, weights=_pairs(weight, "--weight") if weight else chosen.weights,
                     floors={} if no_floors else (_pairs(floor, "--floor") if floor else chosen.floors),
                     budget_per_1k=chosen.budget_per_1k if budget is None else budget,
                     domains=tuple(domain or chosen.domains), subsets=tuple(subset or chosen.subsets))
    scores = keys.decision_scores(engine, run_ids, judge or judges[0])
    spec, dropped = picker.spec_from_rules(chosen, scores)
    for metric in dropped:  # the default floors: only those the judge can check
        typer.echo(f"default floor on {picker.label(metric)} left out: judge {judge or judges[0]} decided it on no "
                   "response (an LLM judge or gold labels would measure it; pass --floor to keep it)", err=True)
    result = decision.decide(engine, run_ids, judge or judges[0], spec,
                             question or chosen.question or decision.DEFAULT_QUESTION, generated_at)
    document = decision_report.render_html(result)
    out.write_text(document, encoding="utf-8")
    typer.echo(f"wrote {out}: {picker.headline(result.result)}")
    if result.fitness is not None:
        typer.echo(result.fitness.text())
    if pdf is not None:
        try:
            pdf.write_bytes(decision_report.render_pdf(document))
        except RuntimeError as error:
            typer.echo(str(error), err=True)
            raise typer.Exit(1) from None
        typer.echo(f"wrote {pdf}")


def register(app: typer.Typer) -> None:
    """Add the decide command."""
    app.command("decide")(decide)
