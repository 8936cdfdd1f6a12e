"""`gauntlet build`: the construction pipeline from queries, corpus and atomic libraries to benchmark JSONL."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from core.config import REPO_ROOT


def llm_complete_json(model_name: str) -> Callable[[str], dict]:
    """A `complete_json(prompt) -> dict` backed by a registered model, through the cached, retried LLM client."""
    from sqlmodel import Session, select

    from core.generation.llm import config_from_model, make_client
    from core.generation.providers.base import ChatMessage
    from core.scoring.judges.parsing import extract_json_object
    from core.store.db import get_engine
    from core.store.models import Model

    engine = get_engine()
    with Session(engine) as session:
        model = session.exec(select(Model).where(Model.name == model_name)).first()
    if model is None:
        raise typer.BadParameter(f"no model named {model_name!r}; register it with `gauntlet models add`")
    client = make_client(config_from_model(model), engine)
    loop = asyncio.new_event_loop()  # one loop for every call: the provider's async HTTP client is bound to it

    def complete_json(prompt: str) -> dict:
        messages = [ChatMessage(role="user", content=prompt)]
        completion = loop.run_until_complete(client.complete(messages, purpose="build:construction"))
        return extract_json_object(completion.text) or {}

    return complete_json


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
        executor: Annotated[str, typer.Option(help="local, or ray: each domain's corpus embedded and the instances "
                                              "simulated and fused in Ray tasks (the same file).")] = "local",
        address: Annotated[str | None, typer.Option(help="With --executor ray: the Ray cluster (auto, HOST:PORT or "
                                                    "ray://HOST:PORT); default: a local instance on loopback.")] = None,
    ) -> None:
        """Build benchmark instances: retrieve, fuse constraints, simulate noisy / gap / conflict bundles."""
        from core.construction.build import build_benchmark

        report = build_benchmark(
            queries,
            corpus,
            library,
            out,
            seed=seed,
            top_k=top_k,
            embedder=None if bm25_only else "minilm-onnx",
            domains=[d.strip().lower().replace(" ", "_") for d in domains] if domains else None,
            complete_json=llm_complete_json(llm) if llm else None,
            augment=augment,
            executor=executor,
            ray_address=address,
            llm_name=llm or "",
        )
        typer.echo(json.dumps(report.to_dict(), indent=2))
        for reason in report.skipped:
            typer.echo(f"not built: {reason}", err=True)
        if report.llm_generated:
            typer.echo(f"{report.llm_generated} of {report.instances} instances are marked LLM-generated or "
                       "LLM-edited (query drafted, or constraints added or pruned, by a model)")
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
