"""`gauntlet build`: the construction pipeline from queries, corpus and atomic libraries to benchmark JSONL."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from core.config import REPO_ROOT

if TYPE_CHECKING:
    from core.construction.cost import BuildSpend
    from core.generation.providers.base import ModelConfig


def model_config(model_name: str) -> ModelConfig:
    """The ModelConfig of a registered model (BadParameter naming the fix when there is none)."""
    from core.generation.models_admin import model_config as registered
    from core.store.db import get_engine

    config = registered(get_engine(), model_name)
    if config is None:
        raise typer.BadParameter(f"no model named {model_name!r}; register it with `gauntlet models add`")
    return config


def llm_complete_json(model_name: str, spend: BuildSpend | None = None) -> Callable[[str], dict]:
    """A `complete_json(prompt) -> dict` backed by a registered model, through the cached, retried LLM client; with
    `spend`, each paid call reserves its cost against the build's budget first and is counted."""
    from core.construction.cost import model_complete_json
    from core.store.db import get_engine

    return model_complete_json(get_engine(), model_config(model_name), spend)


def register(app: typer.Typer) -> None:
    """Register `gauntlet build` on the app."""

    @app.command("build")
    def build_command(
        out: Annotated[Path, typer.Option("--out", help="Where to write the benchmark JSONL.")],
        queries: Annotated[list[Path], typer.Option("--queries", help="Queries JSONL or CSV file(s) or folder (the team's own questions).",
                                                  default_factory=lambda: [REPO_ROOT / "data" / "queries"],
                                                  show_default="data/queries")],
        corpus: Annotated[list[Path], typer.Option("--corpus", help="Corpus JSONL file(s) or folder, or a folder of office documents (PDF, DOCX, PPTX, XLSX, HTML, Markdown, text).",
                                                  default_factory=lambda: [REPO_ROOT / "data" / "corpus"],
                                                  show_default="data/corpus")],
        library: Annotated[list[Path], typer.Option("--library", help="Atomic instruction library YAML(s) or folder.",
                                                  default_factory=lambda: [REPO_ROOT / "data" / "libraries"],
                                                  show_default="data/libraries")],
        seed: Annotated[int, typer.Option(help="Same seed, same file.")] = 0,
        top_k: Annotated[int, typer.Option("--top-k", help="Documents retrieved per query.")] = 10,
        bm25_only: Annotated[bool, typer.Option("--bm25-only", help="Skip the dense retriever.")] = False,
        domains: Annotated[list[str] | None, typer.Option("--domain", help="Only these domains (name or slug, e.g. 'Party Building' or party_building).")] = None,
        llm: Annotated[
            str | None, typer.Option("--llm", help="Registered model for the LLM-assisted steps (offline if absent).")
        ] = None,
        augment: Annotated[bool, typer.Option(help="Let the LLM add 1-2 query-specific constraints.")] = False,
        generate: Annotated[str | None, typer.Option(
            "--generate", help="Registered model that edits one fact (conflict) or removes the answer in meaning (gap) "
            "where the rules skip an item or it fails a check (marked generated).")] = None,
        judge: Annotated[str | None, typer.Option(
            "--judge", help="Registered model deciding the checks rules cannot (a generated edit's type and "
            "contradiction, whether a gap bundle still answers; default: the --generate model).")] = None,
        budget: Annotated[float | None, typer.Option(
            "--budget", help="Dollars the build's LLM calls may spend (calls answered from the cache are free).")] = None,
        estimate_only: Annotated[bool, typer.Option(
            "--estimate", help="Print the cost estimate and stop before the build.")] = False,
        executor: Annotated[str, typer.Option(help="local, or ray: each domain's corpus embedded and the instances "
                                              "simulated and fused in Ray tasks (the same file).")] = "local",
        address: Annotated[str | None, typer.Option(help="With --executor ray: the Ray cluster (auto, HOST:PORT or "
                                                    "ray://HOST:PORT); default: a local instance on loopback.")] = None,
    ) -> None:
        """Build benchmark instances: retrieve, fuse constraints, simulate noisy / gap / conflict bundles.

        Conflicts and gaps are checked, and with --generate a model writes those the rules cannot. The LLM cost is
        estimated first."""
        from core.construction.build import build_benchmark, estimate_benchmark
        from core.construction.fact_checks import Assist
        from core.generation.runner import BudgetReached

        chosen = [d.strip().lower().replace(" ", "_") for d in domains] if domains else None
        judge = judge or generate
        estimate = estimate_benchmark(queries, corpus, top_k=top_k, domains=chosen,
                                      fusion=model_config(llm) if llm else None, augment=augment,
                                      generator=model_config(generate) if generate else None,
                                      judge=model_config(judge) if judge else None)
        typer.echo(estimate.summary(), err=True)
        if estimate_only:
            typer.echo(json.dumps(estimate.to_dict(), indent=2))
            return
        from core.construction.cost import BuildSpend, record_build
        from core.plugins import DEFAULT_PROTOCOL
        from core.store.db import get_engine

        spend = record_build(get_engine(), f"{DEFAULT_PROTOCOL} {out.name}", budget, {
            "protocol": DEFAULT_PROTOCOL, "fusion": llm, "generator": generate, "judge": judge, "out": str(out)}) \
            if llm or generate or judge else BuildSpend(budget)
        assist = Assist(llm_complete_json(generate, spend) if generate else None,
                        llm_complete_json(judge, spend) if judge else None, judge or "",
                        generate or "") if generate or judge else None
        try:
            with spend.closing():
                report = build_benchmark(
                    queries,
                    corpus,
                    library,
                    out,
                    seed=seed,
                    top_k=top_k,
                    embedder=None if bm25_only else "minilm-onnx",
                    domains=chosen,
                    complete_json=llm_complete_json(llm, spend) if llm else None,
                    augment=augment,
                    executor=executor,
                    ray_address=address,
                    assist=assist,
                    llm_name=llm or "",
                )
        except BudgetReached as exc:
            typer.echo(f"build stopped: {exc} (paid ${spend.paid_usd:.4f} in {spend.calls} calls)", err=True)
            raise typer.Exit(4) from None
        report.estimate, report.spent = estimate.to_dict(), spend.to_dict()
        typer.echo(json.dumps(report.to_dict(), indent=2))
        for reason in report.skipped:
            typer.echo(f"not built: {reason}", err=True)
        if report.llm_generated:
            typer.echo(f"{report.llm_generated} of {report.instances} instances are marked LLM-generated or "
                       "LLM-edited (query drafted, edit written, or constraints added or pruned, by a model)")
        typer.echo(f"wrote {report.instances} instances to {out}; check them with `gauntlet validate {out}`")

    @app.command("draft-queries")
    def draft_command(
        corpus: Annotated[Path, typer.Option("--corpus", help="A folder of office documents (or corpus JSONL).")],
        out: Annotated[Path, typer.Option("--out", help="Where to write the drafted queries (JSONL).")],
        llm: Annotated[str, typer.Option("--llm", help="Registered model that drafts one question per chunk.")],
        domain: Annotated[str, typer.Option(help="Domain of chunks that have none.")] = "documents",
        limit: Annotated[int | None, typer.Option(help="Only the first N chunks.")] = None,
    ) -> None:
        """Draft candidate questions from documents with an LLM, each marked generated (experts verify them).

        Each drafted question carries query_origin=generated: kept apart from the team's real questions in every build
        report and listing."""
        from core.construction.build import load_documents
        from core.construction.drafting import draft_queries, write_queries

        docs, _ = load_documents([corpus])
        drafted, dropped = draft_queries(docs, llm_complete_json(llm), domain, limit, model=llm)
        write_queries(drafted, out)
        for reason in dropped:
            typer.echo(f"not drafted: {reason}", err=True)
        typer.echo(f"drafted {len(drafted)} generated questions to {out} ({len(dropped)} dropped)")
