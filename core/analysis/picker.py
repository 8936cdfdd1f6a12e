"""Pick a generator: rank candidate models by weighted metrics under hard floors and a budget, hold the leader to the
best calibration baseline, test the top two (one paired test, paired_test), and write a one-page summary (Markdown or HTML)."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Literal

import numpy as np
import pandas as pd
import scipy.stats as sps

from core.analysis import decide_rules, ppi, readmodel, stats
from core.analysis.fitness import Notice
from core.analysis.ppi import MIN_LABELS
from core.analysis.readmodel import decision_scores as keys
from core.scoring.judges.names import judge_label

SMALL_N = stats.SMALL_N
ALPHA = 0.05
N_RESAMPLES = 2_000
# the Pick a generator page's and `gauntlet decide`'s starting point: the default preset (data/decision/presets.yaml)
DEFAULT_WEIGHTS = dict(decide_rules.preset(decide_rules.DEFAULT_PRESET).weights)
DEFAULT_FLOORS = decide_rules.preset(decide_rules.DEFAULT_PRESET).default_floors()


def label(key: str) -> str:
    """A decision metric's label with its protocol ('Strict IAS (EnterpriseRAG)')."""
    return keys.decision_key(key).label


@dataclass(frozen=True)
class PickSpec:
    """The product owner's choice: scope, metric weights, hard floors (fractions) and budget per 1k queries."""

    domains: tuple[str, ...] = ()
    modes: tuple[str, ...] = ()
    weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    floors: dict[str, float] = field(default_factory=dict)
    budget_per_1k: float | None = None


    def __post_init__(self) -> None:
        # weights and floors in declaration order, however they were given: the same choice writes the same report
        object.__setattr__(self, "weights", ordered(self.weights))
        object.__setattr__(self, "floors", ordered(self.floors))

    @property
    def metrics(self) -> tuple[str, ...]:
        """The metrics the choice weighs or floors, in the order the protocols declare them."""
        chosen = {k for k, w in self.weights.items() if w > 0} | set(self.floors)
        order = list(keys.decision_catalogue())
        return tuple(sorted(chosen, key=lambda k: order.index(k) if k in order else len(order)))


def ordered(values: dict[str, float]) -> dict[str, float]:
    """Weights or floors in the order the protocols declare their metrics (so the page and a rules file that choose
    the same values write the same report)."""
    order = {k: i for i, k in enumerate(keys.decision_catalogue())}
    return dict(sorted(values.items(), key=lambda item: (order.get(item[0], len(order)), item[0])))


def default_weights(scores: pd.DataFrame | None = None) -> dict[str, float]:
    """The default preset's weights, and weight 1 on the headline metrics of every other protocol the scores hold
    values for (read from the declarations: a new protocol's headline joins the default decision)."""
    weights = dict(DEFAULT_WEIGHTS)
    if scores is None:
        return weights
    for key, entry in keys.decision_catalogue().items():
        if (entry.metric.role == "headline" and key not in weights and key in scores.columns
                and scores[key].notna().any() and entry.protocol != keys.DEFAULT_PROTOCOL):
            weights[key] = 1.0
    return weights


def default_floors(weights: dict[str, float]) -> dict[str, float]:
    """The declared default floor of every weighted metric that declares one."""
    declared = {k: keys.decision_key(k).metric.floor for k, w in weights.items() if w > 0}
    return {k: v for k, v in declared.items() if v is not None}


def default_spec(scores: pd.DataFrame | None = None) -> PickSpec:
    """The Pick a generator page's defaults for these scores: default_weights and their declared floors (those the
    judge decided on some response, decidable_floors), every domain and subset, no budget."""
    weights = default_weights(scores)
    floors = default_floors(weights)
    if scores is not None:
        floors = decidable_floors(scores, floors)[0]
    return PickSpec(weights=weights, floors=floors)


def spec_from_rules(rules: decide_rules.DecideRules, scores: pd.DataFrame) -> tuple[PickSpec, list[str]]:
    """(the PickSpec a rules file asks for on these scores, the default floors left out because the judge decided
    their metric on no response). Without weights the preset's (the default preset: default_weights); without floors
    the preset's default floors, kept only where decidable; given floors are kept as written."""
    chosen = decide_rules.preset(rules.preset)
    if rules.weights is not None:
        weights = dict(rules.weights)
    elif rules.explicit_preset:
        weights = dict(chosen.weights)
    else:
        weights = default_weights(scores)
    dropped: list[str] = []
    if rules.floors is not None:
        floors = dict(rules.floors)
    else:
        wanted = chosen.default_floors() if rules.explicit_preset and chosen.floors is not None else default_floors(weights)
        floors, dropped = decidable_floors(scores, wanted)
    return PickSpec(rules.domains, rules.subsets, ordered(weights), ordered(floors), rules.budget_per_1k), dropped


SAFETY_METRICS: tuple[str, ...] = ("rejection", "conflict_recognition")
NEAR_ZERO = 0.10  # a safety metric at or below this is flagged in red: the pick barely ever refuses / recognises


def lower_is_better(metric: str) -> bool:
    """Whether the declaration of `metric` says lower is better (its floor is a ceiling: over-abstention)."""
    return not keys.decision_key(metric).metric.higher_is_better


BARELY_MARGIN = 0.05  # a floor cleared by less than this many points (as a fraction) is listed as barely cleared


@dataclass(frozen=True)
class FloorMargin:
    """A hard floor (or ceiling) the pick meets by less than BARELY_MARGIN."""

    metric: str
    value: float
    floor: float

    @property
    def margin(self) -> float:
        """How far inside the floor the value is (always >= 0 for a met floor)."""
        return self.floor - self.value if lower_is_better(self.metric) else self.value - self.floor


@dataclass(frozen=True)
class Weakness:
    """A metric on which the pick is significantly worse than another candidate or a baseline: test is pick − other."""

    metric: str
    test: PairedTest


@dataclass(frozen=True)
class SafetyFlag:
    """A safety metric (rejection, conflict recognition) on which the pick is at or near 0."""

    metric: str
    value: float
    n: int


@dataclass
class PickResult:
    """Ranked candidates then baselines, the top-two test, the leader against the best baseline, and the decision."""

    ranking: pd.DataFrame
    top_two: PairedTest | None
    spec: PickSpec
    n_responses: int
    note: str = ""
    leader: str | None = None  # the first eligible candidate
    best_baseline: str | None = None  # the baseline with the highest weighted score in scope
    floor: PairedTest | None = None  # leader against best_baseline
    recommended: str | None = None  # the leader, when it beats the best baseline (or none was scored)
    n_superseded: int = 0  # older responses in scope left out because a later run answered the same (model, instance)
    weaknesses: list[Weakness] = field(default_factory=list)  # metrics where another model is significantly better
    near_floors: list[FloorMargin] = field(default_factory=list)  # floors the pick clears by less than BARELY_MARGIN
    safety_flags: list[SafetyFlag] = field(default_factory=list)  # safety metrics where the pick is at or near 0
    metrics: tuple[str, ...] = ()  # the metrics reported: those weighed or floored, then the measured headline ones
    evidence: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=keys.EVIDENCE_COLUMNS))

    @property
    def pick(self) -> str | None:
        """The model the recommendation is about: the recommended one, else the leader (weaknesses are shown for it)."""
        return self.recommended or self.leader


def _utility(metric: str, value: float) -> float:
    """Metric value on [0, 1] as 'higher is better': mapped from its declared range, inverted where lower is better
    (over-abstention, misleading rate); a share keeps its value."""
    return float(utilities([metric], np.array([[value]], dtype=float))[0, 0])


def utilities(metrics: Sequence[str], values: np.ndarray) -> np.ndarray:
    """Columns of metric values (in `metrics` order) as _utility's 'higher is better' values on [0, 1]."""
    declared = [keys.decision_key(m) for m in metrics]
    low = np.array([d.declaration.range[0] for d in declared], dtype=float)
    span = np.array([d.declaration.range[1] - d.declaration.range[0] for d in declared], dtype=float)
    inverted = np.array([not d.metric.higher_is_better for d in declared])
    scaled = (np.asarray(values, dtype=float) - low) / span
    return np.where(inverted, 1.0 - scaled, scaled)


def weighted_score(means: dict[str, float], weights: dict[str, float]) -> float:
    """Weighted mean of the available metrics (missing ones drop out of the denominator); NaN if none."""
    keys = [m for m, w in weights.items() if w > 0]
    values = np.array([[np.nan if means.get(m) is None else _utility(m, means[m]) for m in keys]], dtype=float)
    return float(_weighted_rows(values, np.array([weights[m] for m in keys], dtype=float))[0])


RANKING_COLUMNS = ["model", "baseline", "score", "eligible", "fails", "strengths", "cost_per_1k", "judge_cost_per_1k",
                   "total_cost_per_1k", "latency_ms_mean", "responses"]


def reported_metrics(scores: pd.DataFrame, spec: PickSpec) -> tuple[str, ...]:
    """The metrics a pick reports: those the spec weighs or floors, then every headline metric (of any registered
    protocol) the scores hold a value of, in the order the protocols declare them."""
    headline = [k for k, e in keys.decision_catalogue().items()
                if e.metric.role == "headline" and k in scores.columns and scores[k].notna().any()]
    return tuple(dict.fromkeys([*spec.metrics, *headline]))


def _floor_fails(means: dict[str, float], cost_1k: float, spec: PickSpec) -> list[str]:
    """Why a model misses the hard floors or the budget (empty when it meets them all)."""
    fails = []
    for metric, floor in spec.floors.items():
        v = means.get(metric, np.nan)
        name = label(metric)
        if np.isnan(v):
            fails.append(f"{name}: not measured in this scope (floor {floor:.0%})")
        elif lower_is_better(metric) and v > floor:
            fails.append(f"{name} {v:.1%} above the ceiling {floor:.0%}")
        elif not lower_is_better(metric) and v < floor:
            fails.append(f"{name} {v:.1%} below the floor {floor:.0%}")
    if spec.budget_per_1k is not None and cost_1k > spec.budget_per_1k:
        fails.append(f"cost ${cost_1k:.2f} per 1k queries over the budget ${spec.budget_per_1k:.2f}")
    return fails


def _spend_columns(scoped: pd.DataFrame) -> dict[str, np.ndarray]:
    """The scoped rows' generation cost and judge cost (missing as 0) and latency (missing as NaN) as arrays; a
    column the frame lacks is left out."""
    out = {c: np.nan_to_num(scoped[c].to_numpy(dtype=float), nan=0.0) for c in ("cost_usd", "judge_cost_usd")
           if c in scoped.columns}
    if "latency_ms" in scoped.columns:
        out["latency_ms"] = scoped["latency_ms"].to_numpy(dtype=float)
    return out


def _mean(values: np.ndarray) -> float:
    """The mean as pandas' Series.mean takes it (one sum over the values, then divided by their count); NaN if none."""
    return float(values.sum() / len(values)) if len(values) else np.nan


def _model_row(model: str, baseline: bool, group: dict[str, np.ndarray], spec: PickSpec, metrics: list[str],
               values: list[float], ns: list) -> dict:
    """One ranking row: metric means (the read model's: the model's rows of readmodel key_summary, their keys,
    values and n), weighted score, cost (group: the model's rows of _spend_columns), floors met; baselines are never
    eligible."""
    means = dict(zip(metrics, values, strict=True))
    cost_1k = float(_mean(group["cost_usd"]) * 1000)
    judge_1k = float(_mean(group["judge_cost_usd"]) * 1000) if "judge_cost_usd" in group else 0.0
    latency = group["latency_ms"][~np.isnan(group["latency_ms"])] if "latency_ms" in group else np.empty(0)
    fails = _floor_fails(means, cost_1k, spec)
    weighted = [(m, w) for m, w in spec.weights.items() if w > 0]
    # _utility of each weighted metric from one elementwise call (the same values one call per metric gives)
    useful = utilities([m for m, _ in weighted], np.array([[np.nan if means.get(m) is None else means[m]
                                                            for m, _ in weighted]], dtype=float))[0].tolist()
    contributions = sorted(((w * u, m) for (m, w), u in zip(weighted, useful, strict=True)
                            if not np.isnan(means.get(m, np.nan))), reverse=True)
    strengths = ", ".join(f"{label(m)} {means[m]:.1%}" for _, m in contributions[:2])
    score = float(_weighted_rows(np.array([useful], dtype=float), np.array([w for _, w in weighted], dtype=float))[0])
    return {"model": model, "baseline": baseline, "score": score, "eligible": not fails and not baseline,
            "fails": fails, "strengths": strengths, "cost_per_1k": cost_1k, "judge_cost_per_1k": judge_1k,
            "total_cost_per_1k": cost_1k + judge_1k, "latency_ms_mean": _mean(latency),
            "responses": len(group["cost_usd"]), **means, **{f"n_{m}": int(n) for m, n in zip(metrics, ns, strict=True)}}


def _baselines(names: list[str], models: pd.DataFrame) -> dict[str, list]:
    """The models (`names`, in order) and whether each is a calibration baseline, as readmodel.with_model_info joins
    it: a model's first catalogue row; unknown or missing counts as no baseline."""
    first: dict = {}
    for model, baseline in zip(models["model"].tolist(), models["is_baseline"].tolist(), strict=True):
        first.setdefault(model, baseline)
    flags = [first.get(m) for m in names]
    return {"model": names, "is_baseline": [False if pd.isna(b) else bool(b) for b in flags]}


Memo = Callable[[str, tuple, Callable[[], Any]], Any]


def no_memo(kind: str, key: tuple, compute: Callable[[], Any]) -> Any:
    """A Memo that keeps nothing: computes every time."""
    return compute()


def rank(scores: pd.DataFrame, models: pd.DataFrame, spec: PickSpec, n_resamples: int = N_RESAMPLES, seed: int = 0,
         judge: str = "", *, memo: Memo = no_memo) -> PickResult:
    """Rank candidates on prepared scores (eligible first, by weighted score), then list the baselines as the floor.

    When runs overlap only the latest response per (model, instance) counts (readmodel.latest_per_model_instance).
    The first eligible candidate is recommended only if it beats the best baseline (paired_test on shared instances).
    `memo(kind, key, compute)` may keep the parts that depend on the scores and `key` alone (the evidence, the paired
    tests, the weaknesses): a caller caching them per scores version makes a floor or budget change re-rank only.
    """
    scoped = readmodel.filter_scores(readmodel.latest_per_model_instance(scores), spec.modes, spec.domains)
    in_scope = len(readmodel.filter_scores(scores, spec.modes, spec.domains)) if spec.modes or spec.domains else len(scores)
    n_superseded = in_scope - len(scoped)
    info = _baselines(sorted(scoped["model"].unique()), models)
    metrics = reported_metrics(scoped, spec)
    scope = (tuple(spec.modes), tuple(spec.domains), tuple(metrics), judge)
    evidence = memo("evidence", scope, lambda: keys.key_summary(scoped, metrics, judge))
    spend = _spend_columns(scoped)
    at = scoped.groupby("model", sort=False).indices  # each model's rows, in order, from one split
    evidence_of = evidence.groupby("model", sort=False).indices
    ev_keys, ev_values, ev_n = (evidence["key"].tolist(), evidence["value"].astype(float).tolist(),
                                evidence["n"].tolist())

    def taken(values: list, model: str) -> list:
        return [values[i] for i in evidence_of.get(model, ())]

    rows = [_model_row(m, bool(b), {c: v[at[m]] for c, v in spend.items()}, spec, taken(ev_keys, m),
                       taken(ev_values, m), taken(ev_n, m))
            for m, b in zip(info["model"], info["is_baseline"], strict=True)]
    columns = [*RANKING_COLUMNS, *metrics, *(f"n_{m}" for m in metrics)]
    ranking = pd.DataFrame(rows, columns=columns).sort_values(
        ["baseline", "eligible", "score", "model"], ascending=[True, False, False, True], na_position="last")
    records = [rows[i] for i in ranking.index]  # the rows in the ranking's order (what _reason reads of them)
    ranking = ranking.reset_index(drop=True)
    candidates = ranking.loc[~ranking["baseline"], "model"].tolist()
    ranking.insert(0, "rank", pd.array([*range(1, len(candidates) + 1), *[pd.NA] * (len(ranking) - len(candidates))], dtype="Int64"))
    measured = ranking[ranking["baseline"] & ranking["score"].notna()]
    best_baseline = measured["model"].iloc[0] if len(measured) else None
    ranking["reason"] = [_reason(r, measured.iloc[0] if len(measured) else None) for r in records]
    leader = candidates[0] if candidates and ranking["eligible"].iloc[0] else None
    # the pick is the leader (recommended or not): its weaknesses test it against every other model, and the top-two
    # and baseline-floor tests of the pick weighing the reported metrics are those pairs' same bootstraps, so a test
    # takes its pair's draw when the weaknesses drew them (else it draws its pair alone, as before)
    others = sorted(m for m in ranking["model"] if m != leader)  # a set: weaknesses sort what they find
    names = [m for m, w in spec.weights.items() if w > 0]
    drawn: dict[str, _Draw] = {}
    found: list[Weakness] = []
    if leader:
        def weak() -> list[Weakness]:
            drawn.update(_scoped_draws(scoped, leader, others, list(metrics), n_resamples, seed))
            return _weaknesses_of(leader, others, list(metrics), drawn, n_resamples)

        found = memo("weaknesses", (*scope, leader, tuple(others), n_resamples, seed), weak)

    def compared(a: str, b: str) -> PairedTest:
        def test() -> PairedTest:
            if a == leader and b in drawn and names == list(metrics):  # the same columns: the same bootstrap
                return _draw_test(a, b, drawn[b], spec.weights, names, n_resamples)
            return compare(scoped, a, b, spec.weights, n_resamples, seed)

        return memo("compare", (*scope, a, b, tuple(spec.weights.items()), n_resamples, seed), test)

    top_two = compared(candidates[0], candidates[1]) if len(candidates) >= 2 else None
    floor = compared(leader, best_baseline) if leader and best_baseline else None
    recommended = leader if leader and (floor is None or floor.significant) else None
    note = "Only calibration baselines have been scored in this scope: there is no candidate to recommend." if rows and not candidates else ""
    result = PickResult(ranking, top_two, spec, len(scoped), note, leader, best_baseline, floor, recommended, n_superseded,
                        metrics=metrics, evidence=evidence)
    if result.pick:
        row = _row_of(ranking, result.pick)
        result.weaknesses = found  # of the leader: the pick
        result.near_floors = near_floors(row, spec)
        result.safety_flags = safety_flags(row)
    return result


def metric_tests(scoped: pd.DataFrame, a: str, b: str, metrics: Sequence[str],
                 n_resamples: int = N_RESAMPLES, seed: int = 0) -> list[PairedTest]:
    """paired_test of a against b on each metric alone (weight 1, over-abstention as 1 − value), from one bootstrap
    of the shared instances for all metrics (the same resampled rows as paired_test with that seed)."""
    names = list(metrics)
    return _metric_tests(_metric_rows(scoped, a, names), _metric_rows(scoped, b, names), a, b, names, n_resamples,
                         seed)


def _shared_values(pa: pd.DataFrame, pb: pd.DataFrame, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Both models' values of `names` on the instances both answered (frames by instance), in instance order."""
    shared = pa.index.intersection(pb.index).sort_values()
    if pa.index.is_unique and pb.index.is_unique:  # positions instead of label lookups: the same rows
        return tuple(_values(p, names)[p.index.get_indexer(shared)] for p in (pa, pb))
    return _values(pa.loc[shared], names), _values(pb.loc[shared], names)


def _metric_tests(pa: pd.DataFrame, pb: pd.DataFrame, a: str, b: str, names: list[str], n_resamples: int,
                  seed: int) -> list[PairedTest]:
    """metric_tests on two models' rows by instance (_metric_rows)."""
    return _pick_tests(pa, {b: pb}, a, names, n_resamples, seed)[b]


def weaknesses(scoped: pd.DataFrame, pick: str, others: Sequence[str], n_resamples: int = N_RESAMPLES,
               seed: int = 0, metrics: Sequence[str] = ()) -> list[Weakness]:
    """Every (metric, other model or baseline) where the pick is significantly worse (the paired 95% CI of pick −
    other on that metric alone lies below 0; over-abstention as 1 − value, so higher is better), in metric order."""
    metrics = list(metrics) or list(reported_metrics(scoped, PickSpec()))
    return _weaknesses_of(pick, others, metrics, _scoped_draws(scoped, pick, others, metrics, n_resamples, seed),
                          n_resamples)


def _weaknesses_of(pick: str, others: Sequence[str], metrics: list[str], draws: dict[str, _Draw],
                   n_resamples: int) -> list[Weakness]:
    """weaknesses from the pick's draws against each other model (_scoped_draws)."""
    wanted = set(others)
    tests = _draw_tests(pick, {o: d for o, d in draws.items() if o in wanted}, len(metrics), n_resamples)
    found = [Weakness(metric, test) for other in others
             for metric, test in zip(metrics, tests[other], strict=True) if test.outcome == "b_better"]
    return sorted(found, key=lambda w: (metrics.index(w.metric), w.test.b))


def _scoped_draws(scoped: pd.DataFrame, pick: str, others: Sequence[str], names: list[str], n_resamples: int,
                  seed: int) -> dict[str, _Draw]:
    """_pick_draws of the pick against each other model of the scoped scores, from arrays split once: the values of
    `names` as utilities and the instance ids ranked (factorized) over every row, each model's rows in frame order (the
    rows, in the order, _rows_by_model takes them); by frames (_rows_by_model) when a model repeats an instance."""
    models = [pick, *others]
    at = scoped.groupby("model", sort=False).indices
    empty = np.empty(0, dtype=np.intp)
    rows = [at.get(m, empty) for m in models]
    codes, uids = pd.factorize(scoped["instance_uid"], sort=True)  # on the column as stored: no Python strings made
    mine = [codes[r] for r in rows]
    if all(len(c) and (c >= 0).all() for c in mine) and all(  # no model repeats an instance
            np.bincount(c, minlength=len(uids)).max() <= 1 for c in mine):
        u = utilities(names, scoped.reindex(columns=names).to_numpy(float))  # elementwise: rows taken after = before
        return _match_draws(mine, [u[r] for r in rows], list(others), len(names), n_resamples, seed)
    split = _rows_by_model(scoped, names)  # each model's rows taken once
    frames = {m: split[m] if m in split else _metric_rows(scoped, m, names) for m in models}
    return _pick_draws(frames[pick], {o: frames[o] for o in others}, names, n_resamples, seed)


def _pick_tests(pa: pd.DataFrame, others: dict[str, pd.DataFrame], a: str, names: list[str], n_resamples: int,
                seed: int) -> dict[str, list[PairedTest]]:
    """_metric_tests of the pick against each other model: the bootstrap totals and drawn-cell counts of every pair
    with the same shared instances from one product each (_pair_draws: the totals equal the per-pair product's to
    ~1e-16 relative, the counts exact integers); the intervals of all pairs with the same number of shared instances
    from one quantile call (tests/test_picker_stacked.py)."""
    return _draw_tests(a, _pick_draws(pa, others, names, n_resamples, seed), len(names), n_resamples)


# a pair's draw: (n shared instances, means of the pick's then the other's k columns (2k), their bootstrap replicates
# (R x 2k; no row below 2 shared instances))
_Draw = tuple[int, np.ndarray, np.ndarray]


def _pick_draws(pa: pd.DataFrame, others: dict[str, pd.DataFrame], names: list[str], n_resamples: int,
                seed: int) -> dict[str, _Draw]:
    """The pick's draw against each other model (frames by instance), pairs with the same shared instances together."""
    draws: dict[str, _Draw] = {}
    for pairs in _shared_utilities(pa, others, names).values():
        draws.update(_pair_draws(pairs, len(names), n_resamples, seed))
    return draws


def _draw_tests(a: str, draws: dict[str, _Draw], k: int, n_resamples: int) -> dict[str, list[PairedTest]]:
    """Each pair's test per metric (pick − other) from its draw; the intervals of all pairs with the same number of
    shared instances from one quantile call."""
    drawn: dict[int, list[tuple[str, np.ndarray, np.ndarray]]] = {}  # n shared -> (other, differences, replicates)
    for b, (n, means, reps) in draws.items():
        drawn.setdefault(n, []).append((b, means[:k] - means[k:], reps[:, :k] - reps[:, k:]))
    tests: dict[str, list[PairedTest]] = {}
    for n, found in drawn.items():
        diffs = np.concatenate([diff for _, diff, _ in found])
        bounds = _replicate_bounds(n, diffs, np.concatenate([d for _, _, d in found], axis=1))
        tests.update({b: [PairedTest(a, b, n, float(diffs[i * k + j]), *bounds[i * k + j], n_resamples)
                          for j in range(k)] for i, (b, _, _) in enumerate(found)})
    return tests


def _shared_utilities(pa: pd.DataFrame, others: dict[str, pd.DataFrame],
                      names: list[str]) -> dict[bytes, list[tuple[str, np.ndarray, np.ndarray]]]:
    """The pairs of the pick (pa) with each other model grouped by their shared instances: (other, utilities of the
    pick, of the other) on the instances both answered, in instance order (as _shared_values takes them). Instance ids
    are ranked once over every frame, so each pair is matched on integers (the same rows)."""
    codes = _instance_codes([pa, *others.values()])
    if codes is None:  # an instance repeated within a model: matched by label (_shared_values)
        shared: dict[bytes, list[tuple[str, np.ndarray, np.ndarray]]] = {}
        for other, pb in others.items():
            ua, ub = (utilities(names, v) for v in _shared_values(pa, pb, names))
            shared.setdefault(other.encode(), []).append((other, ua, ub))
        return shared
    # elementwise: the rows taken after are the rows taken before
    return _match_shared(codes, [utilities(names, _values(f, names)) for f in (pa, *others.values())], list(others))


def _match_shared(codes: list[np.ndarray], utils: list[np.ndarray],
                  others: list[str]) -> dict[bytes, list[tuple[str, np.ndarray, np.ndarray]]]:
    """_shared_utilities from each model's instance codes (unique within a model; the pick's first) and utilities."""
    shared: dict[bytes, list[tuple[str, np.ndarray, np.ndarray]]] = {}  # the same shared instances -> the pairs
    ua = utils[0]
    order = np.argsort(codes[0], kind="stable")  # the pick's rows in instance order
    where = np.full(int(max((c.max() for c in codes if len(c)), default=-1)) + 1, -1)  # code -> row of the other
    ordered_codes = codes[0][order]
    for other, code, ub in zip(others, codes[1:], utils[1:], strict=True):
        where[code] = np.arange(len(code))
        at_b = where[ordered_codes]
        at_a = order[at_b >= 0]
        shared.setdefault(codes[0][at_a].tobytes(), []).append((other, ua[at_a], ub[at_b[at_b >= 0]]))
        where[code] = -1
    return shared


def _match_draws(codes: list[np.ndarray], utils: list[np.ndarray], others: list[str], k: int, n_resamples: int,
                 seed: int) -> dict[str, _Draw]:
    """_pick_draws from each model's instance codes and utilities (_match_shared)."""
    draws: dict[str, _Draw] = {}
    for pairs in _match_shared(codes, utils, others).values():
        draws.update(_pair_draws(pairs, k, n_resamples, seed))
    return draws


def _instance_codes(frames: list[pd.DataFrame]) -> list[np.ndarray] | None:
    """Each frame's instance ids (its index) as integers ranked in instance order (the order sort_values gives them),
    from one factorize over all frames; None when a frame repeats an instance or one has none."""
    if not all(f.index.is_unique for f in frames):
        return None
    codes, _ = pd.factorize(np.concatenate([f.index.to_numpy(dtype=object) for f in frames]), sort=True)
    if (codes < 0).any():
        return None
    return np.split(codes, np.cumsum([len(f) for f in frames])[:-1])


def _pair_draws(pairs: list[tuple[str, np.ndarray, np.ndarray]], k: int, n_resamples: int,
                seed: int) -> dict[str, _Draw]:
    """Each pair's draw (n, means of both, their bootstrap replicates) of pairs on the same shared instances
    (utilities ua of the pick, the same in every pair, ub of the other): the totals of all from ONE product of the
    resample weights with the pick's columns then every other's (the weights read and the pick's columns multiplied
    once, not once per pair), the drawn-cell counts of all from one (exact integers). A product's column is summed in
    the same order whatever columns sit beside it on the BLAS kernels measured (so paired_test's per-pair product gives
    the same bytes there); on any kernel the totals agree to ~1e-16 relative (tests/test_picker_shared_draws.py)."""
    n = pairs[0][1].shape[0]
    if n < 2:
        return {b: (n, np.full(2 * k, np.nan), np.empty((0, 2 * k))) for b, _, _ in pairs}
    stacked = np.column_stack([pairs[0][1], *(ub for _, _, ub in pairs)])
    present = ~np.isnan(stacked)
    reps = readmodel.bootstrap_means(stacked, n_resamples, seed, counts=_distinct_counts(present, n_resamples, seed))
    cells = present.sum(axis=0)
    means = np.where(cells > 0, np.nansum(stacked, axis=0) / np.maximum(cells, 1), np.nan)
    found: dict[str, _Draw] = {}
    for i, (b, _, _) in enumerate(pairs):
        columns = np.r_[0:k, k * (i + 1) : k * (i + 2)]
        found[b] = (n, means[columns], reps[:, columns])
    return found


def _distinct_counts(present: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """readmodel.bootstrap_counts of `present`, each distinct column with a gap counted once (models usually miss the
    same instances of a metric): the counts are exact integers, the same whatever product a column is counted in."""
    gaps = ~present.all(axis=0)
    if not gaps.any():
        return readmodel.bootstrap_counts(present, n_resamples, seed)
    columns = np.flatnonzero(gaps)
    first: dict[bytes, int] = {}  # a column's cells -> its place among the distinct ones
    inverse = [first.setdefault(present[:, j].tobytes(), len(first)) for j in columns]
    distinct = present[:, columns[[inverse.index(i) for i in range(len(first))]]]
    counts = np.full((n_resamples, present.shape[1]), float(present.shape[0]))
    counts[:, gaps] = readmodel.bootstrap_counts(distinct, n_resamples, seed)[:, inverse]
    return counts


def _draw_test(a: str, b: str, draw: _Draw, weights: dict[str, float], keys: Sequence[str],
               n_resamples: int) -> PairedTest:
    """paired_test of a against b from their draw on the columns `keys` (the means and replicates paired_test computes
    from the same shared rows: the same resamples, the totals to ~1e-16 relative (_pair_draws), the counts exact)."""
    n, means, reps = draw
    if n < 2:
        return PairedTest(a, b, n, np.nan, np.nan, np.nan, n_resamples)
    k = len(keys)
    w = np.array([weights[m] for m in keys], dtype=float)
    diff = float(_weighted_rows(means[None, :k], w)[0] - _weighted_rows(means[None, k:], w)[0])
    return _from_replicates(a, b, n, diff, _weighted_rows(reps[:, :k], w) - _weighted_rows(reps[:, k:], w), n_resamples)


def _replicate_bounds(n: int, diffs: np.ndarray, d: np.ndarray) -> list[tuple[float, float]]:
    """_from_replicates' interval of each column of replicates d (with its difference), the columns without a NaN
    replicate in one quantile call (the same order statistics and interpolation as one call per column)."""
    full = ~np.isnan(d).any(axis=0) & ~np.isnan(diffs) & (len(d) > 0)
    low, high = np.full(len(diffs), np.nan), np.full(len(diffs), np.nan)
    if full.any():
        q = _expanded_quantile(n)
        low[full], high[full] = np.quantile(d[:, full], [q, 1 - q], axis=0)
    for j in np.flatnonzero(~full):
        t = _from_replicates("", "", n, float(diffs[j]), d[:, j], 0)
        low[j], high[j] = t.ci_low, t.ci_high
    return [(float(lo), float(hi)) for lo, hi in zip(low, high, strict=True)]


def near_floors(row: pd.Series, spec: PickSpec) -> list[FloorMargin]:
    """Floors (and the over-abstention ceiling) the row meets by less than BARELY_MARGIN."""
    out = []
    for metric, floor in spec.floors.items():
        value = float(row[metric])
        margin = FloorMargin(metric, value, floor)
        if not np.isnan(value) and 0 <= margin.margin < BARELY_MARGIN:
            out.append(margin)
    return out


def safety_flags(row: pd.Series) -> list[SafetyFlag]:
    """Safety metrics the row has values for and scores at or below NEAR_ZERO on."""
    return [SafetyFlag(m, float(row[m]), int(row[f"n_{m}"])) for m in SAFETY_METRICS
            if f"n_{m}" in row and int(row[f"n_{m}"]) > 0 and float(row[m]) <= NEAR_ZERO]


def candidates_in_order(result: PickResult) -> list[str]:
    """The candidates (no baselines) in the ranking's order: the pick, when there is one, then the runner-up."""
    return result.ranking.loc[~result.ranking["baseline"].astype(bool), "model"].tolist()


def _reason(row: dict, best_baseline: pd.Series | None) -> str:
    if row["baseline"]:
        return "Calibration baseline, not a candidate: the best baseline's weighted score is the floor a recommendation must beat."
    if not row["eligible"]:
        return "Fails: " + "; ".join(row["fails"])
    reason = f"Meets every floor and the budget; weighted score {_pct(row['score'])}; strongest: {row['strengths'] or 'n/a'}."
    if best_baseline is not None and not row["score"] > best_baseline["score"]:
        reason += f" Not above the best baseline ({best_baseline['model']} {_pct(best_baseline['score'])})."
    return reason


Outcome = Literal["a_better", "b_better", "tied", "untestable"]


@dataclass(frozen=True)
class PairedTest:
    """Weighted score of model a minus model b on the instances both answered, with its two-sided 95% CI."""

    a: str
    b: str
    shared: int
    diff: float
    ci_low: float
    ci_high: float
    n_resamples: int = N_RESAMPLES

    @property
    def outcome(self) -> Outcome:
        """a_better when the CI lies above 0, b_better when below, tied when it holds 0 (untestable without a CI)."""
        if self.shared < 2 or np.isnan(self.ci_low) or np.isnan(self.ci_high):
            return "untestable"
        return "a_better" if self.ci_low > 0 else "b_better" if self.ci_high < 0 else "tied"

    @property
    def significant(self) -> bool:
        """True only when a is significantly better than b."""
        return self.outcome == "a_better"


def _weighted_rows(means: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """weighted_score of each row of metric means (utilities); missing metrics drop out of the denominator."""
    present = ~np.isnan(means)
    den = present.astype(float) @ weights
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, np.where(present, means, 0.0) @ weights / den, np.nan)


@lru_cache(maxsize=256)
def _expanded_quantile(n: int, alpha: float = ALPHA) -> float:
    """Lower percentile of the expanded percentile bootstrap interval (Hesterberg 2015): Φ(√(n/(n−1))·t_{n−1, α/2}).

    The plain percentile interval is too narrow in small samples (6.3% false positives at 36 instances instead of 5%,
    tests/test_picker.py); widening it to the t quantile with the n/(n−1) variance correction restores the level.
    """
    return float(sps.norm.cdf(np.sqrt(n / (n - 1)) * sps.t.ppf(alpha / 2, n - 1)))


def paired_test(a: str, b: str, xa: np.ndarray, xb: np.ndarray, keys: Sequence[str], weights: dict[str, float],
                n_resamples: int = N_RESAMPLES, seed: int = 0) -> PairedTest:
    """The picker's one pre-declared test: paired bootstrap of weighted_score(a) − weighted_score(b) over shared instances.

    xa and xb hold the metric values (columns `keys`, NaN = missing) of the same instances in the same row order.
    Instances are resampled with replacement; per resample each metric's mean ignores missing values (per model and
    metric). Two-sided 95% expanded percentile interval; see PairedTest.outcome for the call.
    """
    ua, ub = (utilities(keys, np.asarray(x, float).reshape(-1, len(keys))) for x in (xa, xb))
    w = np.array([weights[k] for k in keys], dtype=float)
    n, k = ua.shape
    if n < 2:
        return PairedTest(a, b, n, np.nan, np.nan, np.nan, n_resamples)
    both = np.column_stack([ua, ub])
    counts = (~np.isnan(both)).sum(axis=0)
    means = np.where(counts > 0, np.nansum(both, axis=0) / np.maximum(counts, 1), np.nan)
    diff = float(_weighted_rows(means[None, :k], w)[0] - _weighted_rows(means[None, k:], w)[0])
    reps = readmodel.bootstrap_means(both, n_resamples, seed)
    return _from_replicates(a, b, n, diff, _weighted_rows(reps[:, :k], w) - _weighted_rows(reps[:, k:], w), n_resamples)


def _from_replicates(a: str, b: str, n: int, diff: float, d: np.ndarray, n_resamples: int) -> PairedTest:
    """The PairedTest of a difference and its bootstrap replicates (NaN replicates dropped): expanded percentile CI."""
    d = d[~np.isnan(d)]
    if np.isnan(diff) or not d.size:
        return PairedTest(a, b, n, diff, np.nan, np.nan, n_resamples)
    q = _expanded_quantile(n)
    low, high = np.quantile(d, [q, 1 - q])
    return PairedTest(a, b, n, diff, float(low), float(high), n_resamples)


def compare(scoped: pd.DataFrame, a: str, b: str, weights: dict[str, float], n_resamples: int = N_RESAMPLES, seed: int = 0) -> PairedTest:
    """paired_test of two models on the instances both answered in the scoped scores (metrics with weight > 0)."""
    names = [m for m, w in weights.items() if w > 0]
    va, vb = _shared_values(_metric_rows(scoped, a, names), _metric_rows(scoped, b, names), names)
    return paired_test(a, b, va, vb, names, weights, n_resamples, seed)


def _metric_rows(scoped: pd.DataFrame, model: str, metrics: Sequence[str]) -> pd.DataFrame:
    """One model's rows of `metrics` (those the frame has) by instance: only the columns a test reads are taken."""
    kept = ["instance_uid", *dict.fromkeys(m for m in metrics if m in scoped.columns)]
    return _by_instance(scoped.loc[scoped["model"] == model, kept])


def _by_instance(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows indexed by instance_uid as plain strings (the same order as Arrow's: code points; matching and sorting
    them is much faster than on an Arrow-backed index)."""
    return rows.set_index(pd.Index(rows["instance_uid"].to_numpy(dtype=object), dtype=object, name="instance_uid")).drop(
        columns="instance_uid")


def _rows_by_model(scoped: pd.DataFrame, metrics: Sequence[str]) -> dict[str, pd.DataFrame]:
    """_metric_rows of every model with rows, from one split of the frame (the instance ids made plain strings once)."""
    kept = list(dict.fromkeys(m for m in metrics if m in scoped.columns))
    uids = scoped["instance_uid"].to_numpy(dtype=object)
    values = scoped[kept]
    return {m: values.iloc[at].set_axis(pd.Index(uids[at], dtype=object, name="instance_uid"))
            for m, at in scoped.groupby("model", sort=False).indices.items()}


def _values(frame: pd.DataFrame, metrics: Sequence[str]) -> np.ndarray:
    """The frame's values of `metrics` as floats (NaN for a metric the frame has no column of)."""
    return frame.reindex(columns=list(metrics)).to_numpy(float)


def _points(v: float) -> str:
    return "n/a" if np.isnan(v) else f"{v * 100:+.1f} points"


def _test_figures(t: PairedTest) -> str:
    ci = "n/a" if np.isnan(t.ci_low) else f"[{t.ci_low * 100:+.1f}, {t.ci_high * 100:+.1f}]"
    small = f"; † fewer than {SMALL_N} shared instances (small sample)" if t.shared < SMALL_N else ""
    return f"weighted-score difference {t.a} − {t.b} {_points(t.diff)}, 95% CI {ci}{small}"


def top_two_verdict(result: PickResult) -> str:
    """What the top-two test says, in words, with its figures."""
    t = result.top_two
    if t is None:
        return ""
    a, b = _row_of(result.ranking, t.a), _row_of(result.ranking, t.b)
    why_b_second = f"{t.b} fails: {'; '.join(b['fails'])}" if a["eligible"] and not b["eligible"] else "the ranking by full-scope means disagrees"
    cost = f"{t.a} ${a['cost_per_1k']:.2f} vs {t.b} ${b['cost_per_1k']:.2f} per 1k queries"
    text = {
        "a_better": f"{t.a} is significantly better than {t.b}",
        "b_better": f"{t.b} is better than {t.a} on the shared instances ({why_b_second})",
        "tied": f"{t.a} and {t.b} are not significantly different: treat them as tied and decide on cost ({cost})",
        "untestable": f"{t.a} and {t.b} cannot be compared: they share {t.shared} instances",
    }[t.outcome]
    return f"{text} — {_test_figures(t)}"


def _pct(v: float) -> str:
    return "—" if v is None or (isinstance(v, float) and np.isnan(v)) else f"{v:.1%}"


def metric_cell(value: float, n: int) -> str:
    """A metric value with its n (responses with a value), '†' when 0 < n < SMALL_N; 'no data n=0' without values."""
    if n == 0:
        return "no data n=0"
    return f"{_pct(value)} n={n}{'†' if n < SMALL_N else ''}"


def ranking_table(result: PickResult, metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """The ranking for display: rank ('baseline' for baselines), weighted score and one 'value n=…' cell per metric."""
    r = result.ranking
    out = pd.DataFrame({
        "rank": ["baseline" if b else str(k) for k, b in zip(r["rank"], r["baseline"], strict=True)],
        "model": r["model"], "baseline": r["baseline"], "score": r["score"].map(_pct), "eligible": r["eligible"],
        "cost_per_1k": r["cost_per_1k"], "judge_cost_per_1k": r["judge_cost_per_1k"],
        "total_cost_per_1k": r["total_cost_per_1k"], "responses": r["responses"],
    })
    for m in result.metrics if metrics is None else metrics:
        out[m] = [metric_cell(v, n) for v, n in zip(r[m], r[f"n_{m}"], strict=True)]
    out["reason"] = r["reason"]
    return out


RANKING_PARTS = {
    "Ranking and cost per 1k queries": ("rank", "model", "baseline", "score", "eligible", "cost_per_1k",
                                        "judge_cost_per_1k", "total_cost_per_1k", "responses"),
    "Metrics (value n=…)": ("rank", "model"),  # and every metric column
    "Why each model is or is not eligible": ("rank", "model", "reason"),
}


def ranking_parts(table: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """ranking_table split into narrower tables (rank and model in each), so each fits a 1440 px screen; the metrics
    part holds every metric column."""
    fixed = {c for part in RANKING_PARTS.values() for c in part}
    metrics = [c for c in table.columns if c not in fixed]
    parts = {title: [*columns, *(metrics if title.startswith("Metrics") else [])] for title, columns in RANKING_PARTS.items()}
    return {title: table[[c for c in columns if c in table.columns]] for title, columns in parts.items()}


def metrics_note(judge: str) -> str:
    """Who made the metric values and what n and † mean (page caption and summaries)."""
    return (f"Metric values by the judge {judge_label(judge)} (rule-checked constraints by the rule checkers); "
            f"n = responses with a value; † = n < {SMALL_N} (small sample).")


def _summary_metrics(spec: PickSpec) -> list[str]:
    """Every metric with a weight > 0, and every floored metric, in the order the protocols declare them."""
    return list(spec.metrics)


def _metric_header(metric: str, spec: PickSpec) -> str:
    w = spec.weights.get(metric, 0)
    return label(metric) + (f" ×{w:g}" if w > 0 else "") + (" (floor)" if metric in spec.floors else "")


def _summary_table(result: PickResult) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the summary's ranking table: every weighted or floored metric as 'value n=…'."""
    metrics = _summary_metrics(result.spec)
    header = ["#", "Model", "Weighted score", "Eligible", "Generation / 1k", "Judging / 1k", "Total / 1k", "Responses",
              *(_metric_header(m, result.spec) for m in metrics), "Why"]
    rows = [[r["rank"], r["model"], r["score"], "floor" if r["baseline"] else "yes" if r["eligible"] else "no", f"${r['cost_per_1k']:.2f}",
             f"${r['judge_cost_per_1k']:.2f}", f"${r['total_cost_per_1k']:.2f}",
             str(r["responses"]), *(r[m] for m in metrics), r["reason"]] for r in ranking_table(result, metrics).to_dict("records")]
    return header, rows


def _scope_lines(result: PickResult, judge: str, runs: str) -> list[str]:
    s = result.spec
    weights = ", ".join(f"{label(m)} ×{w:g}" for m, w in s.weights.items() if w > 0) or "none"
    floors = ", ".join(f"{label(m)} {'≤' if lower_is_better(m) else '≥'} {v:.0%}" for m, v in s.floors.items()) or "none"
    superseded = f"; {result.n_superseded} older responses of overlapping runs left out" if result.n_superseded else ""
    return [
        f"Runs: {runs}; judge: {judge_label(judge)}; responses considered: {result.n_responses} (latest per model and instance{superseded})",
        f"Domains: {', '.join(s.domains) or 'all'}; subsets: {', '.join(s.modes) or 'all'}",
        f"Weights: {weights}",
        f"Hard floors: {floors}; budget per 1k queries: {'none' if s.budget_per_1k is None else f'${s.budget_per_1k:.2f}'}",
        (f"Test (top two, and the leader against the best baseline): paired bootstrap of the weighted-score difference over the "
         f"shared instances, {N_RESAMPLES:,} resamples, expanded percentile 95% CI; better only when the CI lies above 0 (α = {ALPHA:g}, two-sided)"),
    ]


def _baseline_phrase(model: str) -> str:
    """'the extractive baseline' for baseline:extractive; 'the baseline X' for other names."""
    prefix = "baseline:"
    return f"the {model[len(prefix):]} baseline" if model.startswith(prefix) else f"the baseline {model}"


def _score_of(result: PickResult, model: str) -> float:
    return float(result.ranking["score"].to_numpy()[result.ranking["model"].tolist().index(model)])


def _row_of(ranking: pd.DataFrame, model: str) -> pd.Series:
    """The ranking's row of `model` (a model has one)."""
    return ranking.iloc[ranking["model"].tolist().index(model)]


def headline(result: PickResult) -> str:
    """The decision in one sentence: the recommended generator, or plainly why there is none."""
    if result.recommended:
        return f"Recommended generator: {result.recommended}."
    if result.leader and result.best_baseline:
        return (f"No recommendation: {result.leader} does not beat {_baseline_phrase(result.best_baseline)} "
                f"(score {_pct(_score_of(result, result.best_baseline))} against {result.leader}'s {_pct(_score_of(result, result.leader))}).")
    if not (~result.ranking["baseline"]).any():
        return "No recommendation: no candidate generator has been scored in this scope, only calibration baselines."
    unmeasured = unmeasured_floors(result)
    if unmeasured:
        return "No recommendation: " + "; ".join(unmeasured) + "."
    return "No recommendation: no candidate meets every floor and the budget; relax a floor, raise the budget or evaluate more models."


def decidable_floors(scores: pd.DataFrame, floors: dict[str, float]) -> tuple[dict[str, float], list[str]]:
    """(the floors whose metric the judge decided on some response of these scores, the metrics left out): the
    defaults hold only floors the configured judge can check, so the default can end in a recommendation."""
    kept = {m: v for m, v in floors.items() if m in scores and scores[m].notna().any()}
    return kept, [m for m in floors if m not in kept]


def unmeasured_floors(result: PickResult) -> list[str]:
    """Each floor whose metric no candidate has a value for, with its reason and what would measure it."""
    candidates = result.ranking[~result.ranking["baseline"]]
    lines = []
    for metric, floor in result.spec.floors.items():
        if candidates.empty or candidates[metric].notna().any():
            continue
        name = label(metric)
        labels = " or expert gold labels (Label responses)" if metric in readmodel.GOLD_METRICS else ""
        lines.append(f"the floor {name} ≥ {floor:.0%} cannot be checked: the judge decided {name} on none of the "
                     f"candidates' {int(candidates['responses'].sum())} responses; an LLM judge (`gauntlet score RUN "
                     f"--judge llm:MODEL`){labels} would measure it, or remove the floor")
    return lines


def floor_verdict(result: PickResult) -> str:
    """The leader against the best baseline, in words, with the test's figures ('' without a leader)."""
    if not result.leader:
        return ""
    if result.floor is None:
        return (f"No calibration baseline was scored in this scope, so {result.leader} is not checked against the floor "
                "(score baseline:extractive and baseline:always-refuse on the same instances to have one).")
    t = result.floor
    base = f"{_baseline_phrase(t.b)} (score {_pct(_score_of(result, t.b))})"
    text = {
        "a_better": f"{t.a} beats {base}",
        "b_better": f"{t.a} does not beat {base}: the baseline is significantly better",
        "tied": f"{t.a} does not beat {base}: not significantly better",
        "untestable": f"{t.a} does not beat {base}: they share {t.shared} instances, too few to test",
    }[t.outcome]
    return f"{text} — {_test_figures(t)}"


def decision_lines(result: PickResult) -> list[str]:
    """The baseline-floor verdict and the top-two verdict (those that apply)."""
    lines = []
    if result.floor:
        lines.append(f"Baseline floor on {result.floor.shared} shared instances: {floor_verdict(result)}")
    elif result.leader:
        lines.append(floor_verdict(result))
    if result.top_two:
        lines.append(f"Top two on {result.top_two.shared} shared instances: {top_two_verdict(result)}")
    return lines


def safety_lines(result: PickResult) -> list[str]:
    """Each safety metric the pick is at or near 0 on, in words (shown in red)."""
    return [f"{result.pick} scores {f.value:.1%} on {label(f.metric)} (n={f.n}): at or near 0, it "
            f"almost never {'refuses when the answer is missing' if f.metric == 'rejection' else 'recognises a conflict'}"
            for f in result.safety_flags]


def weakness_lines(result: PickResult) -> list[str]:
    """Every metric where the pick is significantly worse than another model, and every floor it barely clears."""
    lines = [f"{label(w.metric)}: significantly worse than {w.test.b} — {_test_figures(w.test)}"
             for w in result.weaknesses]
    lines += [f"{label(f.metric)} {f.value:.1%} clears the "
              f"{'ceiling' if lower_is_better(f.metric) else 'floor'} {f.floor:.0%} by only {f.margin * 100:.1f} points"
              for f in result.near_floors]
    return lines


def _title() -> str:
    return f"Generator choice — {datetime.now(UTC):%Y-%m-%d}"


def summary_markdown(result: PickResult, judge: str, runs: str, fitness: Notice | None = None) -> str:
    """The one-page decision summary as Markdown (with the judge's fitness statement and warning, when given)."""
    header, rows = _summary_table(result)
    lines = [f"# {_title()}", "", f"**{headline(result)}**", ""]
    if fitness is not None:
        lines += ([f"> **Warning: {fitness.warning}**", ""] if fitness.warning else []) + [fitness.statement, ""]
    lines += [f"- {x}." for x in decision_lines(result)] + ([""] if decision_lines(result) else [])
    flagged = [f"- **Safety: {x}.**" for x in safety_lines(result)] + [f"- Weakness: {x}." for x in weakness_lines(result)]
    lines += flagged + ([""] if flagged else [])
    if result.note:
        lines += [f"> {result.note}", ""]
    lines += ["## Scope", ""] + [f"- {x}" for x in _scope_lines(result, judge, runs)] + ["", "## Ranking", "", metrics_note(judge), ""]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _fitness_html(fitness: Notice | None) -> str:
    if fitness is None:
        return ""
    warning = "" if fitness.warning is None else (
        f"<p style='color:#b00020'><strong>Warning: {html.escape(fitness.warning)}</strong></p>")
    return f"{warning}<p>{html.escape(fitness.statement)}</p>"


def summary_html(result: PickResult, judge: str, runs: str, fitness: Notice | None = None) -> str:
    """The one-page decision summary as a standalone HTML document (all text escaped; with the judge's fitness
    statement and warning, when given)."""
    e = html.escape
    header, rows = _summary_table(result)
    head = "".join(f"<th>{e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in rows)
    scope = "".join(f"<li>{e(x)}</li>" for x in _scope_lines(result, judge, runs))
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{e(_title())}</title>",
        "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}</style>",
        f"</head><body><h1>{e(_title())}</h1><p><strong>{e(headline(result))}</strong></p>",
        _fitness_html(fitness),
        "<ul>" + "".join(f"<li>{e(x)}.</li>" for x in decision_lines(result))
        + "".join(f"<li style='color:#b00020'><strong>Safety: {e(x)}.</strong></li>" for x in safety_lines(result))
        + "".join(f"<li>Weakness: {e(x)}.</li>" for x in weakness_lines(result)) + "</ul>",
    ]
    if result.note:
        parts.append(f"<p><em>{e(result.note)}</em></p>")
    parts += [f"<h2>Scope</h2><ul>{scope}</ul>", f"<h2>Ranking</h2><p>{e(metrics_note(judge))}</p>",
              f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></body></html>"]
    return "".join(parts)


def corrected_choice(result: PickResult, corrected: pd.DataFrame) -> str | None:
    """Whether the judge-corrected (PPI++) means change the choice, as a sentence; None without gold labels, and how
    many are missing while fewer than MIN_LABELS back every corrected mean.

    The corrected means replace the judge's means for the metrics gold labels decide; the rest stay. Only for the
    whole run (the gold sample is not stratified by the picker's domain and subset filters).
    """
    usable = corrected.dropna(subset=["estimate"]) if not corrected.empty else corrected
    if result.leader is None or corrected.empty or not corrected["n"].fillna(0).any():
        return None
    if usable.empty:
        return (f"{int(corrected['n'].sum())} expert gold label values so far: checking the choice against them needs "
                f"at least {MIN_LABELS} gold labels per model and metric.")
    if result.spec.domains or result.spec.modes:
        return "Judge-corrected estimates exist for the whole run only: clear the domain and subset filters to check them."
    means = {m: dict(zip(usable.loc[usable["metric"] == m, "model"], usable.loc[usable["metric"] == m, "estimate"],
                         strict=True)) for m in usable["metric"].unique()}
    scores = {}
    for row in result.ranking[result.ranking["eligible"]].to_dict("records"):
        values = {m: means.get(m, {}).get(row["model"], row[m]) for m in result.metrics}
        scores[row["model"]] = weighted_score(values, result.spec.weights)
    best = max(scores, key=lambda m: (scores[m], m)) if scores else None
    n = int(usable["n"].sum())
    if best == result.leader:
        return f"With the {n} expert gold labels correcting the judge, {result.leader} stays first."
    return (f"With the {n} expert gold labels correcting the judge, {best} would rank first instead of {result.leader} "
            f"(corrected weighted score {scores[best]:.1%} vs {scores[result.leader]:.1%}): check the corrected estimates "
            "on the Leaderboard before deciding.")


# --------------------------------------------------------------------------- honest ranks with gold labels

RANK_SET_COLUMNS = ["metric", "model", "estimate", "ci_low", "ci_high", "n", "confidence", "rank_low", "rank_high",
                    "could_be_first", "note"]


def gold_metrics(spec: PickSpec) -> list[str]:
    """The gold-decidable metrics the product owner weighted (those gold labels can correct)."""
    return [m for m in readmodel.GOLD_METRICS if spec.weights.get(m, 0) > 0]


def rank_sets(scores: pd.DataFrame, gold: pd.DataFrame, candidates: Sequence[str], metrics: Sequence[str],
              probabilities: dict[int, float] | None = None, alpha: float = ALPHA) -> pd.DataFrame:
    """Prediction-powered rank-sets: per metric, each candidate's corrected interval at 1 − α/K (Bonferroni over the K
    candidates, so all K hold together with probability ≥ 1 − α) and the ranks it could take: rank_low = 1 + the
    candidates whose interval lies wholly above its, rank_high = K − those wholly below. With probability ≥ 1 − α
    every true rank lies in its set, so the true first is among those that `could_be_first`. A candidate without
    enough gold labels for a corrected value gets the metric's whole range [0, 1] (it could be anywhere)."""
    k = len(candidates)
    rows: list[dict] = []
    if k < 2:
        return pd.DataFrame(rows, columns=RANK_SET_COLUMNS)
    confidence = 1 - alpha / k
    mine = scores[scores["model"].isin(list(candidates))]
    corrected = readmodel.corrected_estimates(mine, gold, confidence=confidence, probabilities=probabilities)
    # one value per estimate: the point estimate is the 95% one every other table shows; only the interval widens
    point = readmodel.corrected_estimates(mine, gold, probabilities=probabilities).set_index(["model", "metric"])
    for metric in metrics:
        g = corrected[corrected["metric"] == metric].set_index("model").reindex(list(candidates))
        g["estimate"] = [point["estimate"].get((m, metric), np.nan) for m in candidates]
        known = g["estimate"].notna()
        low = g["ci_low"].where(known, 0.0).to_numpy(float)
        high = g["ci_high"].where(known, 1.0).to_numpy(float)
        for i, model in enumerate(candidates):
            above, below = int((low > high[i]).sum()), int((high < low[i]).sum())
            note = "" if known.iloc[i] else f"no corrected value ({int(g['n'].fillna(0).iloc[i])} gold labels): whole range"
            rows.append({"metric": metric, "model": model, "estimate": float(g["estimate"].iloc[i]),
                         "ci_low": float(low[i]), "ci_high": float(high[i]), "n": int(g["n"].fillna(0).iloc[i]),
                         "confidence": confidence, "rank_low": 1 + above, "rank_high": k - below,
                         "could_be_first": above == 0, "note": note})
    return pd.DataFrame(rows, columns=RANK_SET_COLUMNS)


SEGMENT_KEYS = ("domain", "condition", "language")
SEGMENT_COLUMNS = ["domain", "condition", "language", "metric", "model_a", "model_b", "shared", "n", "judge_diff",
                   "estimate", "ci_low", "ci_high", "p_value", "p_holm", "significant", "note"]


def segment_differences(scores: pd.DataFrame, gold: pd.DataFrame, segments: pd.DataFrame, a: str, b: str,
                        metrics: Sequence[str], alpha: float = ALPHA) -> pd.DataFrame:
    """Per segment (domain × condition × language) and metric: the corrected difference a − b on the shared instances
    (readmodel.corrected_difference) with its two-sided p-value (the interval inverted) and Holm's adjustment over every
    tested cell. `segments` maps response_id to condition and language. Cells with too few shared gold labels carry
    the note and no p-value."""
    merged = scores.merge(segments[["response_id", "condition", "language"]], on="response_id", how="left")
    merged[["condition", "language"]] = merged[["condition", "language"]].fillna("").replace("", "(none)")
    rows = []
    for key, g in merged.groupby(list(SEGMENT_KEYS), sort=True):
        for metric in metrics:
            pairs = readmodel.difference_pairs(g, gold, a, b, metric)  # drawn once for the estimate and every interval
            d = readmodel.pairs_difference(pairs)  # the bisection inverts
            p = ppi.p_value_by_inversion(pairs.interval) if not np.isnan(d["estimate"]) else np.nan
            rows.append({**dict(zip(SEGMENT_KEYS, key, strict=True)), "metric": metric, "model_a": a, "model_b": b,
                         "shared": d["shared"], "n": d["n"], "judge_diff": d["judge_diff"], "estimate": d["estimate"],
                         "ci_low": d["ci_low"], "ci_high": d["ci_high"], "p_value": p, "note": d["note"]})
    out = pd.DataFrame(rows, columns=SEGMENT_COLUMNS)
    tested = out["p_value"].notna()
    out["p_holm"] = np.nan
    if tested.any():
        out.loc[tested, "p_holm"] = stats.holm(out.loc[tested, "p_value"].to_numpy(float), alpha).adjusted
    out["significant"] = (out["p_holm"] <= alpha).astype(object).where(tested, None)  # None: not tested
    return out

