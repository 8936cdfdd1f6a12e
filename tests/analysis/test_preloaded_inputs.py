"""The dashboards pass what they already loaded (scores, gold labels, response ids) to the read model; the numbers
are the same as when the read model loads them itself."""

from __future__ import annotations

import pandas as pd
import pytest

from core.analysis import readmodel
from core.analysis.alignment import judge_value, judge_vs_gold
from core.store.labels import gold_labels
from tests.test_alignment import build


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    s, _ = build(tmp_path_factory.mktemp("preloaded"))
    return s


def _of(verdicts: pd.DataFrame, gold: dict) -> pd.DataFrame:
    return verdicts[verdicts["response_id"].isin(list(gold))].reset_index(drop=True)


CASES = [
    pytest.param(lambda s, gold: readmodel.load_corrected(s.engine, [s.run_id], "llm:j1"),
                 lambda s, gold: readmodel.load_corrected(s.engine, [s.run_id], "llm:j1",
                                                          readmodel.load_scores(s.engine, [s.run_id], "llm:j1"), gold),
                 id="corrected-estimates"),
    pytest.param(lambda s, gold: judge_vs_gold(s.engine, [s.run_id], "llm:j1"),
                 lambda s, gold: judge_vs_gold(s.engine, [s.run_id], "llm:j1", gold), id="judge-vs-gold"),
    pytest.param(lambda s, gold: judge_value(s.engine, [s.run_id], ["llm:j1", "heuristic"]),
                 lambda s, gold: judge_value(s.engine, [s.run_id], ["llm:j1", "heuristic"], gold), id="judge-value"),
    pytest.param(lambda s, gold: _of(readmodel.constraint_verdicts(s.engine, [s.run_id], "llm:j1"), gold),
                 lambda s, gold: readmodel.constraint_verdicts(s.engine, [s.run_id], "llm:j1", response_ids=list(gold)),
                 id="verdicts-of-gold-responses"),
]


@pytest.mark.parametrize(("loaded_inside", "preloaded"), CASES)
def test_preloaded_inputs_give_the_same_numbers(world, loaded_inside, preloaded) -> None:
    gold = gold_labels(world.engine, [world.run_id])
    assert gold, "the world has gold labels"
    expected, got = loaded_inside(world, gold), preloaded(world, gold)
    if isinstance(expected, pd.DataFrame):
        assert not expected.empty
        pd.testing.assert_frame_equal(got, expected)
    else:
        assert got == expected


def test_no_gold_labels_means_no_judge_items_and_no_value(world) -> None:
    rows = judge_vs_gold(world.engine, [world.run_id], "llm:j1", gold={})
    assert all(r.n_compared == 0 for r in rows)
    assert judge_value(world.engine, [world.run_id], ["llm:j1"], gold={}).empty
