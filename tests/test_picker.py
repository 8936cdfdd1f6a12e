"""Generator picker: weights, floors, budget, top-two test and the one-page summary."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.analysis import picker, readmodel

MODELS = pd.DataFrame(
    [
        {"model": "good", "paradigm": "reasoning", "access": "open", "is_baseline": False},
        {"model": "cheap", "paradigm": "standard", "access": "closed", "is_baseline": False},
        {"model": "pricey", "paradigm": "standard", "access": "closed", "is_baseline": False},
        {"model": "baseline:always-refuse", "paradigm": "standard", "access": "open", "is_baseline": True},
    ]
)


def _scores() -> pd.DataFrame:
    """20 gap + 20 noisy instances; good: strict 60%, rejection 50%; cheap: strict 30%, rejection 20%; pricey: best but $20/1k."""
    rows = []
    spec = {"good": (12, 10, 0.004), "cheap": (6, 4, 0.001), "pricey": (16, 16, 0.02), "baseline:always-refuse": (0, 20, 0.0)}
    for model, (strict_k, rej_k, cost) in spec.items():
        for i in range(20):
            rows.append({"model": model, "instance_uid": f"n{i}", "domain": "Energy", "mode": "noisy", "origin": "natural", "loose_ias": 0.8,
                         "strict_ias": float(i < strict_k), "loose_persona": 0.8, "loose_output": 0.8, "loose_knowledge_protocol": None,
                         "faithfulness": 0.7, "coverage": 0.5, "rejection": None, "conflict_recognition": None, "refusal": 0.0,
                         "has_protocol": False, "cost_usd": cost, "latency_ms": 100.0, "response_id": len(rows) + 1})
            rows.append({"model": model, "instance_uid": f"g{i}", "domain": "Legal", "mode": "gap", "origin": "augmented", "loose_ias": 0.8,
                         "strict_ias": None, "loose_persona": 0.8, "loose_output": 0.8, "loose_knowledge_protocol": 0.5,
                         "faithfulness": 0.7, "coverage": None, "rejection": float(i < rej_k), "conflict_recognition": None, "refusal": None,
                         "has_protocol": True, "cost_usd": cost, "latency_ms": 100.0, "response_id": len(rows) + 1})
    return readmodel.prepare_scores(pd.DataFrame(rows))


SCORES = _scores()


@pytest.mark.parametrize(
    ("spec", "order", "eligible"),
    [
        pytest.param(picker.PickSpec(weights={"strict_ias": 1.0}), ["pricey", "good", "cheap"], [True, True, True], id="strict-only"),
        pytest.param(picker.PickSpec(weights={"strict_ias": 1.0}, budget_per_1k=5.0), ["good", "cheap", "pricey"], [True, True, False], id="budget-excludes-pricey"),
        pytest.param(picker.PickSpec(weights={"strict_ias": 1.0}, floors={"rejection": 0.4}, budget_per_1k=5.0), ["good", "pricey", "cheap"], [True, False, False], id="floor-and-budget"),
        pytest.param(picker.PickSpec(weights={"strict_ias": 1.0, "rejection": 1.0}, domains=("Legal",)), ["pricey", "good", "cheap"], [True, True, True], id="domain-scope-rejection-only"),
    ],
)
def test_ranking(spec, order, eligible):
    """Candidates ranked 1..k (eligible first, by weighted score); the calibration baselines follow, marked, unranked."""
    ranking = picker.rank(SCORES, MODELS, spec).ranking
    assert ranking["model"].tolist() == [*order, "baseline:always-refuse"]
    assert ranking["eligible"].tolist() == [*eligible, False]
    assert ranking["baseline"].tolist() == [False] * len(order) + [True]
    assert ranking["rank"].tolist()[:-1] == list(range(1, len(order) + 1)) and pd.isna(ranking["rank"].iloc[-1])


def test_reasons_name_the_failed_floor_and_budget():
    spec = picker.PickSpec(weights={"strict_ias": 1.0}, floors={"rejection": 0.4, "strict_ias": 0.2}, budget_per_1k=5.0)
    ranking = picker.rank(SCORES, MODELS, spec).ranking.set_index("model")
    assert ranking.loc["cheap", "fails"] == ["Rejection accuracy (EnterpriseRAG) 20.0% below the floor 40%"]
    assert ranking.loc["pricey", "fails"] == ["cost $20.00 per 1k queries over the budget $5.00"]
    assert ranking.loc["good", "reason"].startswith("Meets every floor")


@pytest.mark.parametrize(
    ("means", "weights", "expected"),
    [
        pytest.param({"strict_ias": 0.6, "rejection": 0.5}, {"strict_ias": 2.0, "rejection": 1.0}, (1.2 + 0.5) / 3, id="weighted-mean"),
        pytest.param({"strict_ias": 0.6, "rejection": np.nan}, {"strict_ias": 2.0, "rejection": 1.0}, 0.6, id="missing-drops-out"),
        pytest.param({"over_abstention": 0.1}, {"over_abstention": 1.0}, 0.9, id="over-abstention-inverted"),
    ],
)
def test_weighted_score(means, weights, expected):
    assert picker.weighted_score(means, weights) == pytest.approx(expected)


def test_top_two_is_the_paired_weighted_score_difference_on_shared_instances():
    t = picker.rank(SCORES, MODELS, picker.PickSpec(weights={"strict_ias": 1.0})).top_two
    assert (t.a, t.b, t.shared) == ("pricey", "good", 40)
    assert t.diff == pytest.approx(0.2)
    assert t.ci_low <= 0.2 <= t.ci_high


SIM_KEYS = ("faithfulness", "coverage", "strict_ias", "rejection", "conflict_recognition")


def _simulated(rng: np.random.Generator, n: int, p: tuple[float, float, float]) -> np.ndarray:
    """One model's SIM_KEYS over n instances cycling noisy/gap/conflict: p = (Strict IAS, rejection, conflict recognition)
    success rates; missing where a metric does not apply, 10% refusals without faithfulness, 20% Strict undetermined."""
    mode = np.arange(n) % 3
    faith = rng.beta(4, 2, n)
    faith[rng.random(n) < 0.1] = np.nan
    coverage = np.where(mode != 1, rng.beta(2, 2, n), np.nan)
    strict = (rng.random(n) < p[0]).astype(float)
    strict[rng.random(n) < 0.2] = np.nan
    rejection = np.where(mode == 1, (rng.random(n) < p[1]).astype(float), np.nan)
    conflict = np.where(mode == 2, (rng.random(n) < p[2]).astype(float), np.nan)
    return np.column_stack([faith, coverage, strict, rejection, conflict])


def _means(x: np.ndarray) -> dict[str, float]:
    return dict(zip(SIM_KEYS, np.nanmean(x, axis=0), strict=True))


def _simulate_calls(p_a: tuple, p_b: tuple, reps: int, n: int, seed: int) -> dict[str, float]:
    """Share of each top-two outcome when the leader is whichever model scores higher on the instances (as rank does)."""
    rng = np.random.default_rng(seed)
    weights = {k: picker.DEFAULT_WEIGHTS[k] for k in SIM_KEYS}
    calls = []
    for i in range(reps):
        xa, xb = _simulated(rng, n, p_a), _simulated(rng, n, p_b)
        if picker.weighted_score(_means(xa), weights) < picker.weighted_score(_means(xb), weights):
            xa, xb = xb, xa
        calls.append(picker.paired_test("a", "b", xa, xb, SIM_KEYS, weights, seed=i).outcome)
    return {o: calls.count(o) / reps for o in ("a_better", "b_better", "tied", "untestable")}


def test_top_two_false_positive_rate_under_no_difference():
    """Both models draw from the same distribution: 'significant' (either direction) in at most 6% of 3,000 seeded
    repetitions over 36 shared instances (measured 5.4%, standard error 0.4 points; the old McNemar-OR-bootstrap rule
    called 8.1% here, the plain percentile bootstrap 6.3%)."""
    shares = _simulate_calls((0.5, 0.5, 0.5), (0.5, 0.5, 0.5), reps=3_000, n=36, seed=20)
    assert shares["a_better"] + shares["b_better"] <= 0.06, shares
    assert shares["untestable"] == 0


def test_top_two_has_power_under_a_real_difference():
    """Success rates 0.8/0.8/0.6 against 0.4/0.4/0.2 on 36 instances: the leader is called better (measured 99%)."""
    shares = _simulate_calls((0.8, 0.8, 0.6), (0.4, 0.4, 0.2), reps=300, n=36, seed=21)
    assert shares["a_better"] >= 0.8 and shares["b_better"] == 0, shares


UNMEASURED = dict.fromkeys(("loose_ias", "faithfulness", "coverage", "rejection", "conflict_recognition"))


def _two_model_scores(a_shared: int, b_shared: int, a_own: int, b_own: int) -> pd.DataFrame:
    """Strict IAS of models 'a' and 'b': 20 shared noisy instances (first k pass) plus 20 instances each answered alone."""
    rows = []
    for model, k_shared, k_own in (("a", a_shared, a_own), ("b", b_shared, b_own)):
        uids = [(f"s{i}", i < k_shared) for i in range(20)] + [(f"{model}{i}", i < k_own) for i in range(20)]
        rows += [{"model": model, "instance_uid": uid, "domain": "Energy", "mode": "noisy", "strict_ias": float(ok), "refusal": 0.0,
                  "cost_usd": 0.001, "response_id": len(rows) + j, **UNMEASURED} for j, (uid, ok) in enumerate(uids)]
    return readmodel.prepare_scores(pd.DataFrame(rows))


AB_MODELS = pd.DataFrame([{"model": m, "paradigm": "standard", "access": "open", "is_baseline": False} for m in ("a", "b")])


@pytest.mark.parametrize(
    ("a_shared", "b_shared", "a_own", "b_own", "outcome", "says"),
    [
        pytest.param(20, 5, 10, 10, "a_better", "a is significantly better than b", id="leader-better"),
        pytest.param(5, 20, 20, 0, "b_better", "b is better than a on the shared instances (the ranking by full-scope means disagrees)", id="runner-up-better-on-shared"),
        pytest.param(12, 11, 10, 10, "tied", "treat them as tied and decide on cost", id="tied"),
    ],
)
def test_top_two_verdict_is_direction_aware(a_shared, b_shared, a_own, b_own, outcome, says):
    result = picker.rank(_two_model_scores(a_shared, b_shared, a_own, b_own), AB_MODELS, picker.PickSpec(weights={"strict_ias": 1.0}))
    t = result.top_two
    assert result.ranking["model"].tolist()[:2] == ["a", "b"] and t.shared == 20
    assert t.outcome == outcome and t.significant == (outcome == "a_better")
    assert says in picker.top_two_verdict(result)
    assert f"Top two on 20 shared instances: {picker.top_two_verdict(result)}" in picker.decision_lines(result)


def test_only_baselines_are_listed_with_a_note_and_no_recommendation():
    only = SCORES[SCORES["model"] == "baseline:always-refuse"]
    result = picker.rank(only, MODELS, picker.PickSpec())
    assert result.ranking["model"].tolist() == ["baseline:always-refuse"] and "baselines" in result.note
    assert result.top_two is None and result.recommended is None
    assert "Recommended" not in picker.summary_markdown(result, "heuristic", "#1")


BASELINES = pd.DataFrame([{"model": m, "paradigm": "standard", "access": "open", "is_baseline": True}
                          for m in ("baseline:extractive", "baseline:always-refuse")])


def _strict_scores(passes: dict[str, int], n: int = 40) -> pd.DataFrame:
    """Strict IAS only: model -> how many of the n shared noisy instances pass."""
    rows = [{"model": model, "instance_uid": f"s{i}", "domain": "Energy", "mode": "noisy", "strict_ias": float(i < k), "refusal": 0.0,
             "cost_usd": 0.0, "response_id": 1000 * j + i, **UNMEASURED} for j, (model, k) in enumerate(passes.items()) for i in range(n)]
    return readmodel.prepare_scores(pd.DataFrame(rows))


@pytest.mark.parametrize(
    ("passes", "recommended", "says"),
    [
        pytest.param({"zero": 0, "baseline:extractive": 20, "baseline:always-refuse": 0}, None,
                     "No recommendation: zero does not beat the extractive baseline (score 50.0%", id="zero-below-extractive"),
        pytest.param({"a": 22, "baseline:extractive": 20, "baseline:always-refuse": 0}, None,
                     "No recommendation: a does not beat the extractive baseline (score 50.0%", id="tied-with-extractive"),
        pytest.param({"a": 36, "baseline:extractive": 20, "baseline:always-refuse": 0}, "a",
                     "a beats the extractive baseline (score 50.0%", id="beats-the-best-baseline"),
        pytest.param({"a": 36, "baseline:extractive": 0, "baseline:always-refuse": 38}, None,
                     "No recommendation: a does not beat the always-refuse baseline (score 95.0%", id="best-baseline-is-the-floor"),
        pytest.param({"a": 10}, "a", "No calibration baseline was scored in this scope", id="no-baseline-scored"),
    ],
)
def test_recommendation_must_beat_the_best_baseline(passes, recommended, says):
    models = pd.concat([AB_MODELS, BASELINES, pd.DataFrame([{"model": "zero", "paradigm": "standard", "access": "open", "is_baseline": False}])])
    result = picker.rank(_strict_scores(passes), models, picker.PickSpec(weights={"strict_ias": 1.0}))
    assert result.recommended == recommended
    md = picker.summary_markdown(result, "heuristic", "#1")
    assert says in md and ("Recommended generator" in md) == (recommended is not None)
    assert says in picker.summary_html(result, "heuristic", "#1")


def test_summaries_contain_ranking_and_escape_html():
    models = pd.concat([MODELS, pd.DataFrame([{"model": "<script>x</script>", "paradigm": "standard", "access": "open", "is_baseline": False}])])
    scores = pd.concat([SCORES, SCORES[SCORES["model"] == "cheap"].assign(model="<script>x</script>")])
    result = picker.rank(scores, models, picker.PickSpec(floors={"rejection": 0.4}, budget_per_1k=5.0))
    md = picker.summary_markdown(result, "heuristic", "#1")
    assert "**Recommended generator: good.**" in md and "| 1 | good |" in md and "Rejection ≥ 40%" not in md
    assert "Rejection accuracy (EnterpriseRAG) ≥ 40%" in md and "Top two on 40 shared instances" in md
    page = picker.summary_html(result, "heuristic", "#1")
    assert "<script>" not in page and "&lt;script&gt;" in page and "<td>good</td>" in page


def _rerun(scores: pd.DataFrame, model: str, instances: list[str], **values) -> pd.DataFrame:
    """A second run of `model` re-answering `instances` (later response ids), with some metric values changed."""
    again = scores[(scores["model"] == model) & scores["instance_uid"].isin(instances)].assign(run_id=2, **values)
    return again.assign(response_id=again["response_id"] + 10_000)


def test_overlapping_runs_count_each_model_instance_once_latest_wins():
    rerun = _rerun(SCORES.assign(run_id=1), "good", [f"n{i}" for i in range(10)], strict_ias=0.0)
    overlapping = pd.concat([SCORES.assign(run_id=1), rerun], ignore_index=True)
    latest_only = pd.concat([overlapping[(overlapping["run_id"] == 1) & ~overlapping.index.isin(
        overlapping[(overlapping["model"] == "good") & overlapping["instance_uid"].isin(rerun["instance_uid"])].index)], rerun])
    spec = picker.PickSpec(weights={"strict_ias": 1.0})
    got = picker.rank(overlapping, MODELS, spec)
    want = picker.rank(latest_only, MODELS, spec)
    good = got.ranking.set_index("model").loc["good"]
    assert (good["responses"], good["strict_ias"]) == (40, pytest.approx(2 / 20))
    pd.testing.assert_frame_equal(got.ranking, want.ranking)
    assert got.n_responses == want.n_responses == len(SCORES)
    assert (got.n_superseded, want.n_superseded) == (10, 0)
    assert "10 older responses of overlapping runs left out" in picker.summary_markdown(got, "heuristic", "#1, #2")


@pytest.mark.parametrize(
    ("value", "n", "cell"),
    [
        pytest.param(0.6, 20, "60.0% n=20†", id="small-n-flagged"),
        pytest.param(0.9, 30, "90.0% n=30", id="thirty-not-flagged"),
        pytest.param(np.nan, 0, "no data n=0", id="not-measured"),
    ],
)
def test_metric_cell_says_n_and_flags_small_n(value, n, cell):
    assert picker.metric_cell(value, n) == cell


def test_every_metric_cell_of_the_ranking_says_its_n():
    result = picker.rank(SCORES, MODELS, picker.PickSpec())
    ranking = result.ranking.set_index("model")
    assert ranking.loc["good", ["n_strict_ias", "n_rejection", "n_faithfulness", "n_conflict_recognition"]].tolist() == [20, 20, 40, 0]
    table = picker.ranking_table(result).set_index("model")
    assert table.loc["good", "strict_ias"] == "60.0% n=20†" and table.loc["good", "faithfulness"] == "70.0% n=40"
    assert table.loc["good", "conflict_recognition"] == "no data n=0"
    assert table.loc["baseline:always-refuse", "rank"] == "baseline" and table.loc["pricey", "rank"] == "1"
    cells = table[list(result.metrics)].to_numpy().ravel()
    assert all(" n=" in c for c in cells)
    assert table["eligible"].tolist() == result.ranking["eligible"].tolist()


@pytest.mark.parametrize("render", [picker.summary_markdown, picker.summary_html], ids=["markdown", "html"])
@pytest.mark.parametrize(
    ("weights", "floors", "shown", "hidden"),
    [
        pytest.param({"faithfulness": 1.0, "coverage": 1.0, "loose_ias": 1.0, "over_abstention": 0.5}, {},
                     ["Faithfulness (EnterpriseRAG) ×1", "Answer Coverage (EnterpriseRAG) ×1", "Loose IAS (EnterpriseRAG) ×1",
                      "Over-abstention (EnterpriseRAG) ×0.5"], ["Strict IAS", "Rejection accuracy (EnterpriseRAG) ×"],
                     id="non-default-weights"),
        pytest.param({"strict_ias": 2.0, "coverage": 0.0}, {"rejection": 0.1}, ["Strict IAS (EnterpriseRAG) ×2", "Rejection accuracy (EnterpriseRAG) (floor)"], ["Answer Coverage"],
                     id="zero-weight-hidden-floor-shown"),
    ],
)
def test_summary_lists_every_weighted_metric_with_value_n_and_judge(render, weights, floors, shown, hidden):
    result = picker.rank(SCORES, MODELS, picker.PickSpec(weights=weights, floors=floors))
    text = render(result, "llm:gpt-4.1@single", "#1, #2")
    table = text[text.index("Ranking"):]
    assert all(label in table for label in shown) and not any(label in table for label in hidden)
    for m in [m for m in result.metrics if weights.get(m, 0) > 0 or m in floors]:
        row = result.ranking.set_index("model").loc["good"]
        assert picker.metric_cell(row[m], row[f"n_{m}"]) in table
    assert "judge llm:gpt-4.1 (one call per constraint)" in text and "judge: llm:gpt-4.1@single" not in text
    assert f"Top two on {result.top_two.shared} shared instances: " in text


def test_no_shared_instances_is_untestable_and_not_a_recommendation():
    disjoint = pd.concat([_strict_scores({m: 30}).assign(instance_uid=lambda d, m=m: m + d["instance_uid"])
                          for m in ("a", "b", "baseline:extractive")])
    result = picker.rank(disjoint, pd.concat([AB_MODELS, BASELINES]), picker.PickSpec(weights={"strict_ias": 1.0}))
    assert (result.top_two.outcome, result.top_two.shared, result.floor.outcome) == ("untestable", 0, "untestable")
    assert result.recommended is None
    assert "a does not beat the extractive baseline (score 75.0%): they share 0 instances, too few to test" in picker.decision_lines(result)[0]


@pytest.mark.parametrize(("floors", "needle"), [
    pytest.param({"conflict_recognition": 0.2}, "the floor Conflict recognition (EnterpriseRAG) ≥ 20% cannot be checked", id="unmeasured-named"),
    pytest.param({"strict_ias": 0.99}, "no candidate meets every floor", id="measured-but-missed"),
])
def test_the_headline_names_an_unmeasured_floor_and_what_would_measure_it(floors, needle):
    """A floor no candidate has a value for is named with its reason and what would measure it (LLM judge, labels)."""
    text = picker.headline(picker.rank(SCORES, MODELS, picker.PickSpec(weights={"strict_ias": 1.0}, floors=floors), 50))
    assert text.startswith("No recommendation") and needle in text
    assert ("llm:MODEL" in text and "gold labels" in text) == ("cannot be checked" in needle)
