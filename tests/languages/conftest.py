"""The LIT-RAGBench slice (English and Japanese) read from the shared datasets folder beside the repo."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

LIT = Path(__file__).resolve().parents[2] / ".." / "shared" / "datasets" / "lit-ragbench"


def is_abstention(row: dict) -> bool:
    """An Abstention-category item (A_negative_only, A_conflicted, A_chunk_incompletion)."""
    return any(code.startswith("A_") for code in row["qa_type"])


@pytest.fixture(scope="session")
def lit_rows() -> Callable[[str], list[dict]]:
    """Rows of LIT-RAGBench's en.jsonl / ja.jsonl; fails clearly when the shared folder is missing."""

    def load(language: str) -> list[dict]:
        path = LIT / f"{language}.jsonl"
        if not path.is_file():
            pytest.fail(f"LIT-RAGBench slice not found (expected beside the repo at ../shared/datasets/lit-ragbench): "
                        f"{path}")
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    return load
