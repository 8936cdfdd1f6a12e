"""LIT-RAGBench's paper mode as the authors run it: their released `run.py`, read at run time from the user's copy of
the dataset (`<dataset>/code/run.py` beside `prompts/`, their repository's `src/run.py`, or $GAUNTLET_LIT_RAGBENCH_RUN),
never from this repository.

From that file the product takes, each time it builds a prompt:
- the two message-building methods of its task class (`create_generate_messages`, `create_evaluate_messages`), compiled
  on their own (no other statement of the file runs: no imports, no client, no I/O) with only `json`, a shuffler and
  five builtins in reach, and called on the instance's fields: the generator sees the system prompt and the
  `[cite:i]`-numbered documents and question as they lay them out; the judge sees their system prompt with their output
  format and their user message;
- the seed of their module-level `random.seed(...)`: their run shuffles each item's documents with one generator seeded
  once and used item after item in file order, so an item's order is the n-th shuffle of that sequence; it is replayed
  here from the item's row number (in its document ids) and the chunk counts of the rows before it, read from the same
  copy of the dataset (`en.jsonl` / `ja.jsonl` beside `prompts/`, or `datasets/` as in their repository);
- the judge model they name (`JUDGE_MODEL`), recorded in prompt_meta and named under the paper table.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import CodeType, SimpleNamespace
from typing import Any

RUN_ENV = "GAUNTLET_LIT_RAGBENCH_RUN"
AUTHORS_JUDGE_MODEL = "gpt-4.1-mini-2025-04-14"  # run.py's JUDGE_MODEL at 5c3f30d9; checked against the file in tests
TASK_METHODS = ("create_generate_messages", "create_evaluate_messages")
BUILTINS = {"dict": dict, "enumerate": enumerate, "len": len, "list": list, "str": str}
ROW = re.compile(r"/(\d+)#(positive|negative)_chunk_list\[(\d+)\]$")


@dataclass(frozen=True)
class AuthorsRun:
    """What the product takes from the authors' run.py: its path and sha256, the compiled message builders, the seed
    of their shuffle and the models they name."""

    path: Path
    sha256: str
    code: CodeType
    seed: int
    judge_model: str
    generate_model: str


def runner_path(prompts_directory: str | Path) -> Path:
    """The authors' run.py for a released prompts folder: $GAUNTLET_LIT_RAGBENCH_RUN, else `code/run.py` or `src/run.py`
    beside it (ValueError naming where it looked)."""
    chosen = os.environ.get(RUN_ENV)
    root = Path(prompts_directory).resolve()
    root = root.parent if root.name == "evaluation" else root
    candidates = [Path(chosen)] if chosen else [root.parent / "code" / "run.py", root.parent / "src" / "run.py"]
    for path in candidates:
        if path.is_file():
            return path.resolve()
    raise ValueError(f"LIT-RAGBench's run.py not found at {' or '.join(map(str, candidates))} (the paper mode builds "
                     f"its messages with the authors' run.py; set {RUN_ENV} to its path)")


def _constant(tree: ast.Module, name: str) -> Any:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise ValueError(f"run.py defines no module-level {name}")


def _seed(tree: ast.Module) -> int:
    for node in tree.body:
        call = node.value if isinstance(node, ast.Expr) else None
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "seed"
                and isinstance(call.func.value, ast.Name) and call.func.value.id == "random" and call.args):
            return int(ast.literal_eval(call.args[0]))
    raise ValueError("run.py seeds no module-level random generator (random.seed(...))")


def _methods(tree: ast.Module) -> list[ast.FunctionDef]:
    found = {node.name: node for cls in tree.body if isinstance(cls, ast.ClassDef)
             for node in cls.body if isinstance(node, ast.FunctionDef) and node.name in TASK_METHODS}
    if missing := [name for name in TASK_METHODS if name not in found]:
        raise ValueError(f"run.py has no {', '.join(missing)} method")
    return [found[name] for name in TASK_METHODS]


@lru_cache(maxsize=4)
def _load(path: str, sha256: str) -> AuthorsRun:
    source = Path(path).read_text(encoding="utf-8")
    tree = ast.parse(source, filename=path)
    module = ast.Module(body=list(_methods(tree)), type_ignores=[])
    return AuthorsRun(Path(path), sha256, compile(module, path, "exec"), _seed(tree), str(_constant(tree, "JUDGE_MODEL")),
                      str(_constant(tree, "GENERATE_MODEL")))


def load_run(path: str | Path) -> AuthorsRun:
    """The authors' run.py at `path`, parsed (cached by content)."""
    data = Path(path).read_bytes()
    return _load(str(Path(path).resolve()), hashlib.sha256(data).hexdigest())


class Replay:
    """Stands in for their module's `random`: `shuffle` puts a list in a precomputed order."""

    def __init__(self, order: Sequence[int]) -> None:
        self.order = list(order)

    def shuffle(self, items: list[Any]) -> None:
        """Reorder `items` in place: item i of the result is item order[i] of the input."""
        if len(items) != len(self.order):
            raise ValueError(f"replayed order is for {len(self.order)} documents, the item has {len(items)}")
        items[:] = [items[i] for i in self.order]


def _builders(run: AuthorsRun, order: Sequence[int] = ()) -> dict[str, Callable[..., Any]]:
    namespace: dict[str, Any] = {"__builtins__": BUILTINS, "json": json, "random": Replay(order)}
    exec(run.code, namespace)  # noqa: S102 - the two message-building methods of the user's copy of run.py, alone
    return {name: namespace[name] for name in TASK_METHODS}


def dataset_file(prompts_directory: str | Path, language: str) -> Path:
    """The user's copy of the released `<language>.jsonl` beside the prompts folder (or in `datasets/` beside it)."""
    root = Path(prompts_directory).resolve()
    root = root.parent if root.name == "evaluation" else root
    for path in (root.parent / f"{language}.jsonl", root.parent / "datasets" / f"{language}.jsonl"):
        if path.is_file():
            return path
    raise ValueError(f"LIT-RAGBench {language}.jsonl not found beside {root} (the authors' document order is replayed "
                     "from it)")


@lru_cache(maxsize=4)
def _orders(path: str, sha256: str, seed: int) -> tuple[tuple[int, ...], ...]:
    rng = random.Random(seed)
    orders = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            row = json.loads(line)
            order = list(range(len(row.get("positive_chunk_list", [])) + len(row.get("negative_chunk_list", []))))
            rng.shuffle(order)
            orders.append(tuple(order))
    return tuple(orders)


def authors_order(path: Path, seed: int, row: int) -> tuple[int, ...]:
    """The order their run gives row `row` (0-based) of the dataset file: the row-th shuffle of Random(seed)."""
    orders = _orders(str(path), hashlib.sha256(path.read_bytes()).hexdigest(), seed)
    if not 0 <= row < len(orders):
        raise ValueError(f"row {row} is not in {path} ({len(orders)} rows)")
    return orders[row]


def source_place(doc_uid: str) -> tuple[int, str, int]:
    """(row, 'positive' or 'negative', index) of an imported chunk's document id ('lit-ragbench/en/3#negative_chunk_list[2]')."""
    found = ROW.search(doc_uid)
    if found is None:
        raise ValueError(f"document {doc_uid!r} is not a chunk of a LIT-RAGBench import (the paper mode rebuilds the "
                         "authors' chunk lists from the imported document ids)")
    return int(found[1]), found[2], int(found[3])


def chunk_lists(documents: Sequence[Any]) -> tuple[int, list[str], list[str]]:
    """The item's row and its positive and negative chunk texts in the released file's order."""
    placed = sorted((source_place(d.doc_uid), d.text) for d in documents)
    rows = {row for (row, _, _), _ in placed}
    if len(rows) != 1:
        raise ValueError(f"the documents come from rows {sorted(rows)} of the released file, expected one")
    positives = [text for (_, kind, _), text in placed if kind == "positive"]
    negatives = [text for (_, kind, _), text in placed if kind == "negative"]
    return rows.pop(), positives, negatives


def generate_messages(run: AuthorsRun, system: str, question: str, positives: list[str], negatives: list[str],
                      order: Sequence[int]) -> list[dict[str, str]]:
    """Their create_generate_messages on these fields, its shuffle replaced by `order`."""
    task = SimpleNamespace(question=question, positive_context=positives, negative_context=negatives,
                           generate_prompt=system)
    return list(_builders(run, order)["create_generate_messages"](task))


def evaluate_messages(run: AuthorsRun, system: str, question: str, reasoning: str, reference: str,
                      positives: list[str], answer: str) -> list[dict[str, str]]:
    """Their create_evaluate_messages on these fields."""
    task = SimpleNamespace(question=question, reasoning_content=reasoning, reference_answer=reference,
                           positive_context=positives, generated_answer=answer, judge_prompt=system)
    return list(_builders(run)["create_evaluate_messages"](task))
