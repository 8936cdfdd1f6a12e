"""The 'paper' prompt setting of LIT-RAGBench: the generator and judge prompts its authors released, read at run time
from the user's copy of the dataset's `prompts/` directory, laid out by the authors' own `run.py` from the same copy
(core.protocols.lit_ragbench.authors); no text of those files is kept in this repository.

The directory comes from `gauntlet run --prompts-dir DIR` (or the GAUNTLET_LIT_RAGBENCH_PROMPTS variable); run.py is
found beside it (`code/run.py`, or GAUNTLET_LIT_RAGBENCH_RUN). Generation records both, with the file names and sha256
of what it read, in the response's prompt_meta; scoring reads the released judge prompt and run.py again from the
recorded places and refuses (a judge error, counted) when a file is gone or changed language. The messages are byte for
byte what their run.py builds: the generator gets their system prompt and their `[cite:i]` layout in their run's
document order; the judge gets their system prompt with their JSON output format (score 0/1, evaluation_reason) and
the question, reference reasoning and answer, positive context and generated answer as they lay them out. Their judge
model is named in prompt_meta and under the paper table.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.protocols.lit_ragbench import authors
from core.protocols.messages import ChatMessage
from core.protocols.prompting import InstanceView

if TYPE_CHECKING:
    from core.protocols.base import Prompt
    from core.scoring.judges.base import JudgeInput

PROMPTS_ENV = "GAUNTLET_LIT_RAGBENCH_PROMPTS"
PAPER = "paper"
PRODUCT = "product"
PAPER_CONDITION = "paper_prompts"
SETTING_CONDITIONS: dict[str, str] = {PAPER: PAPER_CONDITION, PRODUCT: ""}  # prompt setting -> its condition
JUDGE_PROMPT = "lit_ragbench:paper"  # prompt_meta['judge_prompt']: core.scoring.judges.registry dispatches on it


@dataclass(frozen=True)
class ReleasedPrompt:
    """One released prompt file as read now: where it is, its text and its sha256."""

    path: Path
    text: str
    sha256: str


def prompts_dir(given: str | Path | None = None) -> Path:
    """The released prompts directory: `given`, else $GAUNTLET_LIT_RAGBENCH_PROMPTS (ValueError when neither)."""
    chosen = given or os.environ.get(PROMPTS_ENV)
    if not chosen:
        raise ValueError(f"the {PAPER_CONDITION} condition reads LIT-RAGBench's released prompts: pass --prompts-dir "
                         f"<dataset>/prompts to gauntlet run (or set {PROMPTS_ENV})")
    path = Path(chosen).expanduser().resolve()
    if not path.is_dir():
        raise ValueError(f"LIT-RAGBench prompts folder {path} not found (the dataset's prompts/ folder)")
    return path


def released_prompt(directory: str | Path, kind: str, language: str) -> ReleasedPrompt:
    """The released `kind` ('generate' or 'judge') prompt in `language` under `directory` (the prompts/ folder or its
    evaluation/ subfolder); ValueError naming the missing file."""
    folder = Path(directory)
    folder = folder / "evaluation" if (folder / "evaluation").is_dir() else folder
    path = folder / f"{kind}_{language}.txt"
    if not path.is_file():
        raise ValueError(f"released prompt {path} not found (expected LIT-RAGBench's prompts/evaluation/"
                         f"{kind}_{language}.txt)")
    data = path.read_bytes()
    return ReleasedPrompt(path, data.decode("utf-8"), hashlib.sha256(data).hexdigest())


def _messages(built: list[dict[str, str]]) -> list[ChatMessage]:
    return [ChatMessage(role=m["role"], content=m["content"]) for m in built]


def paper_prompt(instance: InstanceView, documents: Sequence[Any], language: str) -> Prompt:
    """The authors' generator messages (their run.py's layout, their run's document order) with the released
    generator prompt of the question's language; prompt_meta says which files (and which bytes) they were."""
    directory = prompts_dir()
    released = released_prompt(directory, "generate", language)
    run = authors.load_run(authors.runner_path(directory))
    row, positives, negatives = authors.chunk_lists(documents)
    order = authors.authors_order(authors.dataset_file(directory, language), run.seed, row)
    messages = authors.generate_messages(run, released.text, instance.query, positives, negatives, order)
    by_place = sorted(documents, key=lambda d: (authors.source_place(d.doc_uid)[1] == "negative",
                                                authors.source_place(d.doc_uid)))
    shown = [by_place[i] for i in order]
    meta = {"prompt_setting": PAPER, "prompts_dir": str(directory), "generator_prompt": released.path.name,
            "generator_prompt_sha256": released.sha256, "judge_prompt": JUDGE_PROMPT,
            "authors_run": str(run.path), "authors_run_sha256": run.sha256, "authors_judge_model": run.judge_model,
            "order": "authors_run", "authors_row": row,
            "doc_order": [d.doc_uid for d in shown], "doc_roles": [d.role for d in shown]}
    return _messages(messages), meta


def _reference_answer(item: JudgeInput) -> str:
    reference = item.reference
    return "\n".join(a.text for a in reference.answers) if reference is not None else ""


def judge_messages(item: JudgeInput) -> list[ChatMessage]:
    """The authors' judge messages (their run.py's create_evaluate_messages, read now from the run's recorded copy)
    with the released judge prompt and the five inputs it lists."""
    meta = item.prompt_meta
    released = released_prompt(meta["prompts_dir"], "judge", meta.get("prompt_language") or "en")
    run = authors.load_run(meta.get("authors_run") or authors.runner_path(meta["prompts_dir"]))
    _, positives, _ = authors.chunk_lists(item.documents)
    reasoning = item.reference.reasoning if item.reference is not None and item.reference.reasoning else ""
    return _messages(authors.evaluate_messages(run, released.text, item.query, reasoning, _reference_answer(item),
                                               positives, item.response))
