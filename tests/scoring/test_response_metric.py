"""The long score table (response_metric) and the state counts beside every mean, across protocols.

One run holds EnterpriseRAG, reference_qa, kb_corruption and lit_ragbench responses with hand-written verdicts:
scored values, judge errors, not-applicable items, unparseable answers (counted as wrong), metrics with no verdict
(unjudged), metrics the scorer does not compute in an instance's mode and a failed generation (skipped). The counts
below are worked out by hand from VERDICTS.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pandas as pd
import pytest
from alembic import command
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session

from core.analysis.readmodel import load_scores, metric_summary, reference_scores
from core.metrics import DECLARATIONS, MetricDeclaration
from core.scoring.summaries import METRIC_NAMES, metric_producible, stale_summary_runs, summarise_run
from core.store.db import alembic_config
from core.store.models import Instance, Response, Verdict
from tests.analysis.test_fast_read_paths import old_stale_summary_runs
from tests.judges.conftest import seed_run

JUDGE = "heuristic"
MCQ = {"answer_type": "mcq", "choices": {"A": "Paris", "B": "Rome"}, "answer_key": "B"}
SHORT = {"answer_type": "short", "answers": [{"text": "Rome"}]}
INSTANCES = {  # uid -> (protocol, mode, reference)
    "e-noisy": ("enterprise_rag", "noisy", None), "e-gap": ("enterprise_rag", "gap", None),
    "e-conflict": ("enterprise_rag", "conflict", None), "q-mcq": ("reference_qa", None, MCQ),
    "q-short": ("reference_qa", None, SHORT), "k-1": ("kb_corruption", None, MCQ), "l-1": ("lit_ragbench", None, SHORT),
}
VERDICTS: list[tuple[str, str, str, dict[str, tuple[str, float | None]]]] = [  # model, uid, generation, verdicts
    ("m-a", "e-noisy", "done", {"faithfulness": ("ok", 0.8), "coverage": ("error", None), "refusal": ("ok", 0.0)}),
    ("m-b", "e-noisy", "done", {"faithfulness": ("not_applicable", None), "coverage": ("ok", 0.5),
                                "refusal": ("ok", 1.0)}),
    ("m-a", "e-gap", "done", {"faithfulness": ("ok", 1.0), "coverage": ("not_applicable", None),
                              "rejection": ("error", None)}),
    ("m-a", "e-conflict", "done", {"coverage": ("ok", 0.25), "conflict_recognition": ("ok", 1.0)}),
    ("m-b", "e-conflict", "failed", {}),
    ("m-a", "q-mcq", "done", {"mcq_accuracy": ("unparseable", 0.0), "exact_match": ("ok", 1.0)}),
    ("m-a", "q-short", "done", {"mcq_accuracy": ("not_applicable", None), "exact_match": ("ok", 0.0),
                                "correctness": ("error", None)}),
    ("m-a", "k-1", "done", {"mcq_accuracy": ("unparseable", 0.0)}),
    ("m-b", "k-1", "done", {"mcq_accuracy": ("ok", 1.0)}),
    ("m-a", "l-1", "done", {"judged_accuracy": ("error", None), "refusal": ("ok", 0.0)}),
    ("m-b", "l-1", "done", {}),
]


def _seed(engine: Engine) -> int:
    """The run of VERDICTS (with a constraint-free EnterpriseRAG): returns its id."""
    with Session(engine) as s:
        dom_id, models, run_id = seed_run(s, "General", ("m-a", "m-b"), "states")
        ids = {}
        for uid, (protocol, mode, reference) in INSTANCES.items():
            inst = Instance(uid=uid, domain_id=dom_id, query=f"question {uid}", protocol=protocol, mode=mode,
                            reference=reference)
            s.add(inst)
            s.flush()
            ids[uid] = inst.id
        for model, uid, status, verdicts in VERDICTS:
            resp = Response(run_id=run_id, model_id=models[model], instance_id=ids[uid], status=status, text="answer")
            s.add(resp)
            s.flush()
            s.add_all(Verdict(response_id=resp.id, run_id=run_id, judge=JUDGE, metric=metric, status=st, value=value,
                              passed=None if value is None else value >= 0.5)
                      for metric, (st, value) in verdicts.items())
        s.commit()
    return run_id


@pytest.fixture
def states_run(engine: Engine) -> tuple[Engine, int]:
    return engine, _seed(engine)


TABLE_CASES = [  # protocol -> response_metric rows per state (one row per response and declared metric)
    pytest.param("enterprise_rag", {"scored": 7, "judge_error": 2, "not_applicable": 2, "unjudged": 1, "skipped": 13},
                 id="enterprise_rag-out-of-mode-and-failed-generation-skipped"),
    pytest.param("reference_qa", {"scored": 2, "unparseable": 1, "not_applicable": 1, "judge_error": 1,
                                  "unjudged": 13}, id="reference_qa-nine-metrics-two-responses"),
    pytest.param("kb_corruption", {"scored": 1, "unparseable": 1}, id="kb_corruption-one-unreadable-letter"),
    pytest.param("lit_ragbench", {"scored": 1, "judge_error": 1, "unjudged": 2}, id="lit_ragbench-one-unjudged-response"),
]

_TABLE_SQL = """
SELECT i.protocol, m.state, COUNT(*) AS n FROM response_metric m JOIN response r ON r.id = m.response_id
JOIN instance i ON i.id = r.instance_id WHERE m.run_id = :run AND m.judge = :judge GROUP BY i.protocol, m.state
"""


@pytest.mark.parametrize(("protocol", "want"), TABLE_CASES)
def test_response_metric_rows_per_state(states_run, protocol: str, want: dict[str, int]) -> None:
    engine, run_id = states_run
    assert summarise_run(engine, run_id) == [JUDGE]
    with engine.connect() as conn:
        rows = conn.execute(text(_TABLE_SQL), {"run": run_id, "judge": JUDGE}).all()
    assert {state: n for p, state, n in rows if p == protocol} == want


def _enterprise(engine: Engine, run_id: int) -> pd.DataFrame:
    return metric_summary(load_scores(engine, [run_id], JUDGE), METRIC_NAMES, by=("model",))


def _reference(protocol: str):
    def summary(engine: Engine, run_id: int) -> pd.DataFrame:
        scores = reference_scores(engine, [run_id], JUDGE, protocol)
        return metric_summary(scores, [m for m in scores.columns if f"{m}_state" in scores], by=("model",))
    return summary


SUMMARY_CASES = [  # (summary, model, metric) -> mean, n with a value and the count of every state
    pytest.param(_enterprise, "m-a", "faithfulness", 0.9, 2, {"scored": 2, "unjudged": 1}, id="enterprise-unjudged"),
    pytest.param(_enterprise, "m-a", "coverage", 0.25, 1, {"scored": 1, "judge_error": 1, "not_applicable": 1},
                 id="enterprise-error-and-not-applicable"),
    pytest.param(_enterprise, "m-a", "rejection", math.nan, 0, {"judge_error": 1, "skipped": 2},
                 id="enterprise-rejection-only-in-gap"),
    pytest.param(_enterprise, "m-b", "faithfulness", math.nan, 0, {"not_applicable": 1},
                 id="enterprise-failed-generation-not-read"),
    pytest.param(_reference("reference_qa"), "m-a", "mcq_accuracy", 0.0, 1, {"unparseable": 1, "not_applicable": 1},
                 id="reference_qa-unparseable-counted-as-wrong"),
    pytest.param(_reference("reference_qa"), "m-a", "exact_match", 0.5, 2, {"scored": 2}, id="reference_qa-scored"),
    pytest.param(_reference("reference_qa"), "m-a", "correctness", math.nan, 0, {"judge_error": 1, "unjudged": 1},
                 id="reference_qa-judge-error-and-unjudged"),
    pytest.param(_reference("kb_corruption"), "m-a", "mcq_accuracy", 0.0, 1, {"unparseable": 1},
                 id="kb_corruption-unparseable"),
    pytest.param(_reference("kb_corruption"), "m-b", "mcq_accuracy", 1.0, 1, {"scored": 1}, id="kb_corruption-scored"),
    pytest.param(_reference("lit_ragbench"), "m-a", "judged_accuracy", math.nan, 0, {"judge_error": 1},
                 id="lit_ragbench-judge-error"),
    pytest.param(_reference("lit_ragbench"), "m-b", "refusal", math.nan, 0, {"unjudged": 1}, id="lit_ragbench-unjudged"),
]


@pytest.mark.parametrize("stored", [pytest.param(False, id="inline"), pytest.param(True, id="stored")])
@pytest.mark.parametrize(("summary", "model", "metric", "mean", "n", "states"), SUMMARY_CASES)
def test_state_counts_beside_the_mean(states_run, stored: bool, summary, model: str, metric: str, mean: float,
                                      n: int, states: dict[str, int]) -> None:
    engine, run_id = states_run
    if stored:
        summarise_run(engine, run_id)
    assert bool(stale_summary_runs(engine, [run_id], JUDGE)) is not stored
    row = summary(engine, run_id).set_index(["model", "metric"]).loc[(model, metric)]
    got = {s: int(row[f"n_{s}"]) for s in ("scored", "not_applicable", "unparseable", "judge_error", "unjudged",
                                           "skipped") if row[f"n_{s}"]}
    assert got == states
    assert int(row["n"]) == n and (math.isnan(row["value"]) if math.isnan(mean) else row["value"] == pytest.approx(mean))
    assert int(row["n_error"]) == states.get("judge_error", 0)
    assert int(row["n_unscored"]) == states.get("unjudged", 0) + states.get("skipped", 0)


@pytest.fixture
def llm_only_metric() -> Iterator[str]:
    DECLARATIONS.add("states23_llm_only", MetricDeclaration("states23_llm_only", "LLM only", "rate", ("llm",)))
    yield "states23_llm_only"
    DECLARATIONS.remove("states23_llm_only")


@pytest.mark.parametrize(("metric", "judge", "want"), [
    pytest.param("exact_match", "llm:judge-x", True, id="lexical-under-any-judge"),
    pytest.param("faithfulness", "heuristic", True, id="judged-by-the-heuristic"),
    pytest.param("states23_llm_only", "llm:judge-x", True, id="llm-only-under-an-llm"),
    pytest.param("states23_llm_only", "heuristic", False, id="llm-only-under-the-heuristic-skipped"),
])
def test_metric_producible(llm_only_metric: str, metric: str, judge: str, want: bool) -> None:
    assert metric_producible(metric, judge) is want


def _read_model(engine: Engine, run_id: int) -> dict[str, pd.DataFrame]:
    frames = {"enterprise_rag": load_scores(engine, [run_id], JUDGE)}
    frames |= {p: reference_scores(engine, [run_id], JUDGE, p) for p in ("reference_qa", "kb_corruption",
                                                                         "lit_ragbench")}
    return frames


_OLD_COLUMNS_SQL = """
SELECT i.uid, s.faithfulness, s.faithfulness_status, s.coverage, s.coverage_status, s.rejection_status
FROM response_score s JOIN response r ON r.id = s.response_id JOIN instance i ON i.id = r.instance_id
JOIN model m ON m.id = r.model_id WHERE m.name = 'm-a' AND i.protocol = 'enterprise_rag' ORDER BY i.uid
"""


def test_migration_moves_the_fixed_columns_and_keeps_every_number(states_run, db_url: str) -> None:
    engine, run_id = states_run
    summarise_run(engine, run_id)
    before = _read_model(engine, run_id)
    with engine.connect() as conn:
        rows_before = sorted(conn.execute(text("SELECT * FROM response_metric")).all())
    command.downgrade(alembic_config(db_url), "0020")
    with engine.connect() as conn:  # old-shaped response_score rows: the five fixed metric columns, as 0020 had them
        old = conn.execute(text(_OLD_COLUMNS_SQL)).all()
    assert [tuple(r) for r in old] == [("e-conflict", None, None, 0.25, "ok", None),
                                       ("e-gap", 1.0, "ok", None, "not_applicable", "error"),
                                       ("e-noisy", 0.8, "ok", None, "error", None)]
    command.upgrade(alembic_config(db_url), "0028")
    engine.dispose()
    assert not old_stale_summary_runs(engine, [run_id], JUDGE)  # the staleness check of 0028 (before the counter)
    with engine.connect() as conn:
        assert sorted(conn.execute(text("SELECT * FROM response_metric")).all()) == rows_before
    command.upgrade(alembic_config(db_url), "head")
    engine.dispose()
    assert stale_summary_runs(engine, [run_id], JUDGE) == [run_id]  # 0029 marks every run stale (its IAS sums)
    after = _read_model(engine, run_id)  # the same numbers, read inline
    for protocol, frame in before.items():
        pd.testing.assert_frame_equal(after[protocol], frame, check_exact=True, obj=protocol)
