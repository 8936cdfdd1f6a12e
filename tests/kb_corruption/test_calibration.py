"""Calibration on the fake server: every scripted model scores exactly what its reading rule predicts from the
documents each condition retrieved, and the designed numbers hold (see conftest for the models)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.generation import run_estimates, runs
from core.protocols.kb_corruption import CONDITION_NAMES, CORRUPTED_CONDITIONS, SEVERITIES
from core.protocols.kb_corruption import analysis as kb_corruption
from core.store.db import make_engine
from tests.kb_corruption.conftest import CLAIM, CLOSED, HEURISTIC, MARKED, REFUSE

# One xdist worker builds the session-scoped fixture these modules share (built once, not once per worker)
pytestmark = pytest.mark.xdist_group("kb_corruption-world")


@pytest.fixture(scope="module")
def scores(world):
    return kb_corruption.stress_scores(make_engine(world.url), [world.run_id], HEURISTIC)


@pytest.fixture(scope="module")
def table(scores):
    return kb_corruption.accuracy(scores)


def built_instances(world) -> list[dict]:
    return [json.loads(line) for line in (world.out / "instances.jsonl").read_text(encoding="utf-8").splitlines()]


def predicted(instance: dict, condition: str, model: str) -> float:
    """What a reader answers: the '*' option (marked) or the last claim (claim) of its question's first entry."""
    docs = sorted((d for d in instance["documents"] if d["variant"]["retrieved_for"] == condition),
                  key=lambda d: d["variant"]["rank"])
    qid = instance["metadata"]["ragstress"]["source_question_id"]
    own = next((d["variant"] for d in docs if d["variant"]["source_question_id"] == qid), None)
    if own is None:
        return 0.0
    chosen = own["marked_key"] if model == MARKED else (own["claimed_key"] or own["marked_key"])
    return float(chosen == instance["reference"]["answer_key"])


def accuracy_of(table, model: str, condition: str) -> tuple[float, int]:
    row = table[(table["model"] == model) & (table["condition"] == condition)].iloc[0]
    return row["accuracy"], row["n"]


@pytest.mark.parametrize("model", [MARKED, CLAIM])
def test_readers_score_exactly_what_the_retrieved_documents_predict(world, scores, model):
    got = scores[scores["model"] == model].set_index(["instance_uid", "condition"])["correct"]
    expected = {(i["id"], c): predicted(i, c, model) for i in built_instances(world) for c in CONDITION_NAMES
                if (i["id"], c) in got.index}
    assert len(expected) == len(got) and {c for _, c in expected} == set(CONDITION_NAMES)
    assert {k: got[k] for k in expected} == expected


NUMERIC_ITEMS = 6  # of the 12: 5 with a number in the correct option, 1 with one in its question only

DESIGN = [
    *(pytest.param(MARKED, c, 0.0, id=f"marked-{c}") for c in ("no_retrieval", "factual_subtle", "factual_moderate",
                                                                "factual_obvious")),
    *(pytest.param(MARKED, c, 1.0, id=f"marked-{c}") for c in CONDITION_NAMES
      if c == "clean" or c.split("_")[0] in ("numeric", "relevance", "contradiction")),
    *(pytest.param(CLAIM, c, 0.0, id=f"claim-{c}") for c in CONDITION_NAMES
      if c == "no_retrieval" or c.split("_")[0] in ("factual", "contradiction")),
    *(pytest.param(CLAIM, c, 1.0, id=f"claim-{c}") for c in CONDITION_NAMES
      if c == "clean" or c.split("_")[0] in ("numeric", "relevance")),
    *(pytest.param(REFUSE, c, 0.0, id=f"refuse-{c}") for c in CONDITION_NAMES),
]


@pytest.mark.parametrize(("model", "condition", "want"), DESIGN)
def test_designed_accuracy(table, model, condition, want):
    value, n = accuracy_of(table, model, condition)
    assert value == want and n == (NUMERIC_ITEMS if condition.startswith("numeric") else 12)


@pytest.mark.parametrize(("model", "fooled_by"), [
    pytest.param(MARKED, ("factual",), id="marked-falls-on-factual-entries-only"),
    pytest.param(CLAIM, ("factual", "contradiction"), id="claim-falls-on-factual-and-contradicted-entries"),
])
def test_mixed_accuracy_follows_the_first_retrieved_own_entry(world, table, model, fooled_by):
    firsts = [i["metadata"]["ragstress"]["retrieval"]["mixed"]["own_variant"] for i in built_instances(world)]
    want = np.mean([first.split("-")[0] not in fooled_by for first in firsts])
    assert accuracy_of(table, model, "mixed")[0] == pytest.approx(want)
    assert 0 < want < 1, "the slice should mix clean and corrupted first entries"


def test_closed_book_scores_the_same_in_every_condition(scores, table):
    mine = scores[scores["model"] == CLOSED].pivot(index="instance_uid", columns="condition", values="correct")
    assert (mine.nunique(axis=1, dropna=True) == 1).all(), "a closed-book answer must not depend on the documents"
    full = [accuracy_of(table, CLOSED, c)[0] for c in CONDITION_NAMES if not c.startswith("numeric")]
    assert full == [0.5] * len(full)
    numeric_items = mine["numeric_subtle"].dropna().index
    for condition in ("numeric_subtle", "numeric_moderate", "numeric_obvious"):
        assert accuracy_of(table, CLOSED, condition)[0] == mine.loc[numeric_items, "clean"].mean()


def test_impact_and_gaps_on_calibrated_models(scores):
    impact = kb_corruption.corruption_impact(scores).set_index(["model", "type", "severity"])
    for severity in SEVERITIES:
        assert impact.loc[(MARKED, "factual", severity), "delta"] == 1.0
        assert impact.loc[(MARKED, "contradiction", severity), "delta"] == 0.0
        assert impact.loc[(CLAIM, "contradiction", severity), "delta"] == 1.0
        assert impact.loc[(CLOSED, "factual", severity), ["delta", "n"]].tolist() == [0.0, 12]
    gaps = kb_corruption.resilience_gaps(scores, [MARKED, CLAIM]).set_index("type")
    assert gaps.loc["contradiction", "gamma"] == 1.0 and gaps.loc["contradiction", "p_value"] == 0.0
    assert gaps.loc["factual", "gamma"] == 0.0 and gaps.loc["factual", "p_value"] == 1.0
    assert gaps.loc["numeric", "n"] == NUMERIC_ITEMS and gaps.loc["relevance", "n"] == 12


def test_mixed_vs_worst_and_capability(scores, table):
    mixed = kb_corruption.mixed_vs_worst(scores, table).set_index("model")
    assert mixed.loc[MARKED, "worst_accuracy"] == 0.0 and mixed.loc[MARKED, "worst_condition"].startswith("factual")
    assert bool(mixed.loc[MARKED, "mixed_above_worst"]) and mixed.loc[MARKED, "n_shared"] == 12
    per_model, corr = kb_corruption.capability_vs_robustness(table, exclude=[REFUSE])
    assert REFUSE in set(per_model["model"])
    overall = corr.set_index("robustness").loc["all corruptions"]
    assert overall["n_models"] == 3 and np.isfinite(overall["rho"])
    assert per_model.set_index("model").loc[MARKED, "corrupted"] == pytest.approx(np.mean(
        [accuracy_of(table, MARKED, c)[0] for c in CORRUPTED_CONDITIONS]))


def test_retrieval_profile_matches_the_build_report(world, scores):
    profile = kb_corruption.retrieval_profile(make_engine(world.url), scores["instance_uid"].unique())
    report = json.loads((world.out / "build.json").read_text())["conditions"]
    assert profile.set_index("condition").to_dict("index") == report


def test_estimate_shows_items_by_condition(world):
    options = runs.RunOptions(models=[MARKED], conditions=list(CONDITION_NAMES))
    shape = run_estimates.estimate_options(make_engine(world.url), options).shape()
    assert "items 162 = 1 model(s) x 162 instance-conditions (12 instances x 15 conditions" in shape
    assert "numeric_subtle 6" in shape and "clean 12" in shape
