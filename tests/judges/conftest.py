"""Fixtures for judge and scoring tests: three small instances (noisy, gap, conflict) in the per-test database."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from core.generation.providers.base import ChatMessage, Completion, ProviderError
from core.scoring.judges.base import DocumentView, JudgeInput
from core.store.models import Constraint, Document, Domain, Instance, Model, Response, Run

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample" / "enterprise_rag_sample.jsonl"

NOISY_QUERY = "What is the warranty period of the X200 pump?"
GAP_QUERY = "What is the penalty for filing form Q7 late?"
CONFLICT_QUERY = "When is the annual audit deadline?"

NOISY_DOCS = [
    dict(doc_uid="pump-manual", title="X200 pump manual", role="supporting",
         text="The X200 pump has a warranty period of 24 months from installation. "
              "The warranty covers seals and the motor assembly. Claims must be filed through the dealer portal."),
    dict(doc_uid="canteen", title="Canteen schedule", role="noise",
         text="The canteen opens at 8 am on weekdays. Vegetarian meals are served on Fridays."),
]
GAP_DOCS = [
    dict(doc_uid="form-q5", title="Form Q5 guide", role="noise",
         text="Form Q5 must be filed by the end of March. Form Q5 covers quarterly energy use."),
]
CONFLICT_DOCS = [
    dict(doc_uid="memo-2024", title="Internal memo", role="conflicting", conflict_group="audit-date",
         conflict_summary="The memo sets the audit deadline on 12 May; the revised plan sets 2 June.",
         text="According to the internal memo, the annual audit deadline is 12 May 2025."),
    dict(doc_uid="plan-rev", title="Revised audit plan", role="conflicting", conflict_group="audit-date",
         conflict_summary="The memo sets the audit deadline on 12 May; the revised plan sets 2 June.",
         text="The revised audit plan moves the annual audit deadline to 2 June 2025 to match the regulator."),
]

CONSTRAINTS = {
    "noisy": [
        dict(cid="c1", text="Do not use emojis.", category="output", sub_dimension="negative", judge_method="rule",
             checker_id="enterprise:no_emoji"),
        dict(cid="c2", text="Answer as a maintenance engineer.", category="persona", sub_dimension="role",
             judge_method="llm", criterion="Engineer persona and tone."),
        dict(cid="c3", text="If the documents lack the answer, say 'Data Unavailable'.", category="knowledge_protocol",
             sub_dimension="knowledge_gap", judge_method="llm", criterion="States Data Unavailable when missing.",
             precondition="gap"),
        dict(cid="c4", text="If sources conflict, present both with sources.", category="knowledge_protocol",
             sub_dimension="conflict_handling", judge_method="llm", criterion="Both sides with sources.",
             precondition="conflict"),
        dict(cid="c5", text="Cite the documents you use.", category="knowledge_protocol", sub_dimension="citation",
             judge_method="llm", criterion="At least one document reference."),
    ],
    "gap": [
        dict(cid="c1", text="If the documents lack the answer, say 'Data Unavailable'.", category="knowledge_protocol",
             sub_dimension="knowledge_gap", judge_method="llm", criterion="States Data Unavailable when missing.",
             precondition="gap"),
        dict(cid="c2", text="If sources conflict, present both with sources.", category="knowledge_protocol",
             sub_dimension="conflict_handling", judge_method="llm", criterion="Both sides with sources.",
             precondition="conflict"),
        dict(cid="c3", text="Keep a neutral tone.", category="output", sub_dimension="style", judge_method="llm",
             criterion="Neutral tone."),
        dict(cid="c4", text="Start with 'Answer:' when conflicts exist.", category="output", sub_dimension="format",
             judge_method="rule", checker_id="enterprise:no_emoji", precondition="conflict"),
    ],
    "conflict": [
        dict(cid="c1", text="If sources conflict, present both with sources.", category="knowledge_protocol",
             sub_dimension="conflict_handling", judge_method="llm", criterion="Both sides with sources.",
             precondition="conflict"),
        dict(cid="c2", text="Do not use emojis.", category="output", sub_dimension="negative", judge_method="rule",
             checker_id="enterprise:no_emoji"),
    ],
}

ANSWERS = {
    "noisy": "The X200 pump has a warranty period of 24 months from installation [1].",
    "gap": "Data Unavailable. The provided documents do not contain the penalty for form Q7.",
    "conflict": "The sources conflict: the internal memo says 12 May 2025, while the revised audit plan says 2 June 2025.",
}
REFUSAL = "I cannot find the answer in the provided documents."

@dataclass
class World:
    """A small benchmark in a fresh DB: one run, instance ids by mode, a response factory."""

    engine: Engine
    run_id: int
    model_ids: dict[str, int]
    instances: dict[str, int]
    responses: list[int] = field(default_factory=list)

    def respond(self, model: str, mode: str, text: str | None = None, status: str = "done") -> int:
        """Add a response of `model` to the `mode` instance."""
        with Session(self.engine) as s:
            r = Response(run_id=self.run_id, model_id=self.model_ids[model], instance_id=self.instances[mode],
                         status=status, text=ANSWERS[mode] if text is None else text, latency_ms=12.0, cost_usd=0.001)
            s.add(r)
            s.commit()
            self.responses.append(r.id)
            return r.id


def add_instance(s: Session, domain_id: int, mode: str, uid: str) -> int:
    """Insert one instance of `mode` with its documents and constraints."""
    query = {"noisy": NOISY_QUERY, "gap": GAP_QUERY, "conflict": CONFLICT_QUERY}[mode]
    inst = Instance(uid=uid, domain_id=domain_id, query=query, mode=mode)
    s.add(inst)
    s.flush()
    docs = {"noisy": NOISY_DOCS, "gap": GAP_DOCS, "conflict": CONFLICT_DOCS}[mode]
    for pos, d in enumerate(docs):
        s.add(Document(instance_id=inst.id, position=pos, **d))
    for pos, c in enumerate(CONSTRAINTS[mode]):
        s.add(Constraint(instance_id=inst.id, position=pos, **c))
    return inst.id


def seed_run(s: Session, domain: str, models: tuple[str, ...], run: str) -> tuple[int, dict[str, int], int]:
    """A domain, openai-compatible model rows and a done run, flushed: (domain id, model ids by name, run id)."""
    dom = Domain(name=domain)
    rows = {n: Model(name=n, provider="openai_compatible", model_name=n) for n in models}
    run_row = Run(name=run, status="done")
    s.add_all([dom, *rows.values(), run_row])
    s.flush()
    return dom.id, {n: m.id for n, m in rows.items()}, run_row.id


def point_judge(engine: Engine, server, name: str = "judge-x") -> None:
    """Point the judge model row `name` at a running FakeLLMServer."""
    with Session(engine) as s:
        m = s.exec(select(Model).where(Model.name == name)).one()
        m.settings = {"base_url": server.base_url + "/v1"}
        s.add(m)
        s.commit()


@pytest.fixture
def world(engine: Engine) -> World:
    """Domain, two generator models, a judge model row, a run and one instance per mode."""
    with Session(engine) as s:
        dom_id, model_ids, run_id = seed_run(s, "Energy", ("gen-a", "gen-b", "judge-x"), "r1")
        instances = {m: add_instance(s, dom_id, m, f"{m}-1") for m in ("noisy", "gap", "conflict")}
        s.commit()
        return World(engine, run_id, model_ids, instances)


def judge_input(mode: str, response: str) -> JudgeInput:
    """A JudgeInput for the fixture instance of `mode` (no DB needed)."""
    query = {"noisy": NOISY_QUERY, "gap": GAP_QUERY, "conflict": CONFLICT_QUERY}[mode]
    docs = {"noisy": NOISY_DOCS, "gap": GAP_DOCS, "conflict": CONFLICT_DOCS}[mode]
    return JudgeInput(query=query, mode=mode, response=response,
                      documents=[DocumentView(position=i, **d) for i, d in enumerate(docs)])


class ScriptedClient:
    """An in-test LLM client: replies chosen by the first [task: ...] tag / substring rule that matches the prompt."""

    def __init__(self, rules: list[tuple[str, str | Exception]], cost: float = 0.01) -> None:
        self.rules = rules
        self.cost = cost
        self.calls: list[str] = []

    async def complete(self, messages: list[ChatMessage], *, purpose: str) -> Completion:
        prompt = "\n".join(m.content for m in messages)
        self.calls.append(purpose)
        for needle, reply in self.rules:
            if needle in prompt:
                if isinstance(reply, Exception):
                    raise reply
                return Completion(text=reply, cost_usd=self.cost)
        raise ProviderError(f"no scripted reply for purpose {purpose}", retryable=False)


@cache
def sample_instances() -> dict[str, dict]:
    """The bundled sample benchmark (data/sample/enterprise_rag_sample.jsonl) by instance id."""
    return {row["id"]: row for row in map(json.loads, SAMPLE.read_text(encoding="utf-8").splitlines()) if row}


def sample_documents(uid: str) -> list[DocumentView]:
    """The documents of a sample instance as a judge sees them, in stored order ([doc 1] is the first)."""
    return [DocumentView(position=i, doc_uid=d["doc_id"], title=d["title"], text=d["text"], source=d.get("source", ""),
                         role=d["role"], conflict_group=d.get("conflict_group"), conflict_summary=d.get("conflict_summary"))
            for i, d in enumerate(sample_instances()[uid]["documents"])]


def sample_input(uid: str, response: str) -> JudgeInput:
    """A JudgeInput for a real instance of the bundled sample."""
    row = sample_instances()[uid]
    return JudgeInput(query=row["query"], mode=row["mode"], documents=sample_documents(uid), response=response)
