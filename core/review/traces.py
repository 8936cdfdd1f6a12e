"""From production traces to the experts: a sample of a deployed run's items, stratified by segment and by the
judges' uncertainty, into the labelling queue (each answer to two experts) and the verification queue (its
instance), with each item's inclusion probability recorded; then verified items promoted into a versioned set.

The draw is core.review.gold.draw_gold_sample with the 'segment_uncertainty' design (core.analysis.trace_sampling):
the recorded probabilities are the design's n_h / N_h, so corrected estimates (inverse-probability weighted PPI,
Horvitz-Thompson) stay unbiased for the whole run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from core.analysis.ppi import CorrectedEstimate, ipw_ppi_mean
from core.ingest.sets import SetVersion, add_set_version, set_instance_ids, set_versions
from core.review.annotations import with_retry
from core.review.auth import Principal, authorize
from core.review.gold import SEGMENT_UNCERTAINTY, SampleReport, draw_gold_sample
from core.store.db import saved_id
from core.store.labels import gold_labels, gold_probabilities
from core.store.models import Assignment, Instance, Response, Verdict


def sample_traces(engine: Engine, principal: Principal | None, run_id: int, n: int, seed: int = 0,
                  experts: list[str] | None = None) -> SampleReport:
    """Draw n items of a (deployed) run by segment x uncertainty: each answer goes to two experts' labelling queues
    and its instance to their verification queue, both with the item's inclusion probability."""
    report = draw_gold_sample(engine, principal, run_id, n=n, experts=experts, seed=seed, strategy=SEGMENT_UNCERTAINTY)
    with Session(engine) as session:
        rows = session.exec(select(Assignment, Response.instance_id)
                            .join(Response, col(Response.id) == col(Assignment.target_id))
                            .where(Assignment.kind == "gold_label", Assignment.batch == report.batch)).all()
    verification = {(instance_id, a.assignee): Assignment(kind="verification", target_id=instance_id,
                                                         assignee=a.assignee, batch=report.batch,
                                                         probability=a.probability)
                    for a, instance_id in rows}

    def write() -> None:
        with Session(engine) as session:
            taken = set(session.exec(select(Assignment.target_id, Assignment.assignee).where(
                Assignment.kind == "verification")).all())
            session.add_all(a for key, a in verification.items() if key not in taken)
            session.commit()

    with_retry(write)
    return report


@dataclass(frozen=True)
class PromoteReport:
    """What promoting did: the new set version, and the sampled items still waiting or rejected by the experts."""

    version: SetVersion | None
    accepted: int
    waiting: int
    rejected: int


def sampled_instances(engine: Engine, run_id: int) -> list[Instance]:
    """The latest versions of the instances whose answers in this run were sampled for the experts."""
    with Session(engine) as session:
        uids = session.exec(select(Instance.uid).join(Response, col(Response.instance_id) == col(Instance.id))
                            .join(Assignment, col(Assignment.target_id) == col(Response.id))
                            .where(Response.run_id == run_id, Assignment.kind == "gold_label",
                                   col(Assignment.probability).is_not(None))).all()
        return list(session.exec(select(Instance).where(col(Instance.uid).in_(sorted(set(uids))),
                                                        col(Instance.is_latest))).all())


def promote_verified(engine: Engine, principal: Principal | None, run_id: int, base: str) -> PromoteReport:
    """Put the sampled items the experts accepted (their latest, accepted version) into '<base> v(N+1)'."""
    who = authorize(engine, principal, "import_benchmark")
    latest = sampled_instances(engine, run_id)
    accepted = [saved_id(i) for i in latest if i.status == "accepted"]
    waiting = sum(1 for i in latest if i.status in ("unverified", "needs_edit"))
    rejected = sum(1 for i in latest if i.status == "rejected")
    versions = set_versions(engine, base)
    if not set(accepted) - (set_instance_ids(engine, versions[-1][1]) if versions else set()):
        return PromoteReport(None, len(accepted), waiting, rejected)  # nothing new since the last version
    version = add_set_version(engine, base, accepted, origin="promote", source=f"run {run_id}", author=who.username)
    return PromoteReport(version, len(accepted), waiting, rejected)


@dataclass(frozen=True)
class FaithfulnessEstimate:
    """Faithfulness of a deployed run's answers: the judge's raw mean over every answer, and, once experts labelled
    at least two sampled answers, the inverse-probability-weighted PPI estimate and the gold-only Horvitz-Thompson
    mean (both unbiased under the recorded sampling probabilities)."""

    judge: str
    answers: int
    judged: int
    judge_mean: float | None
    labelled: int
    corrected: CorrectedEstimate | None
    reason: str = ""


def faithfulness_estimate(engine: Engine, run_id: int, judge: str, confidence: float = 0.95) -> FaithfulnessEstimate:
    """The judge's faithfulness on the run corrected by the experts' 'faithful' labels, weighted by 1 / pi_i."""
    with Session(engine) as session:
        done = session.exec(select(Response.id).where(Response.run_id == run_id, Response.status == "done")
                            .order_by(col(Response.id))).all()
        values = session.exec(select(Verdict.response_id, Verdict.value).where(
            Verdict.run_id == run_id, Verdict.judge == judge, Verdict.metric == "faithfulness", Verdict.status == "ok",
            col(Verdict.value).is_not(None))).all()
    answers = [rid for rid in done if rid is not None]  # stored rows always have an id
    scored = {rid: value for rid, value in values if value is not None}  # the query keeps non-null values only
    judged = [float(scored[r]) for r in answers if r in scored]
    judge_mean = sum(judged) / len(judged) if judged else None
    gold = {rid: p["faithful"] for rid, p in gold_labels(engine, [run_id]).items() if p.get("faithful") is not None}
    pi = gold_probabilities(engine, [run_id])
    labelled = [r for r in answers if r in gold and r in pi]
    base = FaithfulnessEstimate(judge, len(answers), len(judged), judge_mean, len(labelled), None)
    if judge_mean is None:
        return replace(base, reason=f"no faithfulness scores by {judge}: run gauntlet score {run_id} --judge {judge}")
    if len(labelled) < 2:
        return replace(base, reason="fewer than two sampled answers have an agreed expert label yet")
    predictions = [float(scored.get(r, judge_mean)) for r in answers]  # any fixed prediction keeps it unbiased
    gold_values = [float(gold[r]) if r in labelled else float("nan") for r in answers]
    weights = [pi[r] if r in labelled else 1.0 for r in answers]  # unlabelled answers' pi does not enter z_i
    return replace(base, corrected=ipw_ppi_mean(predictions, gold_values, weights, confidence=confidence))
