"""Golden tests of the Constraint errors page's reads (issue 42): Figure 4's counts summed in the database per model,
mode and category for one domain choice (readmodel.failure_mode_counts, the read the page caches), its modes picked and
summed, give the same failure rates, to the last bit, as the per-domain-and-mode counts (load_failure_counts) filtered
and grouped in pandas, and the verdicts left out for having no mode are the same count, on a paper-scale synthetic set
with some instances made modeless, with stored and stale summaries, on the active backend (SQLite, and PostgreSQL in
its pass), where over every domain the stored sums over the domains (failure_mode_count) are read. Reading never
writes. failure_rates equals the groupby it replaced on frames with shuffled, repeated and
missing keys; in_model_order is a stable sort."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import text

from core.analysis import readmodel
from core.analysis.readmodel.states import STATE_COLUMNS
from core.store.db import make_engine
from core.store.schema import MODES
from tests.analysis.summary_datasets import Dataset, summary_copies

pytestmark = [pytest.mark.db, pytest.mark.xdist_group("paper-scale")]

TABLES = ("failure_count", "failure_mode_count", "response_score_state", "verdict", "response")
MODELESS_INSTANCES = 40  # instances whose mode is cleared: their verdicts are counted under NO_MODE


@pytest.fixture(scope="module")
def modeless(session_url_factory, paper_scale_results):
    """A copy of the paper-scale set where the first instances have no mode (as IFEval prompts), with its summaries
    rebuilt and a stale copy of it (built once, not once per test)."""
    url = session_url_factory(template=paper_scale_results)
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE instance SET mode = NULL WHERE id IN (SELECT id FROM instance ORDER BY id LIMIT "
                          f"{MODELESS_INSTANCES})"))
    engine.dispose()
    dataset = summary_copies(session_url_factory, url, "modeless", [1], "heuristic")
    yield dataset
    dataset.dispose()


@pytest.fixture(params=[pytest.param(False, id="stored"), pytest.param(True, id="stale")])
def paper(modeless: Dataset, request):
    """(engine, run ids, judge) of the modeless copy with stored or stale summaries."""
    return modeless.at(request.param)


def _table_counts(engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {t: int(conn.execute(text(f"SELECT COUNT(*) FROM {t}")).scalar_one()) for t in TABLES}


def _domains(engine, n: int) -> tuple[str, ...]:
    with engine.connect() as conn:
        return tuple(conn.execute(text("SELECT name FROM domain ORDER BY name LIMIT :n"), {"n": n}).scalars())


# name -> (modes, number of domains chosen (0: all; -1: one that holds nothing), category (None: by category))
FILTERS = {
    "every mode and domain": (MODES, 0, None),
    "gap": (("gap",), 0, None),
    "noisy and conflict in two domains": (("noisy", "conflict"), 2, None),
    "sub-dimensions of persona": (MODES, 0, "persona"),
    "sub-dimensions of knowledge protocol, conflict, one domain": (("conflict",), 1, "knowledge_protocol"),
    "a domain with no verdicts": (MODES, -1, None),
}


def test_rates_summed_in_the_database_equal_the_pandas_path(paper) -> None:
    engine, run_ids, judge = paper
    counts = readmodel.load_failure_counts(engine, run_ids, judge)
    before = _table_counts(engine)
    for name, (modes, n_domains, category) in FILTERS.items():
        domains = ("no such domain",) if n_domains < 0 else _domains(engine, n_domains)
        level = "category" if category is None else "sub_dimension"
        by_mode = readmodel.failure_view(readmodel.failure_mode_counts(engine, run_ids, judge, domains, category), modes)
        got = readmodel.failure_rates(by_mode, level)
        want = readmodel.failure_rates(readmodel.failure_view(counts, modes, domains, category), level)
        pd.testing.assert_frame_equal(got, want, check_exact=True, obj=name)
        assert got.empty == (n_domains < 0), name
    assert _table_counts(engine) == before  # reading never writes, with stale summaries too


def test_modeless_verdicts_from_the_mode_counts(paper) -> None:
    engine, run_ids, judge = paper
    want = readmodel.modeless_verdicts(readmodel.load_failure_counts(engine, run_ids, judge))
    assert readmodel.modeless_verdicts(readmodel.failure_mode_counts(engine, run_ids, judge)) == want > 0


def grouped_rates(counts: pd.DataFrame, level: str) -> pd.DataFrame:
    """The groupby failure_rates replaced: sums per key, then the rate and each model's share of its failures."""
    keys = ["model", "category"] + (["sub_dimension"] if level == "sub_dimension" else [])
    states = [c for c in STATE_COLUMNS.values() if c in counts.columns]
    out = counts.groupby(keys, sort=True)[["verdicts", "decided", "failed", *states]].sum().reset_index()
    out["undetermined"] = out["verdicts"] - out["decided"]
    out["failure_rate"] = out["failed"] / out["decided"].where(out["decided"] > 0)
    totals = out.groupby("model")["failed"].transform("sum")
    out["share_of_failures"] = out["failed"] / totals.where(totals > 0)
    return out


def _counts(rows: list[tuple], states: bool = True) -> pd.DataFrame:
    """A verdict_counts-layout frame from (model, category, sub_dimension, verdicts, decided, failed) rows."""
    frame = pd.DataFrame(rows, columns=["model", "category", "sub_dimension", "verdicts", "decided", "failed"])
    if states:
        frame["n_scored"] = frame["decided"]
        frame["n_error"] = frame["verdicts"] - frame["decided"]
    return frame


RNG = np.random.default_rng(7)
MANY = [(f"m{RNG.integers(12)}", str(RNG.choice(["persona", "output", "knowledge_protocol"])), f"s{RNG.integers(4)}",
         int(v), int(d), int(f)) for v, d, f in zip(RNG.integers(5, 40, 600), RNG.integers(0, 5, 600),
                                                     RNG.integers(0, 5, 600), strict=True)]
RATE_CASES = {
    "shuffled, repeated keys": _counts(MANY),
    "one row per key": _counts([("b", "output", "x", 4, 3, 1), ("a", "persona", "y", 5, 5, 0)]),
    "nothing decided, no failures": _counts([("a", "output", "x", 3, 0, 0), ("a", "persona", "x", 2, 2, 0)]),
    "a missing sub-dimension": _counts([("a", "output", None, 3, 2, 1), ("a", "output", "x", 2, 2, 2)]),
    "no state columns": _counts([("a", "output", "x", 3, 2, 1), ("b", "output", "x", 1, 1, 1)], states=False),
    "empty": _counts([]).astype({"verdicts": "int64", "decided": "int64", "failed": "int64", "n_scored": "int64",
                                 "n_error": "int64"}),
}


@pytest.mark.parametrize("level", ["category", "sub_dimension"])
@pytest.mark.parametrize("name", list(RATE_CASES))
def test_failure_rates_equal_the_groupby(name, level) -> None:
    counts = RATE_CASES[name]
    pd.testing.assert_frame_equal(readmodel.failure_rates(counts, level), grouped_rates(counts, level),
                                  check_exact=True)


def test_rows_in_model_order_keep_their_order_within_a_model() -> None:
    catalog = pd.DataFrame({"model": ["closed", "open"], "paradigm": ["standard", "standard"],
                            "access": ["closed", "open"], "is_baseline": [False, False]})
    rates = pd.DataFrame({"model": ["closed", "open", "closed", "open"], "category": ["a", "a", "b", "b"]})
    ordered, order = readmodel.in_model_order(rates, catalog)
    assert order == ["open", "closed"]
    assert list(zip(ordered["model"], ordered["category"], strict=True)) == [
        ("open", "a"), ("open", "b"), ("closed", "a"), ("closed", "b")]
