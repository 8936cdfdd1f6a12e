"""`gauntlet misleading-evidence`: build RAG-Stress instances (misleading evidence) from an imported layout, and report MR.

The instances run through the ordinary `gauntlet run --conditions ...` (the conditions of protocol 'misleading_evidence').
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from core.construction.cost import BuildEstimate

COMMAND = "misleading-evidence"  # `gauntlet misleading-evidence` (core.cli reads COMMAND and HELP without importing this module)
HELP = "RAG-Stress: misleading evidence that overrides correct answers."
FORMATS = ("hotpotqa", "medqa", "triviaqa", "searchqa")


def register(app: typer.Typer) -> None:
    """Register `gauntlet misleading-evidence build|report` on the app."""
    group = typer.Typer(help=HELP, no_args_is_help=True)
    app.add_typer(group, name=COMMAND)

    @group.command("build")
    def build_command(
        source: Annotated[Path, typer.Argument(help="A source file of the format (e.g. the shared HotpotQA slice).")],
        out: Annotated[Path, typer.Option("--out", help="Where to write the RAG-Stress instances (JSONL).")],
        fmt: Annotated[str, typer.Option("--format", help=f"Source layout: {' | '.join(FORMATS)}.")] = "hotpotqa",
        seed: Annotated[int, typer.Option(help="Same seed, same designated wrong answers.")] = 0,
        skipped: Annotated[Path | None, typer.Option(
            "--skipped", help="Where to list the items with no safe edit (JSONL; default: OUT.skipped.jsonl).")] = None,
        llm: Annotated[str | None, typer.Option(
            "--llm", help="Registered model that re-words each edit (checked; the rule edit is kept otherwise).")] = None,
        generate: Annotated[bool, typer.Option(
            "--generate", help="With --llm: the model writes the edit of every open-QA item the rules skip or that "
            "fails a check (marked generated; implies --check).")] = False,
        check: Annotated[bool, typer.Option(
            "--check", help="Check every open-QA item (states the wrong answer, drops the gold, gold nowhere else, "
            "same type) and build only those that pass; verdicts stored per item.")] = False,
        judge: Annotated[str | None, typer.Option(
            "--judge", help="Registered model deciding the checks rules cannot (default: the --llm model).")] = None,
        limit: Annotated[int | None, typer.Option(help="Only the first N source items.")] = None,
        budget: Annotated[float | None, typer.Option(
            "--budget", help="Dollars the build's LLM calls may spend (calls answered from the cache are free).")] = None,
        estimate_only: Annotated[bool, typer.Option(
            "--estimate", help="Print the LLM cost estimate and stop before the build.")] = False,
        evidence_dir: Annotated[Path | None, typer.Option(
            "--evidence-dir", help="TriviaQA-RC: the folder holding wikipedia/ and web/ (default: evidence/ beside "
            "the qa file's qa/ folder, as released).")] = None,
    ) -> None:
        """Write importable RAG-Stress instances (clean and misleading evidence, the edit recorded) and list every
        item with no safe edit and why; import them with `gauntlet import OUT`."""
        from core.generation.runner import BudgetReached
        from core.ingest.importers.triviaqa import with_evidence
        from core.protocols.misleading_evidence import CLOSED_BOOK, MISLEADING_CONDITIONS
        from core.protocols.misleading_evidence.builder_plans import build_stress_file

        if fmt not in FORMATS:
            raise typer.BadParameter(f"format must be one of {', '.join(FORMATS)}", param_hint="--format")
        if evidence_dir is not None and fmt != "triviaqa":
            raise typer.BadParameter("only TriviaQA-RC reads evidence files", param_hint="--evidence-dir")
        complete_json = judge_json = None
        if generate and not llm:
            raise typer.BadParameter("--generate needs --llm (the model that writes the edits)", param_hint="--generate")
        from core.construction.cost import BuildSpend, record_build
        from core.store.db import get_engine

        spend = BuildSpend(budget)
        if llm or judge:
            from core.commands.build import llm_complete_json

            with with_evidence(source, evidence_dir) as read:
                estimate = stress_estimate(read, fmt, limit, llm, judge or (llm if check or generate else None),
                                           generate)
            typer.echo(estimate.summary(), err=True)
            if estimate_only:
                typer.echo(json.dumps(estimate.to_dict(), indent=2))
                return
            spend = record_build(get_engine(), f"misleading_evidence {out.name}", budget, {
                "protocol": "misleading_evidence", "source": str(source), "generator": llm, "judge": judge or llm,
                "out": str(out)})  # the spend recorded where runs' is, budgeted in the database
            complete_json = llm_complete_json(llm, spend) if llm else None
            judge_json = llm_complete_json(judge, spend) if judge else complete_json
        try:
            with spend.closing(), with_evidence(source, evidence_dir) as read:
                result, items, listed = build_stress_file(read, fmt, out, seed, limit=limit,
                                                          complete_json=complete_json, llm_name=llm or "",
                                                          skipped=skipped, generate=generate, check=check,
                                                          judge=judge_json, judge_name=judge or llm or "")
        except ValueError as exc:
            for problem in str(exc).split("; "):
                typer.echo(problem, err=True)
            raise typer.Exit(1) from None
        except BudgetReached as exc:
            typer.echo(f"build stopped: {exc} (paid ${spend.paid_usd:.4f} in {spend.calls} calls)", err=True)
            raise typer.Exit(4) from None
        summary = {k: v for k, v in result.to_dict().items() if k != "skipped_items"}
        if llm or judge:
            summary["spent"] = spend.to_dict()
        typer.echo(json.dumps({"source": str(source), "items": items, "out": str(out),
                               "skipped_list": str(listed), **summary}, indent=2, ensure_ascii=False))
        conditions = ",".join([CLOSED_BOOK, "clean", *MISLEADING_CONDITIONS])
        typer.echo(f"next: gauntlet import {out} && gauntlet run --models ... --domains "
                   f"'{result.instances[0].domain if result.instances else 'RAG-Stress ...'}' --conditions {conditions}",
                   err=True)

    @group.command("report")
    def report_command(
        run_ids: Annotated[list[int], typer.Argument(help="Run id(s) over RAG-Stress instances.")],
        judge: Annotated[str | None, typer.Option("--judge", help="Scoring judge whose verdicts to read (needed when "
                                                  "several judges scored the runs).")] = None,
        model_a: Annotated[str | None, typer.Option("--audit-a", help="First model/checkpoint of the paired audit.")] = None,
        model_b: Annotated[str | None, typer.Option("--audit-b", help="Second model/checkpoint of the paired audit.")] = None,
        fmt: Annotated[str, typer.Option("--format", help="table | json")] = "table",
    ) -> None:
        """Per dataset (and language): MR per model x policy x position, clean and closed-book accuracy, the policy
        gap with its paired test, MR by position, the means over models (the policy gap averaged over models and
        positions), and optionally the paired audit of two models."""
        from core.analysis import readmodel
        from core.protocols.misleading_evidence import analysis as misleading_evidence
        from core.store.db import get_engine

        engine = get_engine()
        judges = readmodel.run_judges(engine, run_ids)
        chosen = judge or (judges[0] if len(judges) == 1 else None)
        if chosen is None:
            typer.echo(f"choose a judge with --judge: the runs were scored by {', '.join(judges) or 'no judge'}",
                       err=True)
            raise typer.Exit(2)
        out = misleading_evidence.load_outcomes(engine, run_ids, chosen)
        rates = misleading_evidence.misleading_rates(out)
        tables = {"misleading_rate": rates, "accuracy": misleading_evidence.accuracy(out),
                  "policy_gap": misleading_evidence.policy_gap(out), "by_position": misleading_evidence.position_means(rates),
                  "mean_over_models": misleading_evidence.model_means(out)}
        if model_a and model_b:
            tables["audit"] = misleading_evidence.audit(out, model_a, model_b)
        typer.echo(render(tables, chosen, fmt))


def stress_estimate(source: Path, fmt: str, limit: int | None, llm: str | None, judge: str | None,
                    generate: bool) -> BuildEstimate:
    """The LLM cost of a misleading-evidence build before it starts, from the source's open-QA items."""
    from core.commands.build import model_config
    from core.protocols.misleading_evidence.builder_plans import estimate_stress_file

    return estimate_stress_file(source, fmt, limit, llm=model_config(llm) if llm else None,
                                judge=model_config(judge) if judge else None, generate=generate)


def render(tables: dict, judge: str, fmt: str) -> str:
    """The report's tables as JSON or as text tables, each naming the judge."""
    from core.scoring.judges.names import judge_label

    if fmt == "json":
        return json.dumps({"judge": judge, "judge_label": judge_label(judge),
                           **{k: json.loads(v.to_json(orient="records")) for k, v in tables.items()}}, indent=2,
                          ensure_ascii=False)
    buffer = io.StringIO()
    buffer.write(f"judge: {judge_label(judge)} · MR on each model's closed-book-correct questions; † n < 30\n")
    for name, frame in tables.items():
        buffer.write(f"\n{name}\n{frame.drop(columns=['judge', 'judge_label'], errors='ignore').to_string(index=False)}\n")
    return buffer.getvalue().rstrip("\n")
