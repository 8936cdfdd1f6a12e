"""`gauntlet report` shows one section per protocol of a run, every metric the protocol declares with mean, n and the
count of each score state; tested on a run holding every protocol with response metrics (and the toy protocol of
tests/toy_protocol/, which joins with no edit to the report) whose verdicts are scored, not applicable, unparseable,
judge errors, unjudged, and whose failed items are skipped."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from sqlmodel import Session
from typer.testing import CliRunner

from core.cli import app
from core.metrics import BENCHMARK_MEASURES, STATES, get_metric
from core.protocols import PROTOCOLS, register_package, unregister_package
from core.scoring.summaries import summarise_run
from core.store.db import make_engine
from core.store.models import Domain, Instance, Model, Response, Run, Verdict

JUDGE = "heuristic"
MODEL = "gen-a"
# the stored verdict of each done item, per metric: (status, value); None: no verdict (unjudged)
VERDICTS: list[tuple[str, float | None] | None] = [
    ("ok", 1.0), ("ok", 1.0), ("ok", 0.0), ("not_applicable", None), ("unparseable", 0.0), ("unparseable", 0.0),
    ("error", None), ("error", None), ("error", None), ("error", None), None, None, None, None, None]
FAILED_ITEMS = 6
EXPECTED = {"n_scored": 3, "n_not_applicable": 1, "n_unparseable": 2, "n_judge_error": 4, "n_unjudged": 5,
            "n_skipped": FAILED_ITEMS}
OUT_OF_MODE = {"rejection", "conflict_recognition"}  # EnterpriseRAG computes them on gap / conflict; these are noisy


def expected(protocol: str, metric: str) -> dict[str, int]:
    """EXPECTED, except that an EnterpriseRAG metric not computed in the instances' mode (noisy) counts its items
    without a verdict as skipped, not unjudged (docs/metrics.md, score states)."""
    if protocol != "enterprise_rag" or metric not in OUT_OF_MODE:
        return EXPECTED
    return EXPECTED | {"n_unjudged": 0, "n_skipped": EXPECTED["n_skipped"] + EXPECTED["n_unjudged"]}


PROTOCOL_IDS = ["enterprise_rag", "reference_qa", "production_rag", "domainrag", "lit_ragbench", "kb_corruption",
                "misleading_evidence", "toy_echo"]


@dataclass(frozen=True)
class StateWorld:
    url: str
    run_id: int


def response_metrics(protocol: str) -> list[str]:
    """The response-level metrics `protocol` declares (without a benchmark's own measures: these instances come from
    no public benchmark, so RGB's or CRAG's measures do not apply to them)."""
    return [m for m in PROTOCOLS.get(protocol).metrics if m != "constraint" and m not in BENCHMARK_MEASURES]


def seed_protocol(s: Session, protocol: str, domain_id: int, model_id: int, run_id: int) -> None:
    """VERDICTS' done items and FAILED_ITEMS failed ones of `protocol`, each metric's verdicts as VERDICTS says."""
    for i in range(len(VERDICTS) + FAILED_ITEMS):
        inst = Instance(uid=f"{protocol}-{i}", domain_id=domain_id, query=f"Question {i}?", protocol=protocol,
                        mode="noisy")
        s.add(inst)
        s.flush()
        done = i < len(VERDICTS)
        resp = Response(run_id=run_id, model_id=model_id, instance_id=inst.id, status="done" if done else "failed",
                        text=f"Answer {i}." if done else "", latency_ms=5.0)
        s.add(resp)
        s.flush()
        verdict = VERDICTS[i] if done else None
        if verdict is not None:
            s.add_all([Verdict(response_id=resp.id, run_id=run_id, judge=JUDGE, metric=m, status=verdict[0],
                               value=verdict[1], method="heuristic") for m in response_metrics(protocol)])


@pytest.fixture(scope="module")
def world(session_url_factory) -> Iterator[StateWorld]:
    register_package("tests.toy_protocol")
    url = session_url_factory()
    engine = make_engine(url)
    with Session(engine) as s:
        domain, model, run = Domain(name="States"), Model(name=MODEL, provider="openai", model_name=MODEL), \
            Run(name="states", status="done")
        s.add_all([domain, model, run])
        s.flush()
        for protocol in [*PROTOCOL_IDS, "instruction_following"]:  # the last one declares constraints only
            seed_protocol(s, protocol, domain.id, model.id, run.id)
        s.commit()
        run_id = run.id
    summarise_run(engine, run_id)
    engine.dispose()
    yield StateWorld(url, run_id)
    unregister_package("tests.toy_protocol")


def report(world: StateWorld, monkeypatch, fmt: str) -> str:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    result = CliRunner().invoke(app, ["report", str(world.run_id), "--format", fmt])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("protocol", PROTOCOL_IDS, ids=PROTOCOL_IDS)
def test_report_counts_every_state_of_every_metric(world, monkeypatch, protocol: str) -> None:
    section = json.loads(report(world, monkeypatch, "json"))["protocols"][protocol]
    rows = {r["metric"]: r for r in section["metrics"]}
    assert section["title"] == PROTOCOLS.get(protocol).title and list(rows) == response_metrics(protocol)
    for metric, row in rows.items():
        counted = [v for status, v in filter(None, VERDICTS) if status == "ok" or
                   (status == "unparseable" and get_metric(metric).counts_unparseable_as_wrong)]
        assert (row["model"], row["condition"], row["n"]) == (MODEL, "", len(counted)), metric
        assert row["value"] == pytest.approx(sum(counted) / len(counted), abs=1e-12), metric
        assert 0.0 <= row["ci_low"] <= row["value"] <= row["ci_high"] <= 1.0, metric
        assert {f"n_{s}": row[f"n_{s}"] for s in STATES} == expected(protocol, metric), metric


@pytest.mark.parametrize("protocol", PROTOCOL_IDS, ids=PROTOCOL_IDS)
def test_report_table_has_a_section_per_protocol(world, monkeypatch, protocol: str) -> None:
    text = report(world, monkeypatch, "table")
    title = f"{PROTOCOLS.get(protocol).title} ({protocol}): mean [95% CI], n and the count of each state"
    assert title in text and all(f"n_{s}" in text for s in STATES)


@pytest.mark.parametrize("protocol", PROTOCOL_IDS, ids=PROTOCOL_IDS)
def test_report_csv_has_the_state_counts_of_every_metric(world, monkeypatch, protocol: str) -> None:
    row = next(csv.DictReader(io.StringIO(report(world, monkeypatch, "csv"))))
    for metric in response_metrics(protocol):
        assert {f"n_{s}": int(row[f"{protocol}:{metric}_n_{s}"]) for s in STATES} == expected(protocol, metric), metric
        assert int(row[f"{protocol}:{metric}_n"]) == EXPECTED["n_scored"] + \
               EXPECTED["n_unparseable"] * get_metric(metric).counts_unparseable_as_wrong, metric


ENTERPRISE_METRICS = [  # metric, whether the leaderboard shows it
    pytest.param("faithfulness", True, id="faithfulness"), pytest.param("coverage", True, id="coverage"),
    pytest.param("rejection", True, id="rejection"),
    pytest.param("conflict_recognition", True, id="conflict_recognition"),
    pytest.param("refusal", False, id="refusal-not-on-the-board"),
]


@pytest.mark.parametrize(("metric", "on_board"), ENTERPRISE_METRICS)
def test_enterprise_section_agrees_with_its_leaderboard_and_counts(world, monkeypatch, metric: str,
                                                                    on_board: bool) -> None:
    doc = json.loads(report(world, monkeypatch, "json"))
    row = next(r for r in doc["protocols"]["enterprise_rag"]["metrics"] if r["metric"] == metric)
    model = doc["models"][0]
    counts = model["counts"]
    assert (row["n_judge_error"], row["n_not_applicable"]) == (counts[f"n_{metric}_error"], counts[f"n_{metric}_na"])
    assert (metric in model["metrics"]) is on_board
    if on_board:
        cell = model["metrics"][metric]
        assert row["n"] == cell["n"] and all(abs(row[k] - cell[k]) <= 1e-12 for k in ("value", "ci_low", "ci_high"))


def test_a_protocol_with_no_response_metric_has_no_section(world, monkeypatch) -> None:
    assert response_metrics("instruction_following") == []
    assert "instruction_following" not in json.loads(report(world, monkeypatch, "json"))["protocols"]
