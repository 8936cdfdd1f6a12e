"""The mtRAG human evaluations as a judge-check suite with passages (IBM/mt-rag-benchmark at commit cc5b1d4,
`mtrag-human/evaluations/reference_subset_with_human_evaluations.json`, Apache-2.0; read at run time from the user's
copy, ../shared/datasets/mtrag/, never copied into the repository).

Each evaluation is one generator's response to one conversation turn, rated by 2-3 annotators on 1-4 scales
(No / Mostly No / Mostly Yes / Yes). The judge sees what the annotators saw: the whole conversation up to the turn
(earlier user and agent turns, then the question) and the passages the generator was given.
What the judge scores per aspect:
- faithfulness    = the judge's faithfulness of the response to the passages;
- completeness    = the judge's coverage of the passages' claims by the response;
- appropriateness = F1 of the two (the judge has no separate measure of "an appropriate amount of information").
Naturalness is not judged (no fluency measure in the judges), so it is not certified.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.analysis import certify as cert
from core.config import REPO_ROOT
from core.scoring.judges.base import DocumentView, Judge, JudgeInput, MetricOutcome

NAME = "mtrag"
PATH = REPO_ROOT.parent / "shared" / "datasets" / "mtrag" / "reference_subset_with_human_evaluations.json"
ASPECTS = ("faithfulness", "completeness", "appropriateness")
SCALE = (1.0, 2.0, 3.0, 4.0)
WEIGHTS = "linear"


@dataclass(frozen=True)
class Item:
    """One rated response: the conversation as the annotators saw it, the passages, the response and the labels."""

    key: str
    model: str
    conversation: str
    passages: list[DocumentView]
    response: str
    labels: dict[str, tuple[float, ...]]


def conversation_text(turns: list[dict[str, Any]]) -> str:
    """The conversation up to the rated turn, one 'user: ' / 'agent: ' line per turn, in order."""
    return "\n".join(f"{t['speaker']}: {t['text']}" for t in turns)


def human_labels(annotations: dict[str, Any], aspect: str) -> tuple[float, ...]:
    """The annotators' ratings of one aspect (the 'system' and 'composite' entries are not annotators)."""
    return tuple(float(v["value"]) for k, v in annotations.get(aspect, {}).items()
                 if k not in ("system", "composite") and str(v.get("value", "")).strip())


def load(path: Path = PATH, limit: int | None = None) -> list[Item]:
    """The suite's rated responses in file order (first `limit`); a missing task or passage names the evaluation."""
    data = json.loads(path.read_text(encoding="utf-8"))
    docs = {d["document_id"]: d for d in data["documents"]}
    tasks = {t["task_id"]: t for t in data["tasks"]}
    items = []
    for index, e in enumerate(data["evaluations"]):
        task = tasks.get(e["task_id"])
        if task is None:
            raise ValueError(f"evaluations[{index}]: no task {e['task_id']!r}")
        passages = []
        for pos, c in enumerate(task.get("contexts", []), start=1):
            doc = docs.get(c["document_id"])
            if doc is None:
                raise ValueError(f"evaluations[{index}]: no document {c['document_id']!r}")
            passages.append(DocumentView(position=pos, doc_uid=doc["document_id"], title=doc.get("title") or "",
                                         text=doc["text"]))
        items.append(Item(f"{e['task_id']}|{e['model_id']}", e["model_id"], conversation_text(task["input"]),
                          passages, e.get("model_response") or "",
                          {a: human_labels(e["annotations"], a) for a in ASPECTS}))
    return items[:limit] if limit else items


def judge_input(item: Item) -> JudgeInput:
    """The judge's view: the conversation (earlier turns, then the question) and the passages."""
    return JudgeInput(query=item.conversation, mode="noisy", documents=item.passages, response=item.response,
                      language="en", uid=item.key)


def _value(outcome: MetricOutcome) -> float | None:
    return outcome.value if outcome.status == "ok" else None


async def score_item(judge: Judge, item: Item) -> tuple[dict[str, float | None], int, float]:
    """The judge's faithfulness, completeness and appropriateness of one response; calls and cost."""
    view = judge_input(item)
    claims = await judge.context_claims(view)
    faith = await judge.faithfulness(view)
    cover = await judge.coverage(view, claims)
    p, r = _value(faith), _value(cover) if claims.status == "ok" else None
    scores = {"faithfulness": p, "completeness": r, "appropriateness": cert.f1(p, r)}
    return scores, claims.calls + faith.calls + cover.calls, claims.cost_usd + faith.cost_usd + cover.cost_usd


async def score_all(judge: Judge, items: list[Item], concurrency: int = 8) -> list[tuple[dict, int, float]]:
    """Every item scored (at most `concurrency` at once)."""
    gate = asyncio.Semaphore(concurrency)

    async def bounded(item: Item) -> tuple[dict, int, float]:
        async with gate:
            return await score_item(judge, item)

    return list(await asyncio.gather(*(bounded(i) for i in items)))


def certify_items(items: list[Item], scores: list[dict[str, float | None]],
                  resamples: int = cert.RESAMPLES) -> list[cert.Certificate]:
    """Per aspect, the judge against the annotators on their 1-4 scale (linear weights), with the baselines."""
    base = {name: [fn(i.response, "\n".join(d.text for d in i.passages)) for i in items]
            for name, fn in cert.BASELINE_SCORERS.items()}
    out = []
    for aspect in ASPECTS:
        rated = [n for n, i in enumerate(items) if len(i.labels[aspect]) >= 2]
        out.append(cert.certify(aspect, [scores[n][aspect] for n in rated], [items[n].labels[aspect] for n in rated],
                                {k: [v[n] for n in rated] for k, v in base.items()}, SCALE, WEIGHTS,
                                resamples=resamples))
    return out
