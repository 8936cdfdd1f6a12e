"""Seeded databases for the expert-workspace tests: users of every role, instances of each mode, a run with responses."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from core.review.auth import Principal, create_user
from core.store.db import make_engine
from core.store.models import Constraint, Document, Domain, Instance, Model, Response, Run, Verdict
from tests.backends import active

PASSWORDS = {
    "admin": "admin-pass-1",
    "alice": "alice-pass-1",
    "bob": "bob-pass-12",
    "carol": "carol-pass-1",
    "ana": "ana-pass-12",
    "vic": "vic-pass-12",
}
ROLES = {"admin": "admin", "alice": "expert", "bob": "expert", "carol": "expert", "ana": "analyst", "vic": "viewer"}
DOMAINS = {"alice": ["Energy"], "bob": ["Energy"], "carol": ["Medical"]}
XSS_DOC = '<p>Grid load <b>peaked</b></p><script>alert(1)</script><img src=x onerror="alert(2)"><a href="javascript:alert(3)">x</a>'
XSS_RESPONSE = 'Answer <script>alert("r")</script> <img src=x onerror=alert(4)> [link](javascript:alert(5))'
T0 = datetime(2025, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Seeded:
    url: str
    engine: Engine
    instances: dict[str, int]  # uid -> instance id
    run_id: int
    responses: dict[tuple[str, str], int]  # (model, uid) -> response id


def principal(name: str, when: datetime | None = None) -> Principal:
    at = when or datetime.now(UTC)
    return Principal(name, ROLES[name], tuple(DOMAINS.get(name, ())), at, at)


def _instance(session: Session, uid: str, domain_id: int, mode: str, minutes: int, *, xss: bool = False) -> int:
    inst = Instance(uid=uid, domain_id=domain_id, query=f"What is the peak load for {uid}?", mode=mode,
                    created_at=T0 + timedelta(minutes=minutes))
    session.add(inst)
    session.flush()
    session.add(Constraint(instance_id=inst.id, position=0, cid="c1", text="Use a numbered list.", category="output",
                           sub_dimension="format", judge_method="rule", checker_id="enterprise:numbered_list"))
    session.add(Constraint(instance_id=inst.id, position=1, cid="c2", text="Cite the source of every figure.",
                           category="knowledge_protocol", sub_dimension="citation", judge_method="llm",
                           criterion="Every number has a citation."))
    roles = {"noisy": ["supporting", "noise"], "gap": ["noise", "partial"], "conflict": ["conflicting", "conflicting"]}[mode]
    for pos, role in enumerate(roles):
        conflict = role == "conflicting"
        session.add(Document(
            instance_id=inst.id, position=pos, doc_uid=f"{uid}-d{pos + 1}", title=f"Report {pos + 1}",
            text=XSS_DOC if (xss and pos == 0) else f"Peak load was {400 + pos} MW in 2024.",
            content_type="html" if (xss and pos == 0) else "text", role=role,
            conflict_group="peak" if conflict else None,
            conflict_summary="Reports disagree on the 2024 peak load (400 vs 401 MW)." if conflict else None,
        ))
    return inst.id


@cache
def _template() -> Seeded:
    url = active().create()
    engine = make_engine(url)
    for name, role in ROLES.items():
        create_user(engine, name, role, password=PASSWORDS[name], domains=DOMAINS.get(name, ()), email=f"{name}@example.com")
    with Session(engine) as session:
        energy, medical = Domain(name="Energy"), Domain(name="Medical")
        session.add_all([energy, medical])
        session.flush()
        ids = {
            "E-noisy": _instance(session, "E-noisy", energy.id, "noisy", 1, xss=True),
            "E-gap": _instance(session, "E-gap", energy.id, "gap", 2),
            "E-conflict": _instance(session, "E-conflict", energy.id, "conflict", 3),
            "M-noisy": _instance(session, "M-noisy", medical.id, "noisy", 0),
        }
        models = [Model(name="model-a", provider="baseline"), Model(name="model-b", provider="baseline")]
        run = Run(name="seed run", status="done")
        session.add_all([*models, run])
        session.flush()
        responses = {}
        for m in models:
            for uid, iid in ids.items():
                r = Response(run_id=run.id, model_id=m.id, instance_id=iid, status="done",
                             text=XSS_RESPONSE if uid == "E-noisy" else f"1. Peak load 400 MW [Report 1] ({m.name})")
                session.add(r)
                session.flush()
                responses[(m.name, uid)] = r.id
        session.commit()
        run_id = run.id
    engine.dispose()
    return Seeded(url, engine, ids, run_id, responses)


def seeded_db(folder: Path) -> Seeded:
    """A fresh copy of the seeded database (seeded once per process) on the active backend (`folder`: kept for
    callers; SQLite files live in the session's database folder)."""
    template = _template()
    url = active().create(template=template.url)
    return replace(template, url=url, engine=make_engine(url))


def add_verdicts(engine: Engine, seeded: Seeded, judge: str, values: dict[tuple[int, str], int]) -> None:
    """Store judge verdicts: keys (response id, 'c1'|'c2'|'rejection'|'conflict_recognition') -> 0/1."""
    with Session(engine) as session:
        for (rid, what), value in values.items():
            resp = session.get(Response, rid)
            if what in ("rejection", "conflict_recognition"):
                session.add(Verdict(response_id=rid, run_id=resp.run_id, judge=judge, metric=what, passed=bool(value),
                                    value=float(value)))
            else:
                con = session.exec(select(Constraint).where(Constraint.instance_id == resp.instance_id,
                                                            Constraint.cid == what)).one()
                session.add(Verdict(response_id=rid, run_id=resp.run_id, judge=judge, metric="constraint",
                                    constraint_id=con.id, passed=bool(value)))
        session.commit()
