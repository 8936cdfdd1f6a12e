"""The 'paper' prompt setting of LIT-RAGBench: the generator and judge prompts its authors released, read at run time
from the user's copy of the dataset's `prompts/` directory; no text of those files is kept in this repository.

The directory comes from `gauntlet run --prompts-dir DIR` (or the GAUNTLET_LIT_RAGBENCH_PROMPTS variable). Generation
records it, with the file name and sha256 of the prompt it read, in the response's prompt_meta; scoring reads the
released judge prompt from the same directory and refuses (a judge error, counted) when the file is gone or changed
language. The judge gets what the released judge prompt lists: the question, the reference reasoning and answer, the
positive context and the generated answer. The released judge file names an output format it does not define, so
ours (JSON with a 0/1 score) is appended to it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.protocols.messages import ChatMessage
from core.protocols.prompting import InstanceView, numbered_documents

if TYPE_CHECKING:
    from core.protocols.base import Prompt
    from core.scoring.judges.base import JudgeInput

PROMPTS_ENV = "GAUNTLET_LIT_RAGBENCH_PROMPTS"
PAPER = "paper"
PRODUCT = "product"
PAPER_CONDITION = "paper_prompts"
SETTING_CONDITIONS: dict[str, str] = {PAPER: PAPER_CONDITION, PRODUCT: ""}  # prompt setting -> its condition
JUDGE_PROMPT = "lit_ragbench:paper"  # prompt_meta['judge_prompt']: core.scoring.judges.registry dispatches on it
JUDGE_OUTPUT_FORMAT = (
    "<OUTPUT_FORMAT>\n"
    'Reply with one JSON object and nothing else: {"score": 1 or 0, "reason": "one short sentence"}\n'
    "</OUTPUT_FORMAT>"
)


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


def _tag(name: str, body: str) -> str:
    return f"<{name}>\n{body.strip()}\n</{name}>"


def paper_prompt(instance: InstanceView, documents: Sequence[Any], language: str) -> Prompt:
    """System: the released generator prompt of the question's language; user: the shuffled documents and the
    question in the tags that prompt names. prompt_meta says which file (and which bytes) it was."""
    directory = prompts_dir()
    released = released_prompt(directory, "generate", language)
    user = "\n".join([_tag("DOCUMENTS", numbered_documents(documents) if documents else ""),
                      _tag("QUESTION", instance.query)])
    meta = {"prompt_setting": PAPER, "prompts_dir": str(directory), "generator_prompt": released.path.name,
            "generator_prompt_sha256": released.sha256, "judge_prompt": JUDGE_PROMPT}
    return [ChatMessage(role="system", content=released.text), ChatMessage(role="user", content=user)], meta


def _reference_answer(item: JudgeInput) -> str:
    reference = item.reference
    return "\n".join(a.text for a in reference.answers) if reference is not None else ""


def positive_context(item: JudgeInput) -> str:
    """The positive chunks (stored role 'supporting') the generator was given, numbered as the judge reads them."""
    positives = [d for d in item.documents if d.role == "supporting"]
    return numbered_documents(positives) if positives else "(none)"


def judge_messages(item: JudgeInput) -> list[ChatMessage]:
    """The released judge prompt (read now from the run's recorded directory) with our output format, and the five
    inputs it lists."""
    meta = item.prompt_meta
    released = released_prompt(meta["prompts_dir"], "judge", meta.get("prompt_language") or "en")
    reasoning = item.reference.reasoning if item.reference is not None and item.reference.reasoning else ""
    user = "\n".join([_tag("QUESTION", item.query), _tag("REFERENCE_REASONING_CONTENT", reasoning),
                      _tag("REFERENCE_ANSWER", _reference_answer(item)), _tag("POSITIVE_CONTEXT", positive_context(item)),
                      _tag("GENERATED_ANSWER", item.response)])
    return [ChatMessage(role="system", content=f"{released.text.rstrip()}\n{JUDGE_OUTPUT_FORMAT}"),
            ChatMessage(role="user", content=user)]
