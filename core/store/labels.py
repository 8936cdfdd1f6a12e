"""Stored labels read back: the annotations their authors did not undo, the latest one per target and author, gold
labels, expert labels, verification decisions and gold sampling probabilities (what the read side and the review
write paths both read; the writes are in core.review)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from sqlalchemy.engine import Connection, Engine
from sqlmodel import Session, col, select

from core.store.label_models import payload_problems
from core.store.models import Annotation, Assignment, Response


def well_formed(row: Annotation) -> bool:
    """Whether a stored annotation's payload has the shape of its kind and target."""
    return not payload_problems(row.kind, row.target_type, row.payload)


def retracted_tokens(session: Session) -> set[str]:
    """Client tokens of the labels their authors undid (well-formed retractions by the label's own author)."""
    rows = session.exec(select(Annotation).where(Annotation.kind == "retraction")).all()
    undone = {r.payload.get("retracts"): r.author for r in rows if well_formed(r)}
    if not undone:
        return set()
    authors = dict(session.exec(select(Annotation.client_token, Annotation.author)
                                .where(col(Annotation.client_token).in_(list(undone)))).all())
    return {token for token, who in undone.items() if token is not None and authors.get(token) == who}


MAX_IN_LIST = 500


def live_annotations(
    engine: Engine | Connection, kind: str, target_ids: Iterable[int] | None = None, target_type: str | None = None,
    author: str | None = None,
) -> list[Annotation]:
    """Well-formed annotations of `kind` that their authors did not undo, oldest first."""
    with Session(engine) as session:
        query = select(Annotation).where(Annotation.kind == kind)
        if target_type is not None:
            query = query.where(Annotation.target_type == target_type)
        targets = None if target_ids is None else set(target_ids)
        if targets is not None and len(targets) <= MAX_IN_LIST:  # a long IN list costs more than filtering here
            query = query.where(col(Annotation.target_id).in_(list(targets)))
        if author is not None:
            query = query.where(Annotation.author == author)
        rows = session.exec(query.order_by(col(Annotation.created_at), col(Annotation.id))).all()
        undone = retracted_tokens(session)
    return [r for r in rows if well_formed(r) and r.client_token not in undone
            and (targets is None or r.target_id in targets)]


def effective_annotations(
    engine: Engine, kind: str, target_ids: Iterable[int] | None = None, target_type: str | None = None
) -> dict[int, dict[str, Annotation]]:
    """The latest well-formed annotation of `kind` per (target, author): later labels supersede earlier ones, and an
    undone label gives way to the one before it.

    Rows whose payload does not have the shape of their kind are left out (malformed_annotations lists them).
    """
    out: dict[int, dict[str, Annotation]] = defaultdict(dict)
    for row in live_annotations(engine, kind, target_ids, target_type):
        out[row.target_id][row.author] = row
    return dict(out)


PRODUCTION = "production_rag"
LABEL_ITEM_APPLIES = {"valid_refusal": "gap", "conflict_recognized": "conflict", "faithful": PRODUCTION}


def label_items(payload: dict[str, Any]) -> dict[str, int]:
    """Flatten a gold label into comparable items: 'constraint:<cid>', 'valid_refusal', 'conflict_recognized',
    'faithful'."""
    items = {f"constraint:{c}": int(v) for c, v in (payload.get("constraints") or {}).items()}
    for name in LABEL_ITEM_APPLIES:
        if payload.get(name) is not None:
            items[name] = int(payload[name])
    return items


def response_ids_for_runs(engine: Engine, run_ids: Iterable[int] | None) -> set[int] | None:
    """The ids of the runs' responses (None: no run given, every response)."""
    if run_ids is None:
        return None
    with engine.connect() as conn:  # plain rows, not ORM results: a paper-scale run has tens of thousands
        return set(conn.execute(select(Response.id).where(col(Response.run_id).in_(list(run_ids)))).scalars())


def any_annotation(engine: Engine, kinds: Iterable[str], target_type: str) -> bool:
    """Whether any annotation of `kinds` on `target_type` is stored (an index probe: without one, no label reader
    needs the runs' response ids)."""
    with engine.connect() as conn:
        return conn.execute(select(Annotation.id).where(col(Annotation.kind).in_(list(kinds)),
                                                        Annotation.target_type == target_type).limit(1)).first() \
            is not None


def gold_labels(engine: Engine, run_ids: Iterable[int] | None = None) -> dict[int, dict[str, Any]]:
    """Gold label per response: the latest adjudication, else the experts' label when at least two agree fully."""
    if not any_annotation(engine, ("gold_label", "adjudication"), "response"):
        return {}
    scope = response_ids_for_runs(engine, run_ids)
    out: dict[int, dict[str, Any]] = {}
    for rid, by_author in effective_annotations(engine, "gold_label", scope, "response").items():
        if len(by_author) >= 2:
            flats = [label_items(a.payload) for a in by_author.values()]
            if all(f == flats[0] for f in flats):
                out[rid] = next(iter(by_author.values())).payload
    for rid, by_author in effective_annotations(engine, "adjudication", scope, "response").items():
        out[rid] = max(by_author.values(), key=lambda a: (a.created_at, a.id or 0)).payload
    return out


def expert_labels(engine: Engine, run_ids: Iterable[int] | None = None) -> dict[int, dict[str, dict[str, Any]]]:
    """Latest expert label payloads per response and author (for agreement statistics; admins and analysts only)."""
    if not any_annotation(engine, ("gold_label",), "response"):
        return {}
    scope = response_ids_for_runs(engine, run_ids)
    return {
        rid: {a: ann.payload for a, ann in by_author.items()}
        for rid, by_author in effective_annotations(engine, "gold_label", scope, "response").items()
    }


GOLD_DESIGN = "gold_design"  # an assignment row that assigns no work: a later draw's weight for a sampled response


def gold_probabilities(engine: Engine, run_ids: Iterable[int] | None = None) -> dict[int, float]:
    """Recorded inclusion probability per gold-sampled response: the latest draw that sampled it, or the latest
    design record (core.review.gold_plan: probability 1 for a response sampled before a planned second draw)."""
    scope = response_ids_for_runs(engine, run_ids)
    with Session(engine) as session:
        rows = session.exec(select(Assignment.target_id, Assignment.probability).where(
            col(Assignment.kind).in_(["gold_label", GOLD_DESIGN]), col(Assignment.probability).is_not(None))
            .order_by(col(Assignment.id))).all()
    return {int(t): float(p) for t, p in rows if p is not None and (scope is None or t in scope)}


def gold_draws(engine: Engine, run_ids: Iterable[int] | None = None) -> dict[int, tuple[float, str]]:
    """(recorded inclusion probability, batch) per gold-sampled response, from the same row gold_probabilities reads:
    two responses of one planned batch (core.review.gold_plan) were drawn together, any others independently."""
    scope = response_ids_for_runs(engine, run_ids)
    with Session(engine) as session:
        rows = session.exec(select(Assignment.target_id, Assignment.probability, Assignment.batch).where(
            col(Assignment.kind).in_(["gold_label", GOLD_DESIGN]), col(Assignment.probability).is_not(None))
            .order_by(col(Assignment.id))).all()
    return {int(t): (float(p), str(b or "")) for t, p, b in rows if p is not None and (scope is None or t in scope)}


def verification_decisions(engine: Engine) -> dict[int, dict[str, dict[str, Any]]]:
    """Latest verification payload per instance version and author (for agreement statistics)."""
    return {
        iid: {a: ann.payload for a, ann in by_author.items()}
        for iid, by_author in effective_annotations(engine, "verification", target_type="instance").items()
    }
