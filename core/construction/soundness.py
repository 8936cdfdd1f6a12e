"""The expert sound rate of built benchmark sets: of the built instances experts verified, the share they accepted,
with its Wilson score interval (it never leaves [0, 1])."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import Engine
from sqlmodel import Session, col, select

from core.store.benchmark import GeneratedCount, generated_counts
from core.store.models import Annotation, BenchmarkSet, BenchmarkSetMember, Instance, Response

SMALL_N = 30  # fewer expert verdicts than this: the note says "small n" (the reports' † n < 30)


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


def built_sound_rates(engine: Engine, instance_ids: Iterable[int] | None = None) -> list[SoundRate]:
    """Every set that came from a build (only those holding one of `instance_ids`, when given), with its expert sound
    rate (accepted of verified; reject and needs-edit count as unsound), newest set first."""
    out = []
    scope = None if instance_ids is None else set(instance_ids)
    with Session(engine) as session:
        sets = session.exec(select(BenchmarkSet).where(BenchmarkSet.origin == "build")
                            .order_by(col(BenchmarkSet.id).desc())).all()
        for bset in sets:
            members = session.exec(select(Instance.id, Instance.uid).join(
                BenchmarkSetMember, col(BenchmarkSetMember.instance_id) == col(Instance.id))
                .where(BenchmarkSetMember.set_id == bset.id)).all()
            if scope is not None and not scope.intersection(i for i, _ in members):
                continue
            uids = {uid for _, uid in members}
            decisions = _latest_decisions(session, uids)
            sound, verified = sum(d == "accept" for d in decisions.values()), len(decisions)
            low, high = wilson(sound, verified) if verified else (None, None)
            out.append(SoundRate(bset.name, len(uids), verified, sound, sound / verified if verified else None,
                                 low, high))
    return out


def small_n(rate: SoundRate) -> bool:
    """True when too few items were verified for a tight interval (fewer than SMALL_N)."""
    return 0 < rate.verified < SMALL_N


def sound_rate_note(rate: SoundRate) -> str:
    """One built set's sound rate as a report note: rate, n verified of the set, Wilson 95% interval, small n."""
    if not rate.verified or rate.rate is None or rate.low is None or rate.high is None:
        return (f"Built set {rate.set_name}: {rate.instances} instances, none verified by experts yet "
                "(sound rate unknown).")
    return (f"Built set {rate.set_name}: expert sound rate {rate.rate:.0%} ({rate.sound} of {rate.verified} "
            f"verified sound; n = {rate.verified} of {rate.instances} instances), Wilson 95% CI "
            f"{rate.low:.0%}–{rate.high:.0%}" + (f"; small n (< {SMALL_N}): the interval is wide" if small_n(rate)
                                                else "") + ".")


def run_instance_ids(engine: Engine, run_ids: Sequence[int]) -> set[int]:
    """The instance versions the runs' responses answered."""
    with Session(engine) as session:
        return set(session.exec(select(Response.instance_id).where(col(Response.run_id).in_(list(run_ids)))
                                .distinct()).all())


@dataclass(frozen=True)
class BenchmarkNotes:
    """The data notes of a report on some runs: the built sets they drew on with their expert sound rates, and their
    instances an LLM drafted, wrote or edited (per protocol and mark) out of all the instances they answered."""

    sound_rates: list[SoundRate]
    generated: list[GeneratedCount]
    instances: int

    def lines(self) -> list[str]:
        """The notes as sentences (the CLI report; the decision report renders the same numbers with their keys)."""
        out = [sound_rate_note(r) for r in self.sound_rates]
        if self.generated:
            listed = "; ".join(f"{c.protocol}: {c.instances} {c.generated}" for c in self.generated)
            out.append(f"{sum(c.instances for c in self.generated)} of {self.instances} instances answered are "
                       f"marked LLM-generated or LLM-edited ({listed}).")
        return out


def benchmark_notes(engine: Engine, run_ids: Sequence[int]) -> BenchmarkNotes:
    """The data notes of a report on `run_ids`: each built set they drew on with its expert sound rate (the Build
    benchmark page's computation, built_sound_rates), and how many of their instances an LLM drafted, wrote or
    edited, and with which model (core.store.generated)."""
    ids = run_instance_ids(engine, run_ids)
    return BenchmarkNotes(built_sound_rates(engine, ids), [c for c in generated_counts(engine, ids) if c.marked],
                          len(ids))
