"""Aggregations for the results dashboards on a small hand-checked results set."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.analysis import readmodel, stats

MODELS = pd.DataFrame(
    [
        {"model": "closed-std", "paradigm": "standard", "access": "closed", "is_baseline": False},
        {"model": "open-reason", "paradigm": "reasoning", "access": "open", "is_baseline": False},
        {"model": "baseline:always-refuse", "paradigm": "standard", "access": "open", "is_baseline": True},
    ]
)


def _row(model, uid, mode, *, domain="Energy", origin="natural", loose=1.0, strict=1.0, faith=0.8, cov=0.5, rej=None, cr=None, refusal=0.0, proto=False, cost=0.002, lat=1000.0):
    return {
        "run_id": 1, "model": model, "instance_uid": uid, "domain": domain, "mode": mode, "origin": origin,
        "loose_ias": loose, "strict_ias": strict, "loose_persona": loose, "loose_output": loose,
        "loose_knowledge_protocol": loose if proto else None, "faithfulness": faith, "coverage": cov,
        "rejection": rej, "conflict_recognition": cr, "refusal": refusal, "n_constraints": 4,
        "n_constraint_errors": 0, "has_protocol": proto, "cost_usd": cost, "latency_ms": lat,
    }


# Hand-checked set: 4 instances (2 noisy, 1 gap, 1 conflict) x 3 models.
SCORES = pd.DataFrame(
    [
        _row("open-reason", "n1", "noisy", loose=1.0, strict=True, faith=0.9, cov=0.6),
        _row("open-reason", "n2", "noisy", domain="Legal", loose=0.5, strict=False, faith=0.7, cov=0.4),
        _row("open-reason", "g1", "gap", loose=0.75, strict=None, rej=True, refusal=1.0, proto=True),
        _row("open-reason", "c1", "conflict", origin="augmented", loose=0.5, strict=False, cr=True, proto=True),
        _row("closed-std", "n1", "noisy", loose=0.5, strict=False, faith=0.6, cov=0.3, cost=0.01, lat=3000.0),
        _row("closed-std", "n2", "noisy", domain="Legal", loose=0.25, strict=False, faith=0.5, cov=0.2, refusal=1.0, cost=0.01, lat=3000.0),
        _row("closed-std", "g1", "gap", loose=0.5, strict=False, rej=False, proto=True, cost=0.01, lat=3000.0),
        _row("closed-std", "c1", "conflict", origin="augmented", loose=0.25, strict=False, cr=False, proto=True, cost=0.01, lat=3000.0),
        _row("baseline:always-refuse", "n1", "noisy", loose=0.0, strict=False, faith=1.0, cov=0.0, refusal=1.0, cost=0.0, lat=1.0),
        _row("baseline:always-refuse", "n2", "noisy", domain="Legal", loose=0.0, strict=False, faith=1.0, cov=0.0, refusal=1.0, cost=0.0, lat=1.0),
        _row("baseline:always-refuse", "g1", "gap", loose=0.0, strict=False, rej=True, refusal=1.0, proto=True, cost=0.0, lat=1.0),
        _row("baseline:always-refuse", "c1", "conflict", origin="augmented", loose=0.0, strict=False, cr=False, refusal=1.0, proto=True, cost=0.0, lat=1.0),
    ]
)


@pytest.fixture(scope="module")
def prepared() -> pd.DataFrame:
    return readmodel.prepare_scores(SCORES)


@pytest.fixture(scope="module")
def board(prepared) -> pd.DataFrame:
    return readmodel.leaderboard(prepared, MODELS).set_index(["model", "metric"])


@pytest.mark.parametrize(
    ("model", "metric", "expected", "n"),
    [
        pytest.param("open-reason", "loose_ias", 0.6875, 4, id="loose-mean-of-4"),
        pytest.param("open-reason", "strict_ias", 1 / 3, 3, id="strict-skips-undetermined"),
        pytest.param("open-reason", "orchestration_gap", (1.0 + 0.5 + 0.75 + 0.5) / 4 - (1 + 0 + 0) / 3, 3, id="gap-is-shown-loose-minus-shown-strict"),
        pytest.param("open-reason", "loose_knowledge_protocol", 0.625, 2, id="protocol-only-where-present"),
        pytest.param("open-reason", "rejection", 1.0, 1, id="rejection-on-gap-only"),
        pytest.param("closed-std", "over_abstention", 1 / 3, 3, id="over-abstention-excludes-gap"),
        pytest.param("closed-std", "cost_per_1k", 10.0, 4, id="cost-per-1k"),
        pytest.param("closed-std", "latency_min_per_1k", 50.0, 4, id="latency-minutes-per-1k"),
        pytest.param("baseline:always-refuse", "coverage", 0.25, 4, id="baseline-row-present"),
    ],
)
def test_leaderboard_values(board, model, metric, expected, n):
    row = board.loc[(model, metric)]
    assert row["value"] == pytest.approx(expected)
    assert row["n"] == n
    assert row["ci_low"] <= row["value"] + 1e-12 <= row["ci_high"] + 2e-12


@pytest.mark.parametrize(
    ("metric", "best", "second"),
    [
        pytest.param("loose_ias", "open-reason", "closed-std", id="higher-better"),
        pytest.param("cost_per_1k", "open-reason", "closed-std", id="cheaper-better-baseline-excluded"),
        pytest.param("over_abstention", "open-reason", "closed-std", id="lower-abstention-better"),
    ],
)
def test_leaderboard_marks_best_and_second_among_non_baselines(board, metric, best, second):
    marks = board.xs(metric, level="metric")["mark"]
    assert marks[best] == "best"
    assert marks[second] == "second"
    assert marks["baseline:always-refuse"] == ""


def test_leaderboard_order_follows_table2_with_baselines_last(prepared):
    long = readmodel.leaderboard(prepared, MODELS)
    assert list(dict.fromkeys(long["model"])) == ["open-reason", "closed-std", "baseline:always-refuse"]
    table = readmodel.leaderboard_table(long)
    assert table["Group"].tolist() == ["open-source · reasoning", "closed-source · standard", "calibration baseline"]
    assert table.loc[0, "Loose IAS"].startswith("68.8 [") and table.loc[0, "Loose IAS"].endswith("★")


def test_bootstrap_means_matches_stats_bootstrap_ci():
    rng = np.random.default_rng(3)
    x = rng.binomial(1, 0.3, size=300).astype(float)
    lo, hi = readmodel._ci(readmodel.bootstrap_means(x, 8_000, seed=1))
    ref = stats.bootstrap_ci(stats.mean, x, n_resamples=8_000, seed=1)
    assert lo[0] == pytest.approx(ref.ci_low, abs=0.012)
    assert hi[0] == pytest.approx(ref.ci_high, abs=0.012)


def test_bootstrap_means_ignores_missing_cells():
    values = np.array([[1.0, np.nan], [0.0, 1.0], [1.0, 1.0]])
    reps = readmodel.bootstrap_means(values, 200, seed=0)
    assert reps.shape == (200, 2)
    assert set(np.unique(reps[:, 1][~np.isnan(reps[:, 1])])) == {1.0}


def test_leaderboard_gap_equals_shown_loose_minus_strict_and_cells_carry_n(prepared):
    long = readmodel.leaderboard(prepared, MODELS).set_index(["model", "metric"])
    for model in ("open-reason", "closed-std"):
        gap = long.loc[(model, "orchestration_gap"), "value"]
        shown = long.loc[(model, "loose_ias"), "value"] - long.loc[(model, "strict_ias"), "value"]
        assert gap == pytest.approx(shown, abs=1e-12)
        assert long.loc[(model, "strict_ias"), "n"] == prepared[prepared["model"] == model]["strict_ias"].notna().sum()
        assert long.loc[(model, "strict_ias"), "small_n"] and long.loc[(model, "strict_ias"), "interval"] == "clopper-pearson"


MARK_CASES = [
    pytest.param({"a": [0, 0], "b": [0, 0]}, {"a": "", "b": ""}, id="tie-at-zero-gets-no-star"),
    pytest.param({"a": [1, 1], "b": [1, 1]}, {"a": "", "b": ""}, id="everyone-tied-gets-no-star"),
    pytest.param({"a": [1, 0], "b": [0, 0]}, {"a": "best", "b": ""}, id="zero-never-second"),
    pytest.param({"a": [1, 1], "b": [1, 0], "c": [0, 1]}, {"a": "best", "b": "second", "c": "second"}, id="ranked"),
]


@pytest.mark.parametrize(("values", "marks"), MARK_CASES)
def test_leaderboard_marks(values, marks):
    rows = [_row(m, f"i{i}", "gap", strict=True, rej=v) for m, vs in values.items() for i, v in enumerate(vs)]
    models = pd.DataFrame([{"model": m, "paradigm": "standard", "access": "open", "is_baseline": False} for m in values])
    long = readmodel.leaderboard(readmodel.prepare_scores(pd.DataFrame(rows)), models).set_index(["model", "metric"])
    assert {m: long.loc[(m, "rejection"), "mark"] for m in values} == marks


def test_missing_metric_is_nan_with_n_zero_not_zero(prepared):
    long = readmodel.leaderboard(prepared[prepared["mode"] == "noisy"], MODELS).set_index(["model", "metric"])
    cell = long.loc[("open-reason", "rejection")]
    assert np.isnan(cell["value"]) and cell["n"] == 0
    assert readmodel.leaderboard_table(long.reset_index()).set_index("Model").loc["open-reason", "Rejection accuracy"] == "no data"


@pytest.mark.parametrize(
    ("modes", "domains", "rows"),
    [
        pytest.param(["noisy"], None, 6, id="noisy"),
        pytest.param(["gap", "conflict"], None, 6, id="gap+conflict"),
        pytest.param(None, ["Legal"], 3, id="legal-domain"),
        pytest.param([], [], 12, id="all"),
    ],
)
def test_filter_scores(prepared, modes, domains, rows):
    assert len(readmodel.filter_scores(prepared, modes, domains)) == rows


def test_domain_metrics_and_heatmap(prepared):
    dm = readmodel.domain_metrics(prepared).set_index(["model", "domain"])
    assert dm.loc[("closed-std", "Legal"), "coverage"] == pytest.approx(0.2)
    assert dm.loc[("closed-std", "Energy"), "responses"] == 3
    heat = readmodel.domain_heatmap(prepared[prepared["model"] != "baseline:always-refuse"])
    assert heat.loc["Legal", "loose_ias"] == pytest.approx((0.5 + 0.25) / 2)


VERDICTS = pd.DataFrame(
    [
        {"response_id": 1, "model": "m1", "instance_uid": "n1", "domain": "Energy", "mode": "noisy", "category": "output", "sub_dimension": "format", "cid": "c1", "text": "Use a list", "method": "rule", "judge": "rule", "status": "ok", "passed": False, "reason": "no list"},
        {"response_id": 1, "model": "m1", "instance_uid": "n1", "domain": "Energy", "mode": "noisy", "category": "output", "sub_dimension": "negative", "cid": "c2", "text": "No emojis", "method": "rule", "judge": "rule", "status": "ok", "passed": True, "reason": ""},
        {"response_id": 1, "model": "m1", "instance_uid": "n1", "domain": "Energy", "mode": "noisy", "category": "knowledge_protocol", "sub_dimension": "citation", "cid": "c3", "text": "Cite", "method": "heuristic", "judge": "heuristic", "status": "ok", "passed": False, "reason": "no citation"},
        {"response_id": 2, "model": "m1", "instance_uid": "n2", "domain": "Energy", "mode": "noisy", "category": "knowledge_protocol", "sub_dimension": "citation", "cid": "c1", "text": "Cite", "method": "heuristic", "judge": "heuristic", "status": "error", "passed": None, "reason": "timeout"},
        {"response_id": 2, "model": "m1", "instance_uid": "n2", "domain": "Energy", "mode": "noisy", "category": "persona", "sub_dimension": "role", "cid": "c2", "text": "Be an engineer", "method": "heuristic", "judge": "heuristic", "status": "ok", "passed": True, "reason": ""},
        {"response_id": 3, "model": "m2", "instance_uid": "n1", "domain": "Energy", "mode": "noisy", "category": "output", "sub_dimension": "format", "cid": "c1", "text": "Use a list", "method": "rule", "judge": "rule", "status": "ok", "passed": True, "reason": ""},
    ]
)


@pytest.mark.parametrize(
    ("level", "key", "rate", "share", "undetermined"),
    [
        pytest.param("category", ("m1", "output"), 0.5, 0.5, 0, id="output-1-of-2"),
        pytest.param("category", ("m1", "knowledge_protocol"), 1.0, 0.5, 1, id="protocol-error-excluded"),
        pytest.param("category", ("m1", "persona"), 0.0, 0.0, 0, id="persona-none-failed"),
        pytest.param("sub_dimension", ("m1", "output", "format"), 1.0, 0.5, 0, id="subdim-format"),
        pytest.param("category", ("m2", "output"), 0.0, None, 0, id="no-failures-no-share"),
    ],
)
def test_failure_rates(level, key, rate, share, undetermined):
    fr = readmodel.failure_rates(readmodel.verdict_counts(VERDICTS), level)
    keys = ["model", "category"] + (["sub_dimension"] if level == "sub_dimension" else [])
    row = fr.set_index(keys).loc[key]
    assert row["failure_rate"] == pytest.approx(rate)
    assert (pd.isna(row["share_of_failures"]) if share is None else row["share_of_failures"] == pytest.approx(share))
    assert row["undetermined"] == undetermined


def test_failing_verdicts_behind_a_bar():
    rows = readmodel.failing_verdicts(VERDICTS, "m1", "knowledge_protocol")
    assert rows[["response_id", "cid", "reason", "judge"]].values.tolist() == [[1, "c3", "no citation", "heuristic"]]


def test_knowledge_gap_view(prepared):
    view = readmodel.knowledge_gap_view(prepared, MODELS).set_index(["model", "metric"])
    assert view.loc[("open-reason", "loose_knowledge_protocol"), "value"] == pytest.approx(0.75)
    assert view.loc[("closed-std", "rejection"), "value"] == 0.0
    assert view.loc[("baseline:always-refuse", "rejection"), "is_baseline"]


def _conflict_scores(values: dict[str, tuple[list[int], float, str]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows, models = [], []
    for name, (cr, cov, paradigm) in values.items():
        models.append({"model": name, "paradigm": paradigm, "access": "open", "is_baseline": False})
        for i, c in enumerate(cr):
            rows.append(_row(name, f"c{i}", "conflict", cr=c, cov=cov, strict=False))
    return readmodel.prepare_scores(pd.DataFrame(rows)), pd.DataFrame(models)


def test_conflict_view_ranks_and_spearman_per_paradigm():
    scores, models = _conflict_scores(
        {
            "r1": ([1, 1, 0, 0], 0.6, "reasoning"),
            "r2": ([1, 0, 0, 0], 0.5, "reasoning"),
            "r3": ([1, 1, 1, 0], 0.7, "reasoning"),
            "s1": ([1, 0, 0, 0], 0.6, "standard"),
        }
    )
    per_model, corr = readmodel.conflict_view(scores, models)
    assert per_model["model"].tolist()[:3] == ["r3", "r1", "r2"]
    assert per_model.set_index("model").loc["r3", "conflict_recognition"] == pytest.approx(0.75)
    corr = corr.set_index("paradigm")
    assert corr.loc["reasoning", "rho"] == pytest.approx(1.0)
    assert np.isnan(corr.loc["standard", "rho"])


def test_protocol_effect_uses_two_proportions():
    rows = []
    for i in range(40):
        rows.append(_row("m", f"g{i}", "gap", rej=i < 30, proto=True))
    for i in range(30):
        rows.append(_row("m", f"h{i}", "gap", rej=i < 9, proto=False))
    scores = readmodel.prepare_scores(pd.DataFrame(rows))
    out = readmodel.protocol_effect(scores, MODELS, "rejection").iloc[0]
    ref = stats.two_proportions(30, 40, 9, 30)
    assert (out["k_with"], out["n_with"], out["k_without"], out["n_without"]) == (30, 40, 9, 30)
    assert out["diff"] == pytest.approx(0.45)
    assert out["ci_low"] == pytest.approx(ref.ci_low) and out["p_value"] == pytest.approx(ref.p_value)
    assert out["test"] == ref.method == "chi2_yates"


def test_protocol_effect_reports_missing_group(prepared):
    out = readmodel.protocol_effect(prepared, MODELS, "rejection").set_index("model")
    assert out.loc["open-reason", "note"] == "no instances without protocol"
    assert np.isnan(out.loc["open-reason", "diff"])


def test_paired_comparison_mcnemar_and_bootstrap():
    rows = []
    a_wins = [1] * 12 + [0] * 2 + [1] * 6 + [0] * 10  # a: 18/30
    b_wins = [0] * 12 + [1] * 2 + [1] * 6 + [0] * 10  # b: 8/30
    for i, (a, b) in enumerate(zip(a_wins, b_wins, strict=True)):
        rows.append(_row("A", f"g{i}", "gap", rej=a))
        rows.append(_row("B", f"g{i}", "gap", rej=b))
    scores = readmodel.prepare_scores(pd.DataFrame(rows))
    out = readmodel.paired_comparison(scores, "A", "B", n_resamples=1000).set_index("mode")
    gap = out.loc["gap"]
    ref = stats.mcnemar(np.array(a_wins), np.array(b_wins))
    assert gap["n"] == 30 and gap["diff"] == pytest.approx(10 / 30)
    assert gap["p_value"] == pytest.approx(ref.p_value) and gap["test"].startswith("McNemar")
    assert gap["ci_low"] > 0 and gap["stars"] in ("*", "**", "***")
    assert out.loc["noisy", "n"] == 0


def test_natural_vs_augmented_tost_over_per_model_differences():
    rows = []
    for m, nat_v, aug_v in (("m1", 0.5, 0.45), ("m2", 0.6, 0.52), ("m3", 0.4, 0.41)):
        for i in range(4):
            rows.append(_row(m, f"n{i}", "conflict", origin="natural", cr=1 if i < 2 else 0, faith=nat_v))
            rows.append(_row(m, f"a{i}", "conflict", origin="augmented", cr=1 if i < 2 else 0, faith=aug_v))
    scores = readmodel.prepare_scores(pd.DataFrame(rows))
    out = readmodel.natural_vs_augmented(scores, margin=0.2, n_resamples=500).set_index("metric")
    faith = out.loc["faithfulness"]
    ref = stats.tost(np.array([0.05, 0.08, -0.01]), 0.2)
    assert faith["diff"] == pytest.approx(0.04)
    assert faith["tost_p"] == pytest.approx(ref.p_value) and faith["models"] == 3
    assert bool(faith["tost_equivalent"]) == ref.equivalent
    assert out.loc["conflict_recognition", "diff"] == 0.0


def test_evaluated_composition(prepared):
    comp = readmodel.evaluated_composition(prepared).set_index(["domain", "mode", "origin"])["instances"]
    assert comp.to_dict() == {("Energy", "conflict", "augmented"): 1, ("Energy", "gap", "natural"): 1, ("Energy", "noisy", "natural"): 1, ("Legal", "noisy", "natural"): 1}


def test_natural_vs_augmented_bootstrap_matches_stats_unpaired():
    rng = np.random.default_rng(5)
    rows = [_row("m", f"n{i}", "conflict", origin="natural", faith=float(v)) for i, v in enumerate(rng.uniform(0.5, 1, 80))]
    rows += [_row("m", f"a{i}", "conflict", origin="augmented", faith=float(v)) for i, v in enumerate(rng.uniform(0.4, 0.9, 120))]
    scores = readmodel.prepare_scores(pd.DataFrame(rows))
    out = readmodel.natural_vs_augmented(scores, metrics=["faithfulness"], n_resamples=4_000).iloc[0]
    nat, aug = scores[scores["origin"] == "natural"]["faithfulness"], scores[scores["origin"] == "augmented"]["faithfulness"]
    ref = stats.bootstrap_ci(stats.mean_diff, nat.to_numpy(), aug.to_numpy(), paired=False, n_resamples=4_000)
    assert out["boot_low"] == pytest.approx(ref.ci_low, abs=0.01) and out["boot_high"] == pytest.approx(ref.ci_high, abs=0.01)
    assert np.isnan(out["tost_p"])  # one model: no TOST over per-model differences


GROUP_CASES = [
    pytest.param(["b", "a", "b", "c", "a"], id="unsorted-keys"),
    pytest.param(["m", None, "m", None], id="missing-keys-dropped"),
    pytest.param(["only", "only"], id="one-group"),
    pytest.param([], id="empty"),
]


@pytest.mark.parametrize("keys", GROUP_CASES)
def test_group_positions_are_groupby_groups(keys):
    """The leaderboard's groups (readmodel.group_positions) are groupby(sort=True)'s, rows in their original order."""
    frame = pd.DataFrame({"model": pd.Series(keys, dtype="str"), "x": np.arange(len(keys), dtype=float)})
    expected = [(name, group["x"].to_numpy().astype(int).tolist()) for name, group in frame.groupby("model", sort=True)]
    got = [(name, positions.tolist()) for name, positions in readmodel.group_positions(frame["model"])]
    assert got == expected
