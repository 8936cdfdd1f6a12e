"""Golden tests of the faster read paths of Pick a generator, Constraint errors and Run evaluation (issue 42): each new
path gives what the path it replaced gave (its SQL kept here as the reference), on the active backend (SQLite, and
PostgreSQL in its pass); and a memoised picker.rank gives the same result as the plain one, whatever the floors."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import func, select, text
from sqlmodel import Session, col

from bench.make_synthetic_results import make_results
from core.analysis import picker, readmodel
from core.generation.run_progress import run_spend
from core.scoring.summaries import rebuild_summaries, runs_sql, stale_summary_runs
from core.store.db import make_engine
from core.store.models import Run, Verdict

JUDGE = "heuristic"

# the replaced paths, as they were on main before issue 42
OLD_FINGERPRINT_SQL = "SELECT run_id, COUNT(*), MAX(id) FROM verdict WHERE run_id IN ({runs}) GROUP BY run_id"
OLD_STATE_SQL = "SELECT run_id, verdicts, max_verdict_id FROM response_score_state WHERE judge = :judge AND run_id IN ({runs})"
OLD_SPEND_SQL = "SELECT COALESCE(SUM(cost_usd), 0.0) FROM verdict WHERE run_id = :run"


def old_stale_summary_runs(engine, run_ids, judge: str) -> list[int]:
    runs = sorted({int(r) for r in run_ids})
    with engine.connect() as conn:
        current = {int(r): (int(n), int(mx or 0)) for r, n, mx in conn.execute(text(runs_sql(OLD_FINGERPRINT_SQL, runs)))}
        built = {int(r): (int(n), int(mx)) for r, n, mx in conn.execute(text(runs_sql(OLD_STATE_SQL, runs)),
                                                                        {"judge": judge})}
    return [r for r in runs if current.get(r, (0, 0)) != built.get(r, (0, 0))]


def old_scored_runs(engine) -> pd.DataFrame:
    with Session(engine) as session:
        rows = session.execute(select(col(Run.id), col(Run.name), col(Run.status), col(Run.config),
                                      func.count(col(Verdict.id)))
                               .join(Verdict, col(Verdict.run_id) == Run.id).where(col(Run.hidden_at).is_(None))
                               .group_by(col(Run.id)).order_by(col(Run.id).desc())).all()
    return pd.DataFrame(rows, columns=["id", "name", "status", "config", "verdicts"])


@pytest.fixture(scope="module")
def results(session_url_factory):
    url = session_url_factory()
    make_results(url, n_models=3, n_instances=40, seed=11)
    engine = make_engine(url)
    yield engine
    engine.dispose()


def _sql(engine, *statements: str) -> None:
    with engine.begin() as conn:
        for statement in statements:
            conn.execute(text(statement))


def _copy_a_verdict(engine) -> Callable[[], None]:
    """A new verdict in run 1 (a copy of its first): the stored summaries no longer match it."""
    cols = [c.name for c in Verdict.__table__.columns if c.name != "id"]
    with engine.begin() as conn:
        conn.execute(text(f"INSERT INTO verdict ({', '.join(cols)}) SELECT {', '.join(cols)} FROM verdict "
                          "WHERE id = (SELECT MIN(id) FROM verdict)"))
    return lambda: _sql(engine, "DELETE FROM verdict WHERE id = (SELECT MAX(id) FROM verdict)")


def _forget_state(engine) -> Callable[[], None]:
    _sql(engine, f"DELETE FROM response_score_state WHERE judge = '{JUDGE}'")
    return lambda: None


def _nothing(engine) -> Callable[[], None]:
    return lambda: None


STALE_CASES = [
    pytest.param(_nothing, [1], [], id="current"),
    pytest.param(_nothing, [1, 99], [], id="with-a-run-without-verdicts"),
    pytest.param(_nothing, [], [], id="no-runs"),
    pytest.param(_copy_a_verdict, [1], [1], id="verdict-added-after-the-build"),
    pytest.param(_copy_a_verdict, [99, 1], [1], id="verdict-added-two-runs"),
    pytest.param(_forget_state, [1], [1], id="never-built"),
]


@pytest.mark.db
@pytest.mark.parametrize(("change", "runs", "stale"), STALE_CASES)
def test_stale_summary_runs_equals_the_group_by_fingerprint(results, change, runs, stale) -> None:
    engine = results
    rebuild_summaries(engine, 1, JUDGE)
    undo = change(engine)
    try:
        assert stale_summary_runs(engine, runs, JUDGE) == old_stale_summary_runs(engine, runs, JUDGE) == stale
    finally:
        undo()
        rebuild_summaries(engine, 1, JUDGE)


SPEND_CASES = [
    pytest.param("UPDATE verdict SET cost_usd = 0", id="nothing-paid"),
    pytest.param("UPDATE verdict SET cost_usd = CASE WHEN id % 7 = 0 THEN id * 0.000013 ELSE 0 END", id="some-paid"),
    pytest.param("UPDATE verdict SET cost_usd = CASE WHEN id % 5 = 0 THEN -0.25 WHEN id % 3 = 0 THEN 0.1 ELSE 0 END",
                 id="refunds-and-payments"),
    pytest.param("UPDATE verdict SET cost_usd = 0.001", id="every-call-paid"),
]


@pytest.mark.db
@pytest.mark.parametrize("update", SPEND_CASES)
def test_run_spend_sums_what_every_verdict_sum_gave(results, update: str) -> None:
    engine = results
    _sql(engine, update)
    try:
        with engine.connect() as conn:
            expected = float(conn.execute(text(OLD_SPEND_SQL), {"run": 1}).scalar_one())
        # the paid rows are summed in index order, not row order: equal to 1e-12 relative (a few ulps), the same cents
        got = run_spend(engine, 1).judging_usd
        assert got == pytest.approx(expected, abs=1e-12, rel=1e-12) and f"{got:.4f}" == f"{expected:.4f}"
    finally:
        _sql(engine, "UPDATE verdict SET cost_usd = 0")


@pytest.mark.db
@pytest.mark.parametrize("hide", [pytest.param(False, id="visible"), pytest.param(True, id="hidden")])
def test_scored_runs_equals_the_join_count(results, hide: bool) -> None:
    engine = results
    if hide:
        _sql(engine, "UPDATE run SET hidden_at = CURRENT_TIMESTAMP WHERE id = 1")
    try:
        new, old = readmodel.scored_runs(engine), old_scored_runs(engine)
        pd.testing.assert_frame_equal(new, old, check_dtype=False)
        assert len(new) == (0 if hide else 1)
    finally:
        _sql(engine, "UPDATE run SET hidden_at = NULL WHERE id = 1")


# ---- picker.rank with a memo (the page caches its scores-only parts per data version) ----

def _scores() -> pd.DataFrame:
    rng = np.random.default_rng(4)
    rows = []
    for k, model in enumerate(["a", "b", "c", "baseline:always-refuse"]):
        for i in range(60):
            mode = ("noisy", "gap", "conflict")[i % 3]
            rows.append({"model": model, "instance_uid": f"i{i}", "domain": ("Energy", "Legal")[i % 2], "mode": mode,
                         "origin": "natural", "loose_ias": rng.uniform(), "strict_ias": float(rng.uniform() < 0.3 + 0.1 * k),
                         "loose_persona": rng.uniform(), "loose_output": rng.uniform(), "loose_knowledge_protocol": None,
                         "faithfulness": rng.uniform(), "coverage": rng.uniform(),
                         "rejection": float(rng.uniform() < 0.2 * k) if mode == "gap" else None,
                         "conflict_recognition": float(rng.uniform() < 0.5) if mode == "conflict" else None,
                         "refusal": float(rng.uniform() < 0.1) if mode == "noisy" else None, "has_protocol": False,
                         "cost_usd": 0.001 * (k + 1), "latency_ms": 100.0, "response_id": len(rows) + 1})
    return readmodel.prepare_scores(pd.DataFrame(rows))


MODELS = pd.DataFrame([{"model": m, "paradigm": "standard", "access": "open", "is_baseline": m.startswith("baseline:")}
                       for m in ["a", "b", "c", "baseline:always-refuse"]])
WEIGHTS = {"strict_ias": 1.0, "rejection": 1.0, "faithfulness": 0.5}

# one page session: the user changes floors, the budget and the weights in turn; every step reuses the same memo
SESSION = [
    pytest.param(picker.PickSpec(weights=WEIGHTS), id="weights"),
    pytest.param(picker.PickSpec(weights=WEIGHTS, floors={"rejection": 0.3}), id="rejection-floor"),
    pytest.param(picker.PickSpec(weights=WEIGHTS, floors={"rejection": 0.5}), id="higher-floor"),
    pytest.param(picker.PickSpec(weights=WEIGHTS, budget_per_1k=2.5), id="budget"),
    pytest.param(picker.PickSpec(weights={"strict_ias": 2.0}), id="other-weights"),
    pytest.param(picker.PickSpec(modes=("gap",), weights=WEIGHTS), id="gap-only"),
    pytest.param(picker.PickSpec(weights=WEIGHTS), id="back-to-the-start"),
]
SCORES = _scores()
MEMORY: dict[tuple, object] = {}


def _memo(kind: str, key: tuple, compute):
    if (kind, key) not in MEMORY:
        MEMORY[(kind, key)] = compute()
    return MEMORY[(kind, key)]


@pytest.mark.parametrize("spec", SESSION)
def test_a_memoised_rank_equals_the_plain_one(spec: picker.PickSpec) -> None:
    plain, memoised = picker.rank(SCORES, MODELS, spec), picker.rank(SCORES, MODELS, spec, memo=_memo)
    pd.testing.assert_frame_equal(memoised.ranking, plain.ranking)
    pd.testing.assert_frame_equal(memoised.evidence, plain.evidence)
    # repr: a test's NaN fields (no shared instances) compare equal as text
    assert repr((memoised.top_two, memoised.floor, memoised.recommended, memoised.weaknesses)) == repr(
        (plain.top_two, plain.floor, plain.recommended, plain.weaknesses))
    assert picker.summary_markdown(memoised, JUDGE, "#1") == picker.summary_markdown(plain, JUDGE, "#1")


VERDICT_CASES = [
    pytest.param({"failed_only": True}, id="failed"),
    pytest.param({"category": "persona", "failed_only": True}, id="failed-persona"),
    pytest.param({"category": "output", "sub_dimension": "format"}, id="output-format-all"),
    pytest.param({}, id="every-verdict"),
]


@pytest.mark.db
@pytest.mark.parametrize("narrow", VERDICT_CASES)
def test_one_models_constraint_verdicts_equal_the_run_index_plan(results, narrow: dict) -> None:
    """constraint_verdicts of one model (the drill-down) reads them by another plan; the rows, in order, are the same
    as the replaced query's (the run index kept)."""
    from core.analysis.readmodel import responses

    engine = results
    original = responses._CONSTRAINT_VERDICTS_SQL
    for model in readmodel.model_catalog(engine)["model"]:
        new = readmodel.constraint_verdicts(engine, [1], JUDGE, model=model, **narrow)
        # the old path: the same SQL with the run filter the `+` leaves out of the index choice put back
        responses._CONSTRAINT_VERDICTS_SQL = original.replace("v.run_id IN", "v.run_id  IN")
        try:
            old = readmodel.constraint_verdicts(engine, [1], JUDGE, model=model, **narrow)
        finally:
            responses._CONSTRAINT_VERDICTS_SQL = original
        pd.testing.assert_frame_equal(new, old)
        assert len(new) == len(new.drop_duplicates())


def _old_bootstrap_means(values: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """bootstrap_means as it was: the counts of every column multiplied out."""
    from core.analysis.readmodel.bootstrap import bootstrap_weights

    mask = ~np.isnan(values)
    w = bootstrap_weights(values.shape[0], n_resamples, seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (w @ np.where(mask, values, 0.0)) / (w @ mask.astype(float))


def _values(n: int, m: int, gaps: float, every_other: bool = False) -> np.ndarray:
    rng = np.random.default_rng(n * 31 + m)
    x = rng.uniform(size=(n, m))
    holes = rng.uniform(size=x.shape) < gaps
    if every_other:
        holes[:, 1::2] = False
    x[holes] = np.nan
    return x


BOOTSTRAP_CASES = [
    pytest.param(_values(983, 18, 0.0), id="no-gaps-paper-scale"),
    pytest.param(_values(983, 18, 0.3), id="gaps-everywhere"),
    pytest.param(_values(400, 6, 0.5, every_other=True), id="some-columns-full"),
    pytest.param(_values(1, 2, 0.0), id="one-row"),
    pytest.param(_values(40, 3, 1.0), id="all-missing"),
    pytest.param(np.arange(30, dtype=float)[:, None] * 1e6, id="large-values"),
]


@pytest.mark.parametrize("values", BOOTSTRAP_CASES)
@pytest.mark.parametrize("seed", [0, 7])
def test_bootstrap_means_are_bit_identical_to_multiplying_out_every_count(values: np.ndarray, seed: int) -> None:
    from core.analysis.readmodel.bootstrap import bootstrap_means

    np.testing.assert_array_equal(bootstrap_means(values, 500, seed), _old_bootstrap_means(values, 500, seed))
