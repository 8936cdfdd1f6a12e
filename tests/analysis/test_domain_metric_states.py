"""domain_metric_states (radar points and heatmap cells of the Domains page) counted in one pass per metric equals
the per-group computation it replaced (mean, n and every state count), on the synthetic results set."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bench.make_synthetic_results import make_results
from core.analysis import readmodel
from core.analysis.readmodel.states import STATE_COLUMNS, response_statuses, state_counts
from core.store.db import make_engine


def per_group(scores: pd.DataFrame, by: list[str], metrics) -> pd.DataFrame:
    """The reference: one group at a time, as the page computed it before."""
    rows = [{**dict(zip(by, keys, strict=True)), "metric": metric, "mean": group[metric].mean(),
             "n": int(group[metric].count()), **state_counts(response_statuses(group, metric))}
            for keys, group in scores.groupby(by, sort=True) for metric in metrics]
    return pd.DataFrame(rows, columns=[*by, "metric", "mean", "n", *STATE_COLUMNS.values()])


@pytest.fixture(scope="module")
def scores(tmp_path_factory):
    db = tmp_path_factory.mktemp("dms") / "small.db"
    make_results(f"sqlite:///{db}", n_models=3, n_instances=80, seed=7)
    engine = make_engine(f"sqlite:///{db}")
    yield readmodel.scores_from_responses(readmodel.response_scores(engine, [1], "heuristic"))
    engine.dispose()


@pytest.mark.parametrize("by", [pytest.param(["model", "domain"], id="radar-points"),
                                pytest.param(["domain"], id="heatmap-cells"),
                                pytest.param(["model", "mode"], id="model-mode")])
@pytest.mark.parametrize("subset", [pytest.param("all", id="all"), pytest.param("gap", id="gap-only"),
                                    pytest.param("none", id="empty")])
def test_one_pass_equals_the_per_group_computation(scores, by, subset) -> None:
    frame = {"all": scores, "gap": scores[scores["mode"] == "gap"], "none": scores.iloc[:0]}[subset]
    got = readmodel.domain_metric_states(frame, by)
    want = per_group(frame, by, readmodel.DOMAIN_METRICS)
    assert list(got.columns) == list(want.columns)
    assert len(got) == len(want)
    if want.empty:
        return
    for column in [*by, "metric", "n", *STATE_COLUMNS.values()]:
        assert list(got[column]) == list(want[column]), column
    np.testing.assert_allclose(got["mean"].to_numpy(float), want["mean"].to_numpy(float), rtol=0, atol=1e-12,
                               equal_nan=True)
