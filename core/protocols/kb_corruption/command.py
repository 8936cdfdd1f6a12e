"""`gauntlet kb-corruption build`: the RAGStress knowledge base and instances from MMLU questions. They are imported with
`gauntlet import` and answered by the ordinary `gauntlet run` under the protocol's conditions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from core.construction.retrieval import DEFAULT_INDEX_DIR
from core.protocols.kb_corruption import CONDITION_NAMES, TOP_K

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
    ) -> None:
        """Build the knowledge base (13 entries per question), index it once and retrieve under every condition."""
        from core.protocols.kb_corruption.builder import LlmWriter, build_ragstress

        writer = None
        if llm:
            from core.commands.build import llm_complete_json

            writer = LlmWriter(llm_complete_json(llm), llm)
        report = build_ragstress(questions, out, seed, top_k=top_k, embedder=None if bm25_only else "minilm-onnx",
                                 index_dir=index_dir, writer=writer, limit=limit,
                                 kb_questions_path=kb_questions or None)
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
