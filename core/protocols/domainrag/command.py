"""`gauntlet domainrag build|report`: the DomainRAG protocol's instances from the shared release files, and its views."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from core.config import REPO_ROOT

if TYPE_CHECKING:
    import pandas as pd

COMMAND = "domainrag"  # `gauntlet domainrag` (core.cli reads COMMAND and HELP without importing this module)
HELP = "DomainRAG: build the six-ability instances with their settings; report the views."
domainrag_app = typer.Typer(help=HELP,
                            no_args_is_help=True)
DEFAULT_OUT = REPO_ROOT / "var" / "built" / "domainrag.jsonl"


def _rate(hits_n: tuple[int, int]) -> str:
    hits, n = hits_n
    return f"{hits / n:.3f} ({hits}/{n})" if n else "no data"


def build_summary(report, prompts: dict[str, int]) -> str:
    """What a build made, as text: instances per question type, documents per setting, retrieval hit rates, and
    how many prompts the conditions give."""
    lines = ["instances: " + ", ".join(f"{k} {v}" for k, v in sorted(report.instances.items())),
             "documents per setting: " + ", ".join(f"{k} {v}" for k, v in sorted(report.documents.items())),
             "retrieval hit rate (gold passage in top k | a passage holding a gold answer in top k):"]
    for key in sorted(report.recall):
        subset, retriever, k = key
        answer = f" | {_rate(report.answer_recall[key])}" if key in report.answer_recall else ""
        lines.append(f"  {subset:<15} {retriever:<15} top{k}: {_rate(report.recall[key])}{answer}")
    lines.append("prompts per condition family: " + ", ".join(f"{k} {v}" for k, v in prompts.items()))
    return "\n".join(lines + [f"WARNING: {w}" for w in report.warnings])


def prompt_counts(payloads: list[dict]) -> dict[str, int]:
    """How many (instance, condition) prompts the built instances give, by family (noise sweep, controls, rest)."""
    from core.protocols.domainrag import applicable_conditions
    from core.protocols.domainrag.analysis import describe
    from core.store.schema import InstanceSpec

    counts: dict[str, int] = {}
    for payload in payloads:
        for condition in applicable_conditions(InstanceSpec.model_validate(payload)):
            family = describe(condition)["family"]
            counts[family] = counts.get(family, 0) + 1
    return dict(sorted(counts.items()))


@domainrag_app.command("build")
def build_command(
    out: Annotated[Path, typer.Option("--out", help="Where to write the instances (JSONL, importable).")] = DEFAULT_OUT,
    data: Annotated[Path, typer.Option("--data", help="The shared DomainRAG folder.")] = REPO_ROOT.parent / "shared"
    / "datasets" / "domainrag",
    embedder: Annotated[str, typer.Option("--embedder", help="Dense retriever's embedder ('none': BM25 only; the "
                                          "dense conditions then have no documents and fail when run).")] = "minilm-onnx",
    index_dir: Annotated[Path, typer.Option("--index-dir", help="Where retrieval indexes persist.")] = REPO_ROOT / "var"
    / "index",
    limit: Annotated[int | None, typer.Option("--limit", help="Only the first N questions of each sub-set.")] = None,
) -> None:
    """Build every DomainRAG question with the documents of its settings (golden, HTML/text, anti-reference, 24 noise
    passages, BM25/dense and released top-3); then `gauntlet import OUT` and `gauntlet run --conditions ...`."""
    from core.protocols.domainrag.builder import BuildOptions, build_instances, write_jsonl

    options = BuildOptions(data=data, embedder=None if embedder == "none" else embedder, index_dir=index_dir,
                           limit=limit)
    try:
        payloads, report = build_instances(options)
    except FileNotFoundError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1) from None
    count = write_jsonl(payloads, out)
    typer.echo(build_summary(report, prompt_counts(payloads)))
    typer.echo(f"wrote {count} domainrag instances to {out}; import them with `gauntlet import {out}`")


def format_report(report: dict[str, pd.DataFrame]) -> str:
    """The ability x setting table and the noise, HTML and anti-reference views as text, with judge, n and CIs."""
    import pandas as pd

    table = report["ability_setting"]
    if table.empty:
        return "no domainrag responses in these runs"
    lines = [f"judge: {table['judge_label'].iloc[0]}  metric: {table['metric'].iloc[0]}  († n < 30)"]
    for title, key, label in (("ability x setting", "ability_setting", ["ability", "setting"]),
                              ("score vs noise count", "noise_curve", ["line", "noise_count"]),
                              ("HTML vs text", "html_vs_text", ["format"]),
                              ("anti-reference adherence", "anti_adherence", ["measure"])):
        lines.append(f"\n{title}:")
        for _, row in report[key].iterrows():
            value = "no data" if pd.isna(row["value"]) else (
                f"{row['value']:.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]")
            name = " · ".join(str(row[c]) for c in label)
            lines.append(f"  {row['model']:<24} {name:<40} {value}  n={row['n']}{'†' if row['small_n'] else ''}"
                         f"  n/a={row['n_not_applicable']} errors={row['n_error']} unscored={row['n_unscored']}")
    return "\n".join(lines)


@domainrag_app.command("report")
def report_command(
    run_ids: Annotated[list[int], typer.Argument(help="Run ids (the latest response wins where runs overlap).")],
    judge: Annotated[str, typer.Option("--judge", help="'heuristic' or 'llm:<model name>'.")] = "heuristic",
    metric: Annotated[str, typer.Option("--metric", help="exact_match | strict_exact_match | token_f1 | rouge_l | "
                                        "domainrag.token_f1_jieba | domainrag.rouge_l_jieba | consistency | "
                                        "domainrag.ge_paper")] = "exact_match",
    fmt: Annotated[str, typer.Option("--format", help="table | json")] = "table",
) -> None:
    """Ability x setting, score vs noise count per gold position, HTML vs text and anti-reference adherence."""
    from core.protocols.domainrag.analysis import domainrag_report
    from core.store.db import get_engine

    report = domainrag_report(get_engine(), run_ids, judge, metric)
    if fmt == "json":
        keys = ("ability_setting", "noise_curve", "html_vs_text", "anti_adherence")
        typer.echo(json.dumps({k: json.loads(report[k].to_json(orient="records")) for k in keys}, ensure_ascii=False,
                              indent=1))
    else:
        typer.echo(format_report(report))


def register(app: typer.Typer) -> None:
    """Register the domainrag command group on the gauntlet app."""
    app.add_typer(domainrag_app, name=COMMAND)
