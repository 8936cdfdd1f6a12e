"""`gauntlet kb-corruption build`: the RAGStress knowledge base and instances from MMLU questions. They are imported with
`gauntlet import` and answered by the ordinary `gauntlet run` under the protocol's conditions."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from core.construction.retrieval import DEFAULT_INDEX_DIR
from core.protocols.kb_corruption import CONDITION_NAMES, TOP_K

if TYPE_CHECKING:
    from core.construction.embedders import EmbeddingEstimate

COMMAND = "kb-corruption"  # `gauntlet kb-corruption` (core.cli reads COMMAND and HELP without importing this module)
HELP = "RAGStress: knowledge-base corruption by type and severity (MMLU)."
kb_corruption_app = typer.Typer(help=HELP,
                            no_args_is_help=True)


def run_items(questions: int, numeric: int) -> int:
    """Items per model of a run over the 15 conditions: numeric-typo conditions apply only to the `numeric` questions
    whose entry holds a number (attributes.question_type), every other condition to all."""
    return sum(numeric if name.startswith("numeric_") else questions for name in CONDITION_NAMES)


def next_steps(out: Path, questions: int, numeric: int) -> list[str]:
    """The lines telling what a run will hold and the commands that import and run it."""
    return [
        (f"run size: {questions} questions x {len(CONDITION_NAMES)} conditions = {run_items(questions, numeric)} "
         f"items per model (the 3 numeric-typo conditions on the {numeric} questions whose entry holds a number; "
         f"{questions - numeric} hold none)"),
        f"next: gauntlet import {out / 'instances.jsonl'}",
        f"      gauntlet run --models M1,M2 --domains RAGStress --conditions {','.join(CONDITION_NAMES)} --dry-run",
    ]


API_EMBEDDER = "openai-compatible"


def embedder_options(embedder: str, url: str | None, model: str | None, key_env: str | None) -> dict[str, Any]:
    """The registered embedder's options from the command line (ValueError when an API embedder lacks its URL or
    model)."""
    if embedder != API_EMBEDDER:
        return {}
    if not (url and model):
        raise typer.BadParameter("--embedder openai-compatible needs --embedding-url and --embedding-model")
    return {"base_url": url, "model": model, "api_key_env": key_env}


def cost_gate(embedder: str, price: float | None, limit: float | None) -> Callable[[EmbeddingEstimate], None]:
    """Before the index is built: print the embedding estimate; for an API embedder stop (exit 2, nothing embedded)
    unless a price is given and the estimated cost is within --max-embedding-cost."""
    def check(estimate: EmbeddingEstimate) -> None:
        if embedder != API_EMBEDDER:
            typer.echo(f"embedding {estimate.texts:,} texts with the bundled {embedder} embedder: offline, no API cost")
            return
        priced = estimate_with_price(estimate, price)
        if priced.usd is None or limit is None or priced.usd > limit:
            typer.echo(f"stopped before embedding: {priced.text()}; pass --embedding-price and a "
                       "--max-embedding-cost at or above the estimate to build", err=True)
            raise typer.Exit(2)
        typer.echo(priced.text())

    return check


def estimate_with_price(estimate: EmbeddingEstimate, price: float | None) -> EmbeddingEstimate:
    """The same estimate priced at `price` USD per million tokens (unpriced when None)."""
    usd = estimate.tokens * price / 1e6 if price is not None else None
    return replace(estimate, usd=usd, price_per_million=price)


def register(app: typer.Typer) -> None:
    """Register `gauntlet kb-corruption build` on the app."""

    @kb_corruption_app.command("build")
    def build(
        questions: Annotated[list[Path], typer.Option(
            "--questions", help="The evaluated MMLU questions (retrieved for, answered): the JSONL selection, subject "
                                "CSVs, or a folder of them.")],
        out: Annotated[Path, typer.Option("--out", help="Folder for knowledge_base.jsonl, instances.jsonl, build.json.")],
        seed: Annotated[int, typer.Option(help="Same seed and questions, same files.")] = 0,
        top_k: Annotated[int, typer.Option("--top-k", help="Documents retrieved per condition.")] = TOP_K,
        bm25_only: Annotated[bool, typer.Option("--bm25-only", help="Skip the dense retriever.")] = False,
        limit: Annotated[int | None, typer.Option(help="Only the first N evaluated questions.")] = None,
        kb_questions: Annotated[list[Path] | None, typer.Option(
            "--kb-questions", help="The questions the knowledge base is built from (13 entries each), e.g. the "
                                   "folder of all 57 subject CSVs for the paper's 182,546 entries; every evaluated "
                                   "question must be among them. Default: the evaluated questions.")] = None,
        index_dir: Annotated[Path, typer.Option("--index-dir", help="Where the index persists (reused when the "
                                                "knowledge base is unchanged).")] = DEFAULT_INDEX_DIR,
        llm: Annotated[str | None, typer.Option(
            "--llm", help="Registered model that writes the corrupted entries (offline when absent).")] = None,
        retriever: Annotated[str | None, typer.Option(
            "--retriever", help="hybrid (BM25 + dense, fused; the default), bm25, or dense: the paper's preset, "
                                "dense only, each condition searched by faiss's filtered nearest-neighbour "
                                "search.")] = None,
        embedder: Annotated[str, typer.Option(
            "--embedder", help="minilm-onnx (bundled, offline) or openai-compatible (any OpenAI-compatible "
                               "embeddings endpoint: --embedding-url, --embedding-model).")] = "minilm-onnx",
        embedding_url: Annotated[str | None, typer.Option("--embedding-url", help="The endpoint's base URL "
                                                          "(e.g. https://api.openai.com/v1).")] = None,
        embedding_model: Annotated[str | None, typer.Option("--embedding-model", help="Its model name.")] = None,
        embedding_key_env: Annotated[str | None, typer.Option(
            "--embedding-key-env", help="The environment variable holding its API key.")] = None,
        embedding_price: Annotated[float | None, typer.Option(
            "--embedding-price", help="USD per million input tokens, for the cost estimate.")] = None,
        max_embedding_cost: Annotated[float | None, typer.Option(
            "--max-embedding-cost", help="Stop before any embedding call when the estimated cost (USD) is "
                                         "higher; required with an API embedder.")] = None,
    ) -> None:
        """Build the knowledge base (13 entries per question), index it once and retrieve under every condition."""
        from contextlib import AbstractContextManager, nullcontext

        from core.protocols.kb_corruption.builder import LlmWriter, build_ragstress

        writer = None
        spent_in: AbstractContextManager[object] = nullcontext()
        if llm:
            from core.commands.build import llm_complete_json
            from core.construction.cost import record_build
            from core.store.db import get_engine

            spend = record_build(get_engine(), f"kb_corruption {out.name}", None, {
                "protocol": "kb_corruption", "source": [str(q) for q in questions], "generator": llm, "out": str(out)})
            writer, spent_in = LlmWriter(llm_complete_json(llm, spend), llm), spend.closing()
        options = embedder_options(embedder, embedding_url, embedding_model, embedding_key_env)
        chosen = "bm25" if bm25_only else retriever
        try:
            with spent_in:  # an LLM build's spend is recorded on its own run row, closed however the build ends
                report = build_ragstress(questions, out, seed, top_k=top_k,
                                         embedder=None if chosen == "bm25" else embedder, index_dir=index_dir,
                                         writer=writer, limit=limit, kb_questions_path=kb_questions or None,
                                         retriever=chosen, embedder_options=options,
                                         before_embedding=cost_gate(embedder, embedding_price, max_embedding_cost))
        except ValueError as error:
            typer.echo(f"error: {error}", err=True)
            raise typer.Exit(2) from None
        summary = {k: v for k, v in report.to_dict().items() if k != "conditions"}
        typer.echo(json.dumps(summary, indent=2))
        typer.echo(f"{'condition':<24}{'queries':>8}{'no-retrieval':>14}{'own entry first':>17}{'corrupted share':>17}")
        for name, row in report.conditions.items():
            share = "-" if row["corrupted_share"] is None else f"{row['corrupted_share']:.1%}"
            typer.echo(f"{name:<24}{row['queries']:>8}{row['no_retrieval_rate']:>14.1%}{row['own_entry_first']:>17.1%}"
                       f"{share:>17}")
        for line in next_steps(out, report.questions, report.numeric_questions):
            typer.echo(line)

    app.add_typer(kb_corruption_app, name=COMMAND)
