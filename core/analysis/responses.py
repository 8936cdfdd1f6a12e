"""One instance or one response, for analysts: the responses of several models side by side, the exact prompt that
was sent, and every judge's verdicts and reasons side by side. Reads only."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from core.generation.reasoning import Reasoned, stored_split
from core.scoring.judges.names import judge_label
from core.store.benchmark import marks_by_instance
from core.store.db import saved_id, select_columns
from core.store.generated import mark_cell
from core.store.models import Constraint, Domain, Instance, LLMCall, Model, Response, Run, Verdict

RULE = "rule"


@dataclass(frozen=True)
class PromptSent:
    """The messages of a response's call: 'sent' (the stored request of its cached call, byte for byte) or 'rebuilt'
    (from the instance and the run's settings, when no call was stored: e.g. a prompt refused as too long)."""

    messages: list[dict[str, str]]
    source: str
    parameters: dict[str, Any] = field(default_factory=dict)
    note: str = ""


def prompt_sent(engine: Engine, response_id: int) -> PromptSent | None:
    """What the model was asked for one response (None if the response does not exist)."""
    with Session(engine) as session:
        response = session.get(Response, response_id)
        if response is None:
            return None
        call = session.get(LLMCall, response.cache_key) if response.cache_key else None
        if call is not None:
            request = call.request or {}
            return PromptSent(list(request.get("messages") or []), "sent", dict(request.get("parameters") or {}),
                              _context_note(response.prompt_meta))
        run = session.get(Run, response.run_id)
        config = (run.config if run else {}) or {}
        from core.generation.run_prompts import (
            instance_prompt,  # the prompt builder: loaded only when a prompt is rebuilt
        )

        messages, _ = instance_prompt(session, response.instance_id, config.get("order", "stored"),
                                      int(config.get("seed", 0)), response.condition)
    note = ("No call was stored for this response (it was never sent, or the cache was cleared): this is the prompt "
            "rebuilt from the instance and the run's order, seed and condition.")
    return PromptSent([{"role": m.role, "content": m.content} for m in messages], "rebuilt", {},
                      " ".join(filter(None, [note, _context_note(response.prompt_meta)])))


def _context_note(meta: dict | None) -> str:
    context = (meta or {}).get("context") or {}
    if not context:
        return ""
    dropped = context.get("dropped") or []
    if dropped:
        return (f"Over the context window ({context.get('tokens_before')} tokens, window {context.get('window')}): "
                f"documents {', '.join(map(str, dropped))} were dropped ({context.get('policy')}).")
    return f"Over the context window ({context.get('tokens_before')} tokens, window {context.get('window')}): {context.get('policy')}."


def _verdict_cell(v: Verdict) -> str:
    if v.status == "error":
        return "error"
    if v.status == "not_applicable":
        return "not applicable"
    if v.constraint_id is not None or v.value is None:
        return "undecided" if v.passed is None else "pass" if v.passed else "fail"
    if v.metric in ("faithfulness", "coverage"):
        return f"{v.value:.0%}"
    return f"{v.value:g}" if v.passed is None else "yes" if v.passed else "no"


def judges_side_by_side(engine: Engine, response_id: int) -> pd.DataFrame:
    """One row per constraint and per metric of a response, one verdict column and one reason column per judge (the
    rule checker is its own column); a cell is blank where that judge gave no verdict."""
    with Session(engine) as session:
        response = session.get(Response, response_id)
        if response is None:
            return pd.DataFrame()
        constraints = session.exec(select(Constraint).where(Constraint.instance_id == response.instance_id)
                                   .order_by(col(Constraint.position))).all()
        verdicts = session.exec(select(Verdict).where(Verdict.response_id == response_id).order_by(col(Verdict.id))).all()
    judges = sorted({v.judge for v in verdicts}, key=lambda j: (j != RULE, j))
    items: list[tuple[tuple[str, Any], str, str]] = [(("constraint", c.id), c.cid, c.text) for c in constraints]
    metrics = sorted({v.metric for v in verdicts if v.constraint_id is None})
    items += [(("metric", m), m, "") for m in metrics]
    cells: dict[tuple, dict[str, Verdict]] = {}
    for v in verdicts:
        key: tuple[str, Any] = ("constraint", v.constraint_id) if v.constraint_id is not None else ("metric", v.metric)
        cells.setdefault(key, {})[v.judge] = v  # the latest verdict of a judge counts
    rows = []
    for key, item, text in items:
        row: dict[str, Any] = {"item": item, "text": text}
        for judge in judges:
            verdict = cells.get(key, {}).get(judge)
            name = "rule checker" if judge == RULE else judge_label(judge)
            row[name] = "" if verdict is None else _verdict_cell(verdict)
            row[f"{name} · reason"] = "" if verdict is None else verdict.reason
        rows.append(row)
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class ModelResponse:
    """One model's response to an instance in a run, under a condition."""

    response_id: int
    run_id: int
    model: str
    condition: str
    status: str
    text: str
    error: str
    latency_ms: float | None
    cost_usd: float
    output_tokens: int
    reasoning: Reasoned = field(default_factory=lambda: Reasoned(""))
    reasoning_tokens: int = 0


def instance_responses(engine: Engine, instance_id: int, run_ids: Sequence[int] | None = None) -> list[ModelResponse]:
    """Every model's responses to one instance version (optionally in some runs), by model, run and condition."""
    query = (select(Response, Model.name).join(Model, col(Model.id) == Response.model_id)
             .where(Response.instance_id == instance_id))
    if run_ids:
        query = query.where(col(Response.run_id).in_(list(run_ids)))
    with Session(engine) as session:
        rows = session.exec(query.order_by(col(Model.name), col(Response.run_id), col(Response.condition))).all()
    out = []
    for r, name in rows:
        split = stored_split(r.text, r.reasoning, r.reasoning_state)
        out.append(ModelResponse(saved_id(r), r.run_id, name, r.condition, r.status, split.answer, r.error or "",
                                 r.latency_ms, r.cost_usd, r.output_tokens, split, r.reasoning_tokens))
    return out


@dataclass(frozen=True)
class AnsweredInstance:
    """An instance version answered in the chosen runs, with how many models answered it."""

    instance_id: int
    uid: str
    version: int
    domain: str
    mode: str | None
    query: str
    models: int
    generated: str = ""  # the LLM mark's short form ('' for a rule- or human-made instance)

    @property
    def label(self) -> str:
        """'uid vN · domain · mode · k models', then the LLM mark when a model drafted, wrote or edited it."""
        return (f"{self.uid} v{self.version} · {self.domain} · {self.mode or '-'} · {self.models} models"
                + (f" · {self.generated}" if self.generated else ""))


def answered_instances(engine: Engine, run_ids: Sequence[int]) -> list[AnsweredInstance]:
    """Instance versions with at least one response in the runs, by id, with the number of models that answered."""
    columns = (Instance.id, Instance.uid, Instance.version, Domain.name, Instance.mode, Instance.query)
    with Session(engine) as session:  # one row per instance, counted in SQL (no ORM objects per response)
        rows = session.exec(
            select_columns(*columns, func.count(func.distinct(Response.model_id)))
            .join(Response, Response.instance_id == Instance.id).join(Domain, Domain.id == Instance.domain_id)
            .where(col(Response.run_id).in_(list(run_ids))).group_by(*columns)
        ).all()
    marks = marks_by_instance(engine, [row[0] for row in rows])
    return [AnsweredInstance(i, uid, version, domain, mode, query, models, mark_cell(marks.get(i)))
            for i, uid, version, domain, mode, query, models in sorted(rows, key=lambda r: (r[1], r[2]))]


def instance_of_response(engine: Engine, response_id: int) -> int | None:
    """The instance version a response answered (None if the response does not exist)."""
    with Session(engine) as session:
        response = session.get(Response, response_id)
    return response.instance_id if response else None
