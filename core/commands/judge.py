"""`gauntlet judge check` (a judge against a human-labelled suite) and `gauntlet judge probe` (its biases)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from core.analysis.judge_check import CheckResult
    from core.analysis.judge_probes import CostEstimate, ProbeResult

HELP = "Check a judge against human labels (judge check) and probe it for biases (judge probe)."


def _pct(value: float | None) -> str:
    return "-" if value is None or value != value else f"{value * 100:6.2f}"


def _ci(ci: tuple[float, float] | list[float] | None) -> str:
    return "" if ci is None or ci[0] != ci[0] else f"[{ci[0] * 100:.1f}, {ci[1] * 100:.1f}]"


def format_check(result: CheckResult) -> str:
    """The check's table (x 100 as the source paper), the published anchors, the human sanity check and the fitness."""
    lines = [f"judge {result.judge} (model {result.judge_model}, prompt hash {result.prompt_hash}) on suite "
             f"{result.suite}: {result.n_pairs} items; judge calls {result.calls}, cost ${result.cost_usd:.4f}"]
    if result.dimensions:
        lines += [f"{'dimension':<13} {'Pearson':>7} {'95% CI':<14} {'Spearman':>8} {'95% CI':<14} {'agree':>6} "
             f"{'kappa':>6} {'95% CI':<14} {'n labels':>8} {'n agree':>7} {'unscored':>8}"]
    for d in result.dimensions:
        kappa = "-" if d.kappa is None else f"{d.kappa:6.2f}"
        kci = "" if d.kappa_ci is None else f"[{d.kappa_ci[0]:.2f}, {d.kappa_ci[1]:.2f}]"
        lines.append(f"{d.dimension:<13} {_pct(d.pearson):>7} {_ci(d.pearson_ci):<14} {_pct(d.spearman):>8} "
                     f"{_ci(d.spearman_ci):<14} {_pct(d.agreement):>6} {kappa:>6} {kci:<14} {d.n_labels:>8} "
                     f"{d.n_agreement:>7} {d.n_missing:>8}")
    lines += format_comparison(result)
    for dim, h in result.human.items():
        lines.append(f"human vs human on this suite, {dim}: Pearson {h['pearson'] * 100:.2f}, Spearman "
                     f"{h['spearman'] * 100:.2f}, kappa {h['kappa']:.2f} (n={h['n']})")
    lines += format_labelling(result.labelling)
    lines += format_certificates(result.certificates)
    if result.fitness:
        lines.append(f"fitness: {result.fitness.label.upper()} ({result.fitness.reason}; see docs/judges.md)")
    return "\n".join(lines)


def format_labelling(labelling: dict) -> list[str]:
    """Who labelled the suite and the state of its passes (nothing for a suite whose labels are the published ones)."""
    if not labelling:
        return []
    passes = ", ".join(f"{name} {n} labels" for name, n in labelling["passes"].items())
    return [f"labels ({labelling['guidelines']}): {labelling['who']}",
            f"  passes: {passes}; second pass {labelling['second_pass']}; disagreements {labelling['disagreements']}, "
            f"adjudicated {labelling['adjudicated']}",
            *(f"  annotator vs annotator, {scope}: kappa {_kappa(a['kappa'])} [{_kappa(a['ci'][0])}, {_kappa(a['ci'][1])}], "
              f"agreement {a['agreement'] * 100:.1f}% (n {a['n_items']} items)"
              for scope, a in labelling.get("agreement", {}).items())]


def _kappa(value: float | None) -> str:
    return "undefined" if value is None or value != value else f"{value:.2f}"


def format_disagreements(labelling: dict, found: list) -> list[str]:
    """The passes' state, then one line per disagreement: each pass's label and the adjudication (or its absence)."""
    lines = format_labelling(labelling)
    if labelling["second_pass"] == "missing":
        return [*lines, "no disagreement can be listed: the second labelling pass is missing"]
    for d in found:
        given = ", ".join(f"{name} {label}" for name, label in d.labels.items())
        adj = (f"adjudicated {d.adjudicated} by {d.adjudicator}: {d.reason}" if d.adjudicated
               else "NOT ADJUDICATED")
        lines.append(f"{d.id:<12} {d.aspect:<13} {given}; {adj}")
    return lines


def format_certificates(certificates: list) -> list[str]:
    """Per aspect: the judge row, the human-human row and the baseline rows (kappa, 95% CI, n), then the verdict."""
    lines = []
    for c in certificates:
        lines.append(f"certification, {c.aspect} (kappa against the annotators; bootstrap over items; "
                     f"margin {c.margin:.2f}):")
        rows = [("judge", c.judge), (c.pair_row, c.human), *((f"baseline: {b.rater}", b) for b in c.baselines)]
        lines.append(f"  {'rater':<26} {'kappa':>6} {'95% CI':<16} {'n items':>7} {'n labels':>8}")
        for name, r in rows:
            if r is c.human and c.note:
                lines.append(f"  {name:<26} {'-':>6} {c.note}")
                continue
            lines.append(f"  {name:<26} {_kappa(r.kappa):>6} [{_kappa(r.ci[0])}, {_kappa(r.ci[1])}]{'':<2} "
                         f"{r.n_items:>7} {r.n_labels:>8}")
        beats = ", ".join(f"{k} {v:+.2f}" for k, v in c.beats.items())
        gap = "not computed (second row missing)" if c.note else f"{c.gap_low:+.2f} (>= -{c.margin:.2f} to be non-inferior)"
        lines.append(f"  judge - {c.pair_row.split(' vs ')[0]}s lower bound {gap}; "
                     f"judge - baseline lower bounds: {beats} (> 0 to beat); unscored {c.n_missing}")
        lines.append(f"  verdict, {c.aspect}: {c.verdict.upper()}")
    return lines


def text_table(rows: list[dict[str, str]]) -> list[str]:
    """Rows of equal keys as aligned text lines under a header."""
    widths = {k: max(len(k), *(len(r[k]) for r in rows)) for k in rows[0]}
    return ["  ".join(k.ljust(w) for k, w in widths.items()).rstrip(),
            *("  ".join(r[k].ljust(w) for k, w in widths.items()).rstrip() for r in rows)]


def format_comparison(result: CheckResult) -> list[str]:
    """The judge beside the figures published for its suite (none for a suite nothing was published for)."""
    from core.analysis.judge_check import comparison_rows
    from core.analysis.published import published_for

    published = published_for(result.suite)
    if published is None:
        return []
    rows = comparison_rows(result.suite, [(result.judge, result.figures()["dimensions"])])
    return [f"beside the published figures ({published[0].short()}), Pearson / Spearman x 100 [95% CI]:",
            *text_table(rows)]


def format_estimate(what: str, estimate: CostEstimate) -> str:
    """The line printed before a probe or a check runs."""
    return (f"{what}: estimated {estimate.calls} judge calls, ~{estimate.input_tokens} input tokens, "
            f"${estimate.cost_usd:.4f}")


def format_probe(result: ProbeResult) -> str:
    """A probe's table, its detected biases and unusable verdicts."""
    lines = [f"probe {result.probe} on {result.n_pairs} pairs ({result.errors} with an unusable verdict)",
             f"{'figure':<46} {'value':>7} {'95% CI':<16} {'n':>5} bias"]
    for row in result.rows:
        ci = "" if row["ci_low"] is None else f"[{row['ci_low']:.2f}, {row['ci_high']:.2f}]"
        value = "-" if row["value"] is None else f"{row['value']:.3f}"
        extra = f" agreement {row['agreement'] * 100:.1f}%" if "agreement" in row else ""
        lines.append(f"{row['figure']:<46} {value:>7} {ci:<16} {row['n']:>5} {'YES' if row['bias'] else 'no'}{extra}")
    lines.append(f"detected: {', '.join(result.biases) or 'no bias'}")
    return "\n".join(lines)


def _judge(spec: str):
    from core.scoring.judges import resolve_judge
    from core.store.db import get_engine

    return resolve_judge(spec, get_engine())


def register(app: typer.Typer) -> None:
    """Register the `judge` command group on the app."""
    judge_app = typer.Typer(help=HELP, no_args_is_help=True)

    @judge_app.command("check")
    def check_command(
        judge: Annotated[str, typer.Argument(help="'heuristic' or 'llm:<model name>'.")],
        suite: Annotated[str, typer.Option("--suite", help="'ragchecker-meta', 'mtrag', 'hard_set', a suite a protocol declares, or a JSON / JSONL file (docs/judges.md).")],
        limit: Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N items.")] = None,
        store: Annotated[bool, typer.Option("--store/--no-store", help="Store the result for Judge alignment.")] = True,
        estimate_only: Annotated[bool, typer.Option("--estimate-only", help="Print the cost estimate and stop.")] = False,
    ) -> None:
        """Score a human-labelled suite with JUDGE: agreement, Pearson and Spearman with CIs, and its fitness."""
        from core.analysis.judge_check import check_judge, load_suite, suite_check, suite_checks, with_probe_biases
        from core.analysis.judge_probes import estimate_check_cost
        from core.services.judge_checks import store_check
        from core.store.db import get_engine

        named = suite_checks()
        if suite in named and estimate_only:
            typer.echo(f"no cost estimate for suite {suite}: nothing was run; bound the calls with --limit "
                       "(an LLM judge makes up to 4 calls per item)", err=True)
            raise typer.Exit(2)
        if suite in named:
            result = with_probe_biases(get_engine(), asyncio.run(suite_check(suite)(_judge(judge), limit)))
            typer.echo(format_check(result))
            if store:
                typer.echo(f"stored as judge check {store_check(get_engine(), result)}")
            return
        pairs, resolved = load_suite(suite, limit), _judge(judge)
        typer.echo(format_estimate("judge check", estimate_check_cost(resolved, pairs)))
        if estimate_only:
            return
        result = with_probe_biases(get_engine(), asyncio.run(check_judge(resolved, suite, pairs)))
        typer.echo(format_check(result))
        if store:
            typer.echo(f"stored as judge check {store_check(get_engine(), result)}")

    @judge_app.command("disagreements")
    def disagreements_command(
        suite: Annotated[str, typer.Option("--suite", help="A suite labelled in passes: 'hard_set'.")] = "hard_set",
    ) -> None:
        """List every item and aspect the labelling passes disagree on, with its adjudication or that it has none."""
        from core.analysis import hard_set

        if suite != hard_set.NAME:
            raise typer.BadParameter(f"only {hard_set.NAME!r} is labelled in passes", param_hint="--suite")
        items = hard_set.load_items()
        labels = hard_set.load_labels(items)
        typer.echo("\n".join(format_disagreements(hard_set.labelling(items, labels),
                                                  hard_set.disagreements(items, labels))))

    @judge_app.command("probe")
    def probe_command(
        probe: Annotated[str, typer.Argument(help="repeat, position, length or language.")],
        judge: Annotated[str, typer.Argument(help="'heuristic' or 'llm:<model name>'.")],
        suite: Annotated[str, typer.Option("--suite", help="'ragchecker-meta' or a JSON / JSONL file (docs/judges.md).")],
        k: Annotated[int, typer.Option("--k", min=2, help="Repeats per pair (repeat probe).")] = 3,
        limit: Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N pairs.")] = 20,
        estimate_only: Annotated[bool, typer.Option("--estimate-only", help="Print the cost estimate and stop.")] = False,
        store: Annotated[bool, typer.Option("--store/--no-store", help="Store the result for Judge alignment.")] = True,
    ) -> None:
        """Probe JUDGE for a bias on the suite's pairs; the cost is estimated and printed before it runs."""
        from core.analysis.judge_check import judge_version, load_suite
        from core.analysis.judge_probes import PROBES, estimate_cost, run_probe
        from core.services.judge_checks import save_check
        from core.store.db import get_engine

        if probe not in PROBES:
            raise typer.BadParameter(f"one of {', '.join(PROBES)}", param_hint="PROBE")
        pairs, resolved = load_suite(suite, limit), _judge(judge)
        typer.echo(format_estimate(f"probe {probe}", estimate_cost(resolved, probe, pairs, k)))
        if estimate_only:
            return
        result = asyncio.run(run_probe(resolved, probe, pairs, k))
        typer.echo(format_probe(result))
        if store:
            model, prompt_hash = judge_version(resolved)
            figures = {"rows": result.rows, "biases": result.biases, "errors": result.errors}
            check_id = save_check(get_engine(), f"probe:{probe}", resolved.name, model, prompt_hash, suite,
                                  result.n_pairs, figures)
            typer.echo(f"stored as judge check {check_id}")

    app.add_typer(judge_app, name="judge", help=HELP)
