"""From traces to the experts: the segment x uncertainty design, the probabilities it records, the unbiasedness of the
Horvitz-Thompson estimate under it (a seeded simulation), and promotion of verified items into a versioned set."""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from datetime import UTC, datetime

import pytest
from sqlmodel import Session, select
from typer.testing import CliRunner

from core.analysis.trace_sampling import (
    draw,
    horvitz_thompson_mean,
    inclusion_probabilities,
    neyman_allocation,
    uncertainty_band,
    value_uncertainty,
)
from core.cli import app
from core.review.auth import Principal, create_user
from core.review.traces import promote_verified, sample_traces
from core.review.verification import record_verification
from core.store.models import Assignment, BenchmarkSet, BenchmarkSetMember, Instance, Response, Run, Verdict

runner = CliRunner()
SERVICE = "helpdesk"


@pytest.mark.parametrize(
    ("sizes", "weights", "n", "expected"),
    [
        pytest.param({"a": 50, "b": 50}, {"a": 0.1, "b": 0.1}, 10, {"a": 5, "b": 5}, id="equal-weights-proportional"),
        pytest.param({"a": 50, "b": 50}, {"a": 0.01, "b": 0.25}, 12, {"a": 3, "b": 9}, id="uncertain-stratum-gets-more"),
        pytest.param({"a": 90, "b": 10}, {"a": 0.04, "b": 0.04}, 10, {"a": 8, "b": 2}, id="by-size"),
        pytest.param({"a": 3, "b": 100}, {"a": 0.25, "b": 0.0001}, 20, {"a": 3, "b": 17}, id="capped-at-size"),
        pytest.param({"a": 100, "b": 1, "c": 1}, {"a": 0.01, "b": 0.01, "c": 0.01}, 3, {"a": 1, "b": 1, "c": 1},
                     id="every-stratum-one"),
        pytest.param({"a": 2, "b": 3}, {"a": 0.1, "b": 0.1}, 9, {"a": 2, "b": 3}, id="n-over-total-takes-all"),
    ],
)
def test_allocation(sizes, weights, n, expected) -> None:
    alloc = neyman_allocation(sizes, weights, n)
    assert alloc == expected and sum(alloc.values()) == min(n, sum(sizes.values()))


@pytest.mark.parametrize(
    ("values", "band"),
    [pytest.param([], "undecided", id="no-score"), pytest.param([1.0], "low", id="sure"),
     pytest.param([0.5], "high", id="middle"), pytest.param([0.0, 1.0], "high", id="judges-disagree"),
     pytest.param([0.9, 0.95], "low", id="judges-agree-high")],
)
def test_uncertainty_bands(values, band) -> None:
    assert uncertainty_band(value_uncertainty(values) if values else None) == band


def _population(rng: random.Random) -> tuple[dict[str, list[int]], dict[int, float], dict[str, float]]:
    """400 items in 4 strata whose label rates differ (the uncertain strata fail more often)."""
    spec = {"en/high": (60, 0.3, 0.25), "en/low": (200, 0.9, 0.02), "de/high": (40, 0.2, 0.22), "de/low": (100, 0.8, 0.03)}
    strata, labels, weights, start = {}, {}, {}, 0
    for key, (size, rate, weight) in spec.items():
        strata[key] = list(range(start, start + size))
        labels.update({i: float(rng.random() < rate) for i in strata[key]})
        weights[key] = weight
        start += size
    return strata, labels, weights


def test_horvitz_thompson_is_unbiased_under_the_design_and_the_plain_mean_is_not() -> None:
    strata, labels, weights = _population(random.Random(11))
    truth = sum(labels.values()) / len(labels)
    alloc = neyman_allocation({k: len(v) for k, v in strata.items()}, weights, 40)
    pi = inclusion_probabilities(strata, alloc)
    reps = 4000
    ht, plain = [], []
    for seed in range(reps):
        sample = draw(strata, alloc, random.Random(seed))
        ht.append(horvitz_thompson_mean({i: labels[i] for i in sample}, pi, len(labels)))
        plain.append(sum(labels[i] for i in sample) / len(sample))
    mean_ht = sum(ht) / reps
    se = (sum((x - mean_ht) ** 2 for x in ht) / (reps - 1) / reps) ** 0.5
    assert abs(mean_ht - truth) < 3 * se
    assert abs(sum(plain) / reps - truth) > 10 * se  # oversampling the uncertain strata biases the unweighted mean
    assert sum(pi.values()) == pytest.approx(40)


def _export(path, n_en: int, n_de: int) -> None:
    lines = []
    questions = [("en", f"How long does delivery number {i} take to reach the customer?") for i in range(n_en)] + \
                [("de", f"Wie lange dauert die Lieferung Nummer {i} bis zum Kunden?") for i in range(n_de)]
    for i, (lang, question) in enumerate(questions):
        answer = "Delivery takes five working days." if lang == "en" else "Die Lieferung dauert fünf Werktage."
        lines.append({"context": {"trace_id": f"t{i:03d}", "span_id": f"r{i}"}, "span_kind": "CHAIN",
                      "attributes": {"input.value": question, "output.value": answer}})
        lines.append({"context": {"trace_id": f"t{i:03d}", "span_id": f"d{i}"}, "parent_id": f"r{i}", "span_kind": "RETRIEVER",
                      "attributes": {"retrieval.documents.0.document.content": answer, "retrieval.documents.0.document.score": 0.5}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def _principal(name: str, role: str) -> Principal:
    now = datetime.now(UTC)
    return Principal(name, role, (SERVICE,) if role == "expert" else (), now, now)


@pytest.fixture
def deployed(engine, tmp_path):
    """A deployed run of 30 traces (20 English, 10 German) with judge scores making high- and low-uncertainty strata."""
    _export(tmp_path / "spans.jsonl", 20, 10)
    result = runner.invoke(app, ["import", "--format", "openinference", str(tmp_path / "spans.jsonl"),
                                 "--service", SERVICE])
    assert result.exit_code == 0, result.output
    for name, role in (("admin", "admin"), ("alice", "expert"), ("bob", "expert")):
        create_user(engine, name, role, password=f"{name}-pass-123", domains=[SERVICE] if role == "expert" else [])
    with Session(engine) as session:
        run_id = session.exec(select(Run.id)).one()
        responses = session.exec(select(Response.id).where(Response.run_id == run_id).order_by(Response.id)).all()
        for k, rid in enumerate(responses):
            value = 0.5 if k % 3 == 0 else 1.0
            session.add(Verdict(response_id=rid, run_id=run_id, judge="heuristic", metric="faithfulness", status="ok",
                                value=value))
        session.commit()
    return run_id


def test_the_recorded_probabilities_are_the_designs(engine, deployed) -> None:
    report = sample_traces(engine, _principal("admin", "admin"), deployed, n=8, seed=5)
    with Session(engine) as session:
        rows = session.exec(select(Response.id, Instance.language, Verdict.value)
                            .join(Instance, Instance.id == Response.instance_id)
                            .join(Verdict, Verdict.response_id == Response.id)
                            .where(Response.run_id == deployed)).all()
        recorded = {(a.kind, a.target_id, a.assignee): a.probability for a in session.exec(select(Assignment))}
        instance_of = dict(session.exec(select(Response.id, Response.instance_id)).all())
    strata: dict[tuple, list[int]] = defaultdict(list)
    weight: dict[tuple, list[float]] = defaultdict(list)
    for rid, language, value in rows:
        key = (SERVICE, language, uncertainty_band(value_uncertainty([value])))
        strata[key].append(rid)
        weight[key].append(value_uncertainty([value]))
    assert {k[1] for k in strata} == {"en", "de"} and {k[2] for k in strata} == {"high", "low"}
    alloc = neyman_allocation({k: len(v) for k, v in strata.items()}, {k: sum(w) / len(w) for k, w in weight.items()}, 8)
    design = inclusion_probabilities(strata, alloc)
    sampled = {t for kind, t, _ in recorded if kind == "gold_label"}
    assert len(sampled) == report.sampled == 8
    assert Counter(k for k, ids in strata.items() for rid in ids if rid in sampled) == Counter(
        {k: v for k, v in alloc.items() if v})
    for (kind, target, _), probability in recorded.items():
        rid = target if kind == "gold_label" else next(r for r in sampled if instance_of[r] == target)
        assert probability == pytest.approx(design[rid])
    assert sorted({who for _, _, who in recorded}) == ["alice", "bob"]


def test_verified_items_are_promoted_into_a_new_set_version(engine, deployed) -> None:
    admin, alice = _principal("admin", "admin"), _principal("alice", "expert")
    sample_traces(engine, admin, deployed, n=4, seed=1)
    with Session(engine) as session:
        targets = sorted(session.exec(select(Assignment.target_id).where(Assignment.kind == "verification",
                                                                         Assignment.assignee == "alice")).all())
    first = promote_verified(engine, admin, deployed, "helpdesk-prod")
    assert first.version is None and first.waiting == 4
    for k, iid in enumerate(targets[:3]):
        record_verification(engine, alice, iid, consistency="consistent", context_valid=True,
                            decision="accept" if k < 2 else "reject", client_token=f"v{k}", overlap=0.0)
    v1 = promote_verified(engine, admin, deployed, "helpdesk-prod")
    assert (v1.version.name, v1.version.kept, v1.version.added, v1.waiting, v1.rejected) == (
        "helpdesk-prod v1", 0, 2, 1, 1)
    record_verification(engine, alice, targets[3], consistency="consistent", context_valid=True, decision="accept",
                        client_token="v3", overlap=0.0)
    v2 = runner.invoke(app, ["traces", "promote", str(deployed), "--set", "helpdesk-prod"])
    assert v2.exit_code == 0 and "set 'helpdesk-prod v2': 2 kept from the previous version, 1 added" in v2.output
    again = runner.invoke(app, ["traces", "promote", str(deployed), "--set", "helpdesk-prod"])
    assert "nothing new to promote: 3 accepted items" in again.output
    with Session(engine) as session:
        sizes = dict(session.exec(select(BenchmarkSet.name, BenchmarkSetMember.instance_id)
                                  .join(BenchmarkSetMember, BenchmarkSetMember.set_id == BenchmarkSet.id)).all())
        counts = Counter(name for name, _ in session.exec(
            select(BenchmarkSet.name, BenchmarkSetMember.instance_id)
            .join(BenchmarkSetMember, BenchmarkSetMember.set_id == BenchmarkSet.id)).all())
    assert sizes and counts["helpdesk-prod v1"] == 2 and counts["helpdesk-prod v2"] == 3


def test_sampling_needs_an_admin(engine, deployed) -> None:
    with pytest.raises(PermissionError):
        sample_traces(engine, _principal("alice", "expert"), deployed, n=2)
    result = runner.invoke(app, ["traces", "sample", str(deployed), "--as", "alice"])
    assert result.exit_code == 1 and "may not" in result.output


@pytest.mark.parametrize(
    ("protocol", "payload", "error"),
    [
        pytest.param("production_rag", {"constraints": {}, "faithful": 1}, None, id="production-faithful-given"),
        pytest.param("production_rag", {"constraints": {}}, "faithful: required for a production_rag instance",
                     id="production-faithful-missing"),
        pytest.param("production_rag", {"constraints": {}, "faithful": 0.5}, "faithful: must be 0/1",
                     id="production-faithful-not-binary"),
        pytest.param("reference_qa", {"constraints": {}, "faithful": 1},
                     "faithful: only applies to production_rag instances", id="other-protocol-refuses-faithful"),
    ],
)
def test_production_labels_ask_whether_the_answer_is_faithful(engine, deployed, protocol, payload, error) -> None:
    from dataclasses import replace

    from core.review.annotations import load_bundle
    from core.review.gold import validate_gold_payload

    with Session(engine) as session:
        iid = session.exec(select(Response.instance_id).where(Response.run_id == deployed)).first()
    bundle = load_bundle(engine, iid)
    bundle = replace(bundle, instance=bundle.instance.model_copy(update={"protocol": protocol}))
    if error is None:
        assert validate_gold_payload(payload, bundle)["faithful"] == 1
    else:
        with pytest.raises(ValueError, match=error):
            validate_gold_payload(payload, bundle)


def test_the_corrected_faithfulness_weights_labels_by_their_recorded_probabilities(engine, deployed) -> None:
    from core.analysis.ppi import ipw_ppi_mean
    from core.review.gold import record_gold_label
    from core.review.traces import faithfulness_estimate

    before = faithfulness_estimate(engine, deployed, "heuristic")
    assert (before.answers, before.judged, before.labelled, before.corrected) == (30, 30, 0, None)
    assert before.judge_mean == pytest.approx((10 * 0.5 + 20 * 1.0) / 30)
    sample_traces(engine, _principal("admin", "admin"), deployed, n=8, seed=2)
    with Session(engine) as session:
        drawn = dict(session.exec(select(Assignment.target_id, Assignment.probability).where(
            Assignment.kind == "gold_label")).all())
        scores = dict(session.exec(select(Verdict.response_id, Verdict.value)).all())
    truth = {rid: int(scores[rid] == 1.0 and rid % 2 == 0) for rid in drawn}  # the experts find some unfaithful
    for who in ("alice", "bob"):
        for rid in drawn:
            record_gold_label(engine, _principal(who, "expert"), rid, {"constraints": {}, "faithful": truth[rid]},
                              f"{who}-{rid}")
    after = faithfulness_estimate(engine, deployed, "heuristic")
    ids = sorted(scores)
    expected = ipw_ppi_mean([scores[r] for r in ids], [truth.get(r, float("nan")) for r in ids],
                            [drawn.get(r, 1.0) for r in ids])
    assert after.labelled == 8 and after.corrected == expected
    assert after.corrected.gold_mean == pytest.approx(horvitz_thompson_mean(truth, drawn, 30))
    shown = runner.invoke(app, ["traces", "estimate", str(deployed)])
    assert shown.exit_code == 0 and "over 30 of 30 answers" in shown.output and "from 8 expert labels" in shown.output
