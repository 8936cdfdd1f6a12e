"""The hard set as a judge-check suite: 252 items written for this project (English, Chinese, Japanese), labelled in
two passes under docs/hard_set_guidelines.md, disagreements adjudicated in a third file.

Who labelled (the labels are not human labels): pass 1 is the item author's construction label (annotator
"construction", an LLM agent that wrote the items); pass 2 is an independent blind LLM-agent labeller that saw only
the blind copy of the items and the guidelines. The annotator-annotator row compares the two raw passes.

What the judge scores per aspect (binary labels, 0 = unsupported / incomplete, 1 = supported / complete):
- faithfulness = the judge's faithfulness of the response to the passages;
- completeness = the judge's coverage of the passages' claims by the response.
Until the second pass covers every item the check reports the judge and baseline rows against the construction labels,
the annotator-annotator row over the items both passes labelled (or as missing), and the verdict as undetermined (a
state, not a number): "second labelling pass missing for k items".
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from core.analysis import certify as cert
from core.config import REPO_ROOT
from core.scoring.judges.base import DocumentView, Judge, JudgeInput, MetricOutcome

NAME = "hard_set"
FOLDER = REPO_ROOT / "data" / "suites" / "hard_set"
ITEMS = "items.jsonl"
BLIND = "blind/items.jsonl"
PASSES = {"construction": "labels_construction.jsonl", "blind-llm-agent": "labels_pass2.jsonl"}
SECOND = "blind-llm-agent"
ADJUDICATION = "adjudication.jsonl"
GUIDELINES = "docs/hard_set_guidelines.md"
ASPECTS = ("faithfulness", "completeness")
LABELS = {"faithfulness": ("unsupported", "supported"), "completeness": ("incomplete", "complete")}
SCALE = (0.0, 1.0)
PAIR_ROW = "annotator vs annotator"


@dataclass(frozen=True)
class Item:
    """One hard-set item: the question, the passages and the response to judge."""

    id: str
    language: str
    phenomenon: str
    question: str
    passages: list[DocumentView]
    response: str


@dataclass(frozen=True)
class Disagreement:
    """One (item, aspect) the two passes labelled differently, with its adjudication if any."""

    id: str
    aspect: str
    labels: dict[str, str]
    adjudicated: str | None
    reason: str
    adjudicator: str


def _rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                out.append((number, json.loads(line)))
            except json.JSONDecodeError as error:
                raise ValueError(f"{path.name} line {number}: not JSON ({error.msg})") from error
    return out


def _field(row: dict[str, Any], name: str, where: str) -> str:
    value = row.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: field {name!r} must be a non-empty text, got {value!r}")
    return value


def load_items(folder: Path | None = None) -> list[Item]:
    """The suite's items in file order; a malformed line is named by line and field."""
    return read_items((folder or FOLDER) / ITEMS)


def read_items(path: Path) -> list[Item]:
    """The items of one items file (the full or the blind copy)."""
    items = []
    for number, row in _rows(path):
        where = f"{path.name} line {number}"
        passages = row.get("passages")
        if not isinstance(passages, list) or not passages:
            raise ValueError(f"{where}: field 'passages' must be a non-empty list")
        docs = [DocumentView(position=n, doc_uid=f"{row.get('id')}-p{n}", title=str(p.get("title", "")),
                             text=_field(p, "text", f"{where} passages[{n - 1}]")) for n, p in enumerate(passages, 1)]
        items.append(Item(_field(row, "id", where), _field(row, "language", where),
                          str(row.get("phenomenon", "")), _field(row, "question", where), docs,
                          _field(row, "response", where)))
    return items


def read_labels(path: Path, ids: set[str]) -> dict[tuple[str, str], str]:
    """One annotator's labels by (id, aspect), the last line winning (append-only corrections); {} when the file is
    absent; an unknown id, aspect or label is named by line and field."""
    if not path.exists():
        return {}
    out = {}
    for number, row in _rows(path):
        where = f"{path.name} line {number}"
        item, aspect, label = _field(row, "id", where), _field(row, "aspect", where), _field(row, "label", where)
        if item not in ids:
            raise ValueError(f"{where}: field 'id' names no item: {item!r}")
        if aspect not in LABELS:
            raise ValueError(f"{where}: field 'aspect' must be one of {', '.join(LABELS)}, got {aspect!r}")
        if label not in LABELS[aspect]:
            raise ValueError(f"{where}: field 'label' must be one of {', '.join(LABELS[aspect])}, got {label!r}")
        out[(item, aspect)] = label
    return out


def read_adjudication(path: Path, ids: set[str]) -> dict[tuple[str, str], tuple[str, str, str]]:
    """(label, reason, adjudicator) by (id, aspect), last line winning; {} when absent."""
    if not path.exists():
        return {}
    labels = read_labels(path, ids)
    out = {}
    for number, row in _rows(path):
        where = f"{path.name} line {number}"
        key = (row["id"], row["aspect"])
        out[key] = (labels[key], _field(row, "reason", where), _field(row, "adjudicator", where))
    return out


@dataclass(frozen=True)
class Labels:
    """Both passes and the adjudication, with the state of the second pass."""

    passes: dict[str, dict[tuple[str, str], str]]
    adjudication: dict[tuple[str, str], tuple[str, str, str]]

    def state(self, n_items: int) -> str:
        """'complete', 'missing', or 'missing for k items' (items added after the second pass, or not yet labelled
        by it on every aspect) for the second pass."""
        second = self.passes[SECOND]
        if not second:
            return "missing"
        covered = {i for i, _ in second if all((i, a) in second for a in ASPECTS)}
        missing = n_items - len(covered)
        return "complete" if missing <= 0 else f"missing for {missing} items"


def load_labels(items: list[Item], folder: Path | None = None) -> Labels:
    """Every pass's labels and the adjudication, checked against the items."""
    ids, folder = {i.id for i in items}, folder or FOLDER
    return Labels({name: read_labels(folder / path, ids) for name, path in PASSES.items()},
                  read_adjudication(folder / ADJUDICATION, ids))


def disagreements(items: list[Item], labels: Labels) -> list[Disagreement]:
    """Every (item, aspect) both passes labelled, differently, in item order, with its adjudication if any."""
    out = []
    for item in items:
        for aspect in ASPECTS:
            given = {name: p[(item.id, aspect)] for name, p in labels.passes.items() if (item.id, aspect) in p}
            if len(given) == len(labels.passes) and len(set(given.values())) > 1:
                adj = labels.adjudication.get((item.id, aspect))
                out.append(Disagreement(item.id, aspect, given, adj[0] if adj else None, adj[1] if adj else "",
                                        adj[2] if adj else ""))
    return out


def labelling(items: list[Item], labels: Labels) -> dict[str, Any]:
    """Who labelled the suite, each pass's label count, the second pass's state, the disagreements and how many are
    adjudicated (stored with the check and printed above its rows)."""
    found = disagreements(items, labels)
    return {"guidelines": GUIDELINES, "agreement": cert.finite(pass_agreement(items, labels)), "who": "pass 1: the item author's construction labels (an LLM agent); pass 2: "
            "an independent blind LLM-agent labeller; not human labels",
            "passes": {name: len(p) for name, p in labels.passes.items()},
            "second_pass": labels.state(len(items)), "disagreements": len(found),
            "adjudicated": sum(d.adjudicated is not None for d in found)}


def pass_agreement(items: list[Item], labels: Labels, resamples: int = cert.RESAMPLES) -> dict[str, dict[str, Any]]:
    """Annotator-annotator kappa of the two raw passes per aspect, over every item both labelled and per language
    (the certificate's own annotator row, 95% bootstrap over items); {} without a second pass."""
    out: dict[str, dict[str, Any]] = {}
    for aspect in ASPECTS:
        per_item = {i.id: tuple(_numeric(aspect, p[(i.id, aspect)]) for p in labels.passes.values()
                                if (i.id, aspect) in p) for i in items}
        for scope in ("all", *sorted({i.language for i in items})):
            both = [per_item[i.id] for i in items if len(per_item[i.id]) == len(labels.passes)
                    and scope in ("all", i.language)]
            if len(both) < 2:
                continue
            row = cert.certify(aspect, [ls[0] for ls in both], both, {}, SCALE, resamples=resamples).human
            agree = sum(len(set(ls)) == 1 for ls in both) / len(both)
            out[f"{aspect} ({scope})"] = {"kappa": row.kappa, "ci": list(row.ci), "agreement": agree,
                                          "n_items": len(both)}
    return out


# --------------------------------------------------------------------------- scoring and certification


def judge_input(item: Item) -> JudgeInput:
    """The judge's view: the question, the passages and the response, in the item's language."""
    return JudgeInput(query=item.question, mode="noisy", documents=item.passages, response=item.response,
                      language=item.language, uid=item.id)


def _value(outcome: MetricOutcome) -> float | None:
    return outcome.value if outcome.status == "ok" else None


async def score_item(judge: Judge, item: Item) -> tuple[dict[str, float | None], int, float]:
    """The judge's faithfulness and completeness of one response; calls and cost."""
    view = judge_input(item)
    claims = await judge.context_claims(view)
    faith = await judge.faithfulness(view)
    cover = await judge.coverage(view, claims)
    scores = {"faithfulness": _value(faith), "completeness": _value(cover) if claims.status == "ok" else None}
    return scores, claims.calls + faith.calls + cover.calls, claims.cost_usd + faith.cost_usd + cover.cost_usd


async def score_all(judge: Judge, items: list[Item], concurrency: int = 8) -> list[tuple[dict, int, float]]:
    """Every item scored (at most `concurrency` at once)."""
    gate = asyncio.Semaphore(concurrency)

    async def bounded(item: Item) -> tuple[dict, int, float]:
        async with gate:
            return await score_item(judge, item)

    return list(await asyncio.gather(*(bounded(i) for i in items)))


def _numeric(aspect: str, label: str) -> float:
    return float(LABELS[aspect].index(label))


def certify_items(items: list[Item], scores: list[dict[str, float | None]], labels: Labels,
                  resamples: int = cert.RESAMPLES) -> list[cert.Certificate]:
    """Per aspect, the judge and the baselines against the passes' labels (unweighted kappa on the binary labels);
    without a complete second pass, the annotator-annotator row is missing and the verdict undetermined."""
    state = labels.state(len(items))
    base = {name: [fn(i.response, "\n".join(d.text for d in i.passages)) for i in items]
            for name, fn in cert.BASELINE_SCORERS.items()}
    out = []
    for aspect in ASPECTS:
        per_item = [tuple(_numeric(aspect, p[(i.id, aspect)]) for p in labels.passes.values() if (i.id, aspect) in p)
                    for i in items]
        both = [n for n, ls in enumerate(per_item) if len(ls) == len(labels.passes)]
        rated = both if state == "complete" else [n for n, ls in enumerate(per_item) if ls]
        c = cert.certify(aspect, [scores[n][aspect] for n in rated], [per_item[n] for n in rated],
                         {k: [v[n] for n in rated] for k, v in base.items()}, SCALE, resamples=resamples)
        c = replace(c, pair_row=PAIR_ROW)
        if state != "complete":
            c = replace(c, verdict=cert.UNDETERMINED,
                        note=f"second labelling pass {state} ({PASSES[SECOND]}); judge and baselines "
                             f"against the construction labels only; the rule needs both passes")
        out.append(c)
    return out
