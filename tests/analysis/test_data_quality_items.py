"""Golden tests of the Data quality page's array path (readmodel.origin_items, select_items, origin_equivalence,
items_composition): on the bundled sample after first start and on the paper-scale synthetic set, with stored and with
stale summaries, in every subset and a domain, on the active backend (SQLite, and PostgreSQL in its pass), its
equivalence table and evaluated composition are exactly those of the per-item frame (load_scores + natural_vs_augmented
/ evaluated_composition), and exactly those of natural_vs_augmented as it was before the array path (REFERENCE below:
same bootstrap draws, bit for bit). Reading never writes; repeated items send the page to the per-item frame."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from bench.make_synthetic_results import make_results
from core.analysis import readmodel, stats
from core.analysis.readmodel.bootstrap import _ci, bootstrap_means
from core.analysis.readmodel.scope import METRICS
from core.store.db import make_engine
from tests.analysis.test_enterprise_aggregates import _table_counts, answer_twice, read_both

# One xdist worker runs this module with the other users of paper_scale_results and of the datasets of
# tests/analysis/conftest.py (each built once per pass)
pytestmark = [pytest.mark.db, pytest.mark.xdist_group("paper-scale")]
CASES = [
    pytest.param((), (), id="all"),
    pytest.param(("noisy",), (), id="noisy"),
    pytest.param(("gap",), (), id="gap"),
    pytest.param(("conflict",), (), id="conflict"),
    pytest.param((), ("first",), id="one-domain"),
]


def reference_natural_vs_augmented(scores: pd.DataFrame, margin: float = 0.2, metrics=readmodel.EQUIVALENCE_METRICS,
                                   n_resamples: int = 1_000, seed: int = 0) -> pd.DataFrame:
    """natural_vs_augmented as it was at main 357fa86 (per-item frame, pandas grouping), kept as the golden reference."""
    metrics = list(metrics)
    nat_all = scores[scores["origin"] == "natural"]
    aug_all = scores[scores["origin"] == "augmented"]
    boot_low = boot_high = np.full(len(metrics), np.nan)
    if len(nat_all) and len(aug_all):
        reps = (bootstrap_means(nat_all[metrics].to_numpy(float), n_resamples, seed)
                - bootstrap_means(aug_all[metrics].to_numpy(float), n_resamples, seed + 1))
        boot_low, boot_high = _ci(reps)
    rows = []
    for i, key in enumerate(metrics):
        nat, aug = nat_all[nat_all[key].notna()], aug_all[aug_all[key].notna()]
        row: dict[str, Any] = {"metric": key, "label": METRICS[key].label if key in METRICS else key,
                               "natural": nat[key].mean() if len(nat) else np.nan,
                               "augmented": aug[key].mean() if len(aug) else np.nan, "n_natural": len(nat),
                               "n_augmented": len(aug)}
        row["diff"] = row["natural"] - row["augmented"]
        has_both = bool(len(nat) and len(aug))
        row |= {"boot_low": boot_low[i] if has_both else np.nan, "boot_high": boot_high[i] if has_both else np.nan,
                "equivalent_by_ci": bool(has_both and stats.equivalent_by_ci(boot_low[i], boot_high[i], margin))}
        per_model = pd.concat([nat.groupby("model")[key].mean().rename("nat"),
                               aug.groupby("model")[key].mean().rename("aug")], axis=1, join="inner")
        diffs = per_model["nat"].to_numpy(float) - per_model["aug"].to_numpy(float)
        if diffs.size < 2 or np.std(diffs) == 0:
            row |= {"models": int(diffs.size), "tost_mean": np.nan, "tost_low": np.nan, "tost_high": np.nan,
                    "tost_p": np.nan, "tost_equivalent": False, "t": np.nan, "t_p": np.nan, "cohen_d": np.nan}
        else:
            t = stats.tost(diffs, margin)
            paired = stats.paired_t(per_model["nat"].to_numpy(float), per_model["aug"].to_numpy(float))
            row |= {"models": int(diffs.size), "tost_mean": t.mean_diff, "tost_low": t.ci_low, "tost_high": t.ci_high,
                    "tost_p": t.p_value, "tost_equivalent": t.equivalent, "t": paired.t, "t_p": paired.p_value,
                    "cohen_d": paired.cohen_dz}
        rows.append(row)
    out = pd.DataFrame(rows)
    out["margin"] = margin
    return out


@pytest.fixture(scope="module", params=[pytest.param(("sample", False), id="sample-stored"),
                                        pytest.param(("sample", True), id="sample-stale"),
                                        pytest.param(("paper", False), id="paper-stored"),
                                        pytest.param(("paper", True), id="paper-stale")])
def both(request) -> tuple[readmodel.OriginItems, pd.DataFrame]:
    """(items, per-item scores) of a dataset with stored or stale summaries; the items' read writes nothing. The
    per-item scores are load_scores' (scores_from_responses of response_scores), read once per pass (read_both)."""
    name, stale = request.param
    dataset = request.getfixturevalue(f"{name}_summaries")
    engine, run_ids, judge = dataset.at(stale)
    before = _table_counts(engine)
    items = readmodel.origin_items(engine, run_ids, judge)
    assert _table_counts(engine) == before  # reading never writes
    assert items is not None and len(items.response_id)
    return items, read_both(dataset, stale)[0]


def _chosen(items: readmodel.OriginItems, scores: pd.DataFrame, modes: tuple, domains: tuple):
    domains = tuple(sorted(scores["domain"].unique())[:1]) if domains else ()
    return readmodel.select_items(items, modes, domains), readmodel.filter_scores(scores, modes, domains)


@pytest.mark.parametrize(("modes", "domains"), CASES)
def test_the_array_path_equals_the_frame_path_and_the_old_code(both, modes, domains) -> None:
    items, scores = both
    chosen, frame = _chosen(items, scores, modes, domains)
    got = readmodel.origin_equivalence(chosen)
    pd.testing.assert_frame_equal(got, readmodel.natural_vs_augmented(frame), check_exact=True)
    pd.testing.assert_frame_equal(got, reference_natural_vs_augmented(frame), check_exact=True)  # bit for bit
    pd.testing.assert_frame_equal(readmodel.items_composition(chosen), readmodel.evaluated_composition(frame),
                                  check_exact=True)


@pytest.mark.parametrize("share", [pytest.param(0.5, id="half"), pytest.param(0.0, id="none")])
def test_a_scope_narrows_the_items_as_it_narrows_the_frame(both, share: float) -> None:
    items, scores = both
    ids = frozenset(int(r) for r in scores["response_id"].iloc[: int(len(scores) * share)])
    chosen = readmodel.select_items(items, response_ids=ids)
    frame = scores[scores["response_id"].isin(ids)]
    pd.testing.assert_frame_equal(readmodel.origin_equivalence(chosen), readmodel.natural_vs_augmented(frame),
                                  check_exact=True)
    pd.testing.assert_frame_equal(readmodel.items_composition(chosen), readmodel.evaluated_composition(frame),
                                  check_exact=True)


@pytest.mark.parametrize("margin", [pytest.param(0.05, id="tight"), pytest.param(0.5, id="loose")])
def test_the_margin_and_seed_reach_the_array_path(both, margin: float) -> None:
    items, scores = both
    got = readmodel.origin_equivalence(items, margin=margin, n_resamples=300, seed=7)
    want = reference_natural_vs_augmented(scores, margin=margin, n_resamples=300, seed=7)
    pd.testing.assert_frame_equal(got, want, check_exact=True)


def test_origin_items_reads_only_the_equivalence_metrics(both) -> None:
    with pytest.raises(ValueError, match="refusal"):
        readmodel.origin_items(None, [1], "heuristic", metrics=["faithfulness", "refusal"])  # type: ignore[arg-type]


@pytest.mark.parametrize("repeat", [pytest.param(False, id="once"), pytest.param(True, id="answered-twice")])
def test_repeated_items_send_the_page_to_the_per_item_frame(backend_url_factory, monkeypatch, repeat: bool) -> None:
    """A model answering an item twice: the per-item frame averages the repeats, so origin_items gives None and the
    page's equivalence (results_view.equivalence) is natural_vs_augmented of that frame."""
    from ui import results_view

    url = backend_url_factory()
    make_results(url, n_models=3, n_instances=40, seed=1, with_baselines=False)
    engine = make_engine(url)
    if repeat:
        answer_twice(engine)
    assert (readmodel.origin_items(engine, [1], "heuristic") is None) is repeat
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", url)
    results_view.equivalence.clear()
    shown = results_view.equivalence((1,), "heuristic", (), (), ("v", repeat)).drop(columns="judge")
    want = readmodel.natural_vs_augmented(readmodel.load_scores(engine, [1], "heuristic"))
    pd.testing.assert_frame_equal(shown, want, check_exact=True)
    engine.dispose()
