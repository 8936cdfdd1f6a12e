"""The expert sound rate of built benchmark sets: of the built instances experts verified, the share they accepted,
with its Wilson score interval (it never leaves [0, 1])."""

from __future__ import annotations

import math
from dataclasses import dataclass

from sqlalchemy import Engine
from sqlmodel import Session, col, select

from core.store.models import Annotation, BenchmarkSet, BenchmarkSetMember, Instance


@dataclass(frozen=True)
class SoundRate:
    """One built set: instances, how many experts verified, how many they accepted (sound), the rate and its CI."""

    set_name: str
    instances: int
    verified: int
    sound: int
    rate: float | None
    low: float | None
    high: float | None


def wilson(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95% by default); (0, 1) when n is 0."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _latest_decisions(session: Session, uids: set[str]) -> dict[str, str]:
    """Per instance uid, the decision of its latest expert verification (any version)."""
    out: dict[str, str] = {}
    rows = session.exec(select(Annotation).where(Annotation.kind == "verification",
                                                 Annotation.target_type == "instance").order_by(col(Annotation.id))).all()
    for ann in rows:
        uid = (ann.payload or {}).get("instance_uid")
        if uid in uids and (ann.payload or {}).get("decision") in ("accept", "reject", "needs_edit"):
            out[uid] = ann.payload["decision"]
    return out


def built_sound_rates(engine: Engine) -> list[SoundRate]:
    """Every set that came from a build, with its expert sound rate (accepted of verified; reject and needs-edit
    count as unsound), newest set first."""
    out = []
    with Session(engine) as session:
        sets = session.exec(select(BenchmarkSet).where(BenchmarkSet.origin == "build")
                            .order_by(col(BenchmarkSet.id).desc())).all()
        for bset in sets:
            uids = set(session.exec(select(Instance.uid).join(BenchmarkSetMember,
                                                              col(BenchmarkSetMember.instance_id) == col(Instance.id))
                                    .where(BenchmarkSetMember.set_id == bset.id)).all())
            decisions = _latest_decisions(session, uids)
            sound, verified = sum(d == "accept" for d in decisions.values()), len(decisions)
            low, high = wilson(sound, verified) if verified else (None, None)
            out.append(SoundRate(bset.name, len(uids), verified, sound, sound / verified if verified else None,
                                 low, high))
    return out
