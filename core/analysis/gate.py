"""The significance gate (`gauntlet gate`): a candidate run against a baseline run on the items both answered.

The statistical core is pure: per metric, two (items x repeats) arrays of per-response values become per-item pass
rates (or means); binary metrics are tested with McNemar's test on the items stable in both runs (pass rate 0 or 1:
flaky items are reported apart and never decide alone), continuous ones and tolerated drops above zero with a paired
bootstrap; the p-values of the gated rows are Holm-corrected together. tests/analysis/test_gate_simulation.py shows
the false-alarm rate under equal quality stays at or below alpha and reports the power for a 5-point regression.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from core.analysis import stats
from core.analysis.ppi import MIN_LABELS
from core.protocols import constraint_protocols
from core.store.schema import MAX_NESTING

PASS, UNDECIDED, REGRESSION = 0, 1, 2  # exit codes of `gauntlet gate`
SEGMENT_DIMENSIONS: tuple[str, ...] = ("protocol", "domain", "condition", "language")
DEFAULT_RULES_FILE = "gauntlet-gate.yaml"


# --------------------------------------------------------------------------- rules


@dataclass(frozen=True)
class MetricRule:
    """A metric that must not regress by more than `max_drop` (in metric units: 0.02 is 2 points)."""

    metric: str
    max_drop: float = 0.0
    higher_is_better: bool | None = None  # None: the read model's direction (higher is better when unknown)


@dataclass(frozen=True)
class GateRules:
    """The gate's rules file: gated metrics, alpha (family-wise, Holm), minimum shared items, segments."""

    metrics: tuple[MetricRule, ...]
    alpha: float = 0.05
    min_shared: int = 30
    segments: tuple[str, ...] = SEGMENT_DIMENSIONS
    gate_segments: bool = False
    min_judge_kappa: float | None = None
    n_resamples: int = 2_000
    seed: int = 0
    corrected: str = "show"  # "gate": a gold-decidable metric is tested on its judge-corrected difference


CORRECTED_MODES = ("show", "gate")
_RULE_KEYS = {"metrics", "alpha", "min_shared", "segments", "gate_segments", "min_judge_kappa", "n_resamples", "seed",
              "corrected"}
_METRIC_KEYS = {"metric", "max_drop", "higher_is_better"}


def parse_rules(data: dict[str, Any]) -> GateRules:
    """GateRules from the rules file's mapping; ValueError names the bad key or value."""
    if not isinstance(data, dict):
        raise ValueError("the rules file must be a mapping with a 'metrics' list")
    unknown = sorted(set(data) - _RULE_KEYS)
    if unknown:
        raise ValueError(f"unknown rules key(s) {', '.join(unknown)}; known: {', '.join(sorted(_RULE_KEYS))}")
    metrics = tuple(_metric_rule(entry) for entry in data.get("metrics") or [])
    if not metrics:
        raise ValueError("rules: 'metrics' must list at least one metric")
    rules = GateRules(metrics=metrics, alpha=float(data.get("alpha", 0.05)), min_shared=int(data.get("min_shared", 30)),
                      segments=tuple(data.get("segments", SEGMENT_DIMENSIONS) or ()),
                      gate_segments=bool(data.get("gate_segments", False)),
                      min_judge_kappa=None if data.get("min_judge_kappa") is None else float(data["min_judge_kappa"]),
                      n_resamples=int(data.get("n_resamples", 2_000)), seed=int(data.get("seed", 0)),
                      corrected=str(data.get("corrected", "show")))
    if not 0 < rules.alpha < 1:
        raise ValueError(f"rules: alpha must be in (0, 1), got {rules.alpha}")
    if rules.min_shared < 2 or rules.n_resamples < 100:
        raise ValueError("rules: min_shared must be >= 2 and n_resamples >= 100")
    if rules.corrected not in CORRECTED_MODES:
        raise ValueError(f"rules: corrected must be one of {', '.join(CORRECTED_MODES)}, got {rules.corrected!r}")
    bad = [s for s in rules.segments if s not in SEGMENT_DIMENSIONS]
    if bad:
        raise ValueError(f"rules: unknown segment(s) {', '.join(bad)}; known: {', '.join(SEGMENT_DIMENSIONS)}")
    return rules


def _metric_rule(entry: Any) -> MetricRule:
    if isinstance(entry, str):
        entry = {"metric": entry}
    if not isinstance(entry, dict) or not entry.get("metric"):
        raise ValueError(f"rules: each metrics entry needs a 'metric' name, got {entry!r}")
    unknown = sorted(set(entry) - _METRIC_KEYS)
    if unknown:
        raise ValueError(f"rules: unknown key(s) {', '.join(unknown)} for metric {entry['metric']}")
    drop = float(entry.get("max_drop", 0.0))
    if not 0 <= drop < 1:
        raise ValueError(f"rules: max_drop of {entry['metric']} must be in [0, 1), got {drop}")
    direction = entry.get("higher_is_better")
    return MetricRule(str(entry["metric"]), drop, None if direction is None else bool(direction))


def load_rules(path: str | Path) -> GateRules:
    """Read and check a rules file (YAML or JSON); nesting deeper than MAX_NESTING or a YAML syntax error is a
    ValueError naming its line and column (found by the event parser, which does not recurse, before composing)."""
    return parse_rules(read_yaml(path))


def read_yaml(path: str | Path) -> Any:
    """A rules file's (YAML or JSON) content; nesting deeper than MAX_NESTING or a YAML syntax error is a ValueError
    naming its line and column (the gate's and `gauntlet decide`'s rules files)."""
    import yaml

    text = Path(path).read_text(encoding="utf-8")
    try:
        depth = 0
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            depth += isinstance(event, yaml.CollectionStartEvent) - isinstance(event, yaml.CollectionEndEvent)
            if depth > MAX_NESTING:
                at = event.start_mark
                where = f"line {at.line + 1}, column {at.column + 1}: " if at is not None else ""
                raise ValueError(f"{where}nested too deeply (more than {MAX_NESTING} levels)")
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ValueError(f"{where}not valid YAML: {error.problem or error.context}") from None


# --------------------------------------------------------------------------- the statistical core


@dataclass(frozen=True)
class Comparison:
    """Candidate minus baseline on one metric and segment: means, difference with its CI, the one-sided p-value."""

    n_shared: int  # items with a value in both runs (each tested once, by its pass rate)
    n_flaky: int
    flaky: tuple[int, ...]  # row indices of the flaky items
    baseline: float | None
    candidate: float | None
    diff: float | None  # candidate - baseline on the tested items
    ci_low: float | None
    ci_high: float | None
    p_value: float | None  # H0: the candidate is not worse than the baseline by more than max_drop
    test: str
    max_drop: float
    stable_diff: float | None = None  # the oriented difference with every flaky item's change set to 0
    flaky_only: bool = False  # any drop is carried by flaky items alone: never a regression


def pass_rates(values: ArrayLike) -> np.ndarray:
    """Per-item mean over repeats of an (items x repeats) array (NaN where an item has no value)."""
    x = np.asarray(values, dtype=float)
    x = x[:, None] if x.ndim == 1 else x
    present = ~np.isnan(x)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(present.any(axis=1), np.where(present, x, 0.0).sum(axis=1) / present.sum(axis=1), np.nan)


def compare_items(baseline: ArrayLike, candidate: ArrayLike, *, binary: bool, max_drop: float = 0.0,
                  higher_is_better: bool = True, n_resamples: int = 2_000, seed: int = 0,
                  confidence: float = 0.95) -> Comparison:
    """Test whether the candidate is worse than the baseline by more than `max_drop` on the same items.

    Rows are items in the same order in both arrays, columns repeats (NaN = no value); each item counts once, by
    its pass rate (mean over repeats). Binary metrics with every item stable (rate 0 or 1 in both runs) and
    max_drop 0 get McNemar's one-sided test; otherwise the paired bootstrap p-value
    (1 + #replicates not below -max_drop) / (R + 1) of the per-item differences. An item whose binary pass rate lies
    strictly between 0 and 1 in either run is flaky: reported apart, and `flaky_only` marks a comparison whose stable
    items alone show no drop beyond max_drop, which the gate never fails on.
    """
    b_rate, c_rate = pass_rates(baseline), pass_rates(candidate)
    if b_rate.shape != c_rate.shape:
        raise ValueError(f"baseline and candidate need the same items, got {b_rate.shape[0]} and {c_rate.shape[0]}")
    shared = ~np.isnan(b_rate) & ~np.isnan(c_rate)
    flaky = shared & binary & (((b_rate > 0) & (b_rate < 1)) | ((c_rate > 0) & (c_rate < 1)))
    n_shared = int(shared.sum())
    empty = Comparison(n_shared, int(flaky.sum()), tuple(np.flatnonzero(flaky).tolist()),
                       None, None, None, None, None, None, "", max_drop)
    if n_shared < 2:
        return empty
    b, c = b_rate[shared], c_rate[shared]
    sign = 1.0 if higher_is_better else -1.0
    low, high = _paired_bootstrap_ci(c - b, n_resamples, seed, confidence)
    if binary and max_drop == 0 and not flaky.any():
        result = stats.mcnemar(c.astype(int), b.astype(int), alternative="less" if higher_is_better else "greater")
        p, test = result.p_value, f"McNemar ({result.method}, one-sided)"
    else:
        p, test = _shifted_paired_t(sign * (c - b) + max_drop), "paired t (one-sided)"
    stable = ~flaky[shared]
    stable_diff = float(sign * np.sum((c - b)[stable]) / n_shared)
    return Comparison(n_shared, empty.n_flaky, empty.flaky, float(b.mean()), float(c.mean()),
                      float(c.mean() - b.mean()), low, high, float(p), test, max_drop, stable_diff,
                      bool(flaky.any() and stable_diff >= -max_drop))


def _paired_bootstrap_ci(d: np.ndarray, n_resamples: int, seed: int, confidence: float) -> tuple[float, float]:
    """Percentile CI of mean(d) from the product's paired bootstrap (readmodel.bootstrap_means)."""
    from core.analysis.readmodel import bootstrap_means

    replicates = bootstrap_means(d[:, None], n_resamples, seed)[:, 0]
    low, high = np.quantile(replicates, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(low), float(high)


def _shifted_paired_t(shifted: np.ndarray) -> float:
    """One-sided p of 'mean < 0' for oriented differences already shifted by the tolerated drop (paired t;
    differences without spread are decided by their sign)."""
    if np.std(shifted) == 0:
        return 0.0 if shifted[0] < 0 else 1.0
    return stats.paired_t(shifted, np.zeros_like(shifted), alternative="less").p_value


# --------------------------------------------------------------------------- the decision


@dataclass
class GateRow:
    """One tested (metric, segment): its comparison, whether it is gated, and its Holm-adjusted p-value."""

    metric: str
    dimension: str  # "overall" or a segment dimension
    segment: str
    binary: bool
    higher_is_better: bool
    comparison: Comparison
    gated: bool
    note: str = ""
    adjusted_p: float | None = None
    regression: bool = False


@dataclass
class GateResult:
    """The gate's verdict: exit code, reasons, rows, flaky items and judge-corrected differences."""

    baseline_run: int
    candidate_run: int
    judge: str
    rules: GateRules
    rows: list[GateRow] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)  # why the gate could not decide
    flaky: list[dict[str, Any]] = field(default_factory=list)
    corrected: list[dict[str, Any]] = field(default_factory=list)
    repeats: tuple[int, int] = (1, 1)
    code: int = PASS

    @property
    def verdict(self) -> str:
        """pass | regression | undecided."""
        return {PASS: "pass", REGRESSION: "regression", UNDECIDED: "undecided"}[self.code]


def decide(result: GateResult) -> GateResult:
    """Holm across the gated rows that could be tested; exit 2 on a significant regression, 1 when a gated metric
    could not be tested or a precondition failed (result.reasons), else 0."""
    tested = [(row, p) for row in result.rows if row.gated and (p := row.comparison.p_value) is not None]
    if tested:
        holm = stats.holm([p for _, p in tested], result.rules.alpha)
        for (row, _), adjusted, reject in zip(tested, holm.adjusted, holm.reject, strict=True):
            row.adjusted_p, row.regression = float(adjusted), bool(reject) and not row.comparison.flaky_only
    for row in result.rows:
        if row.gated and row.dimension == "overall" and row.comparison.p_value is None:
            result.reasons.append(f"{row.metric}: {row.note or 'too few shared items to test'}")
    if any(row.regression for row in result.rows):
        result.code = REGRESSION
    elif result.reasons:
        result.code = UNDECIDED
    else:
        result.code = PASS
    return result


def gate_row(metric: str, dimension: str, segment: str, baseline: np.ndarray, candidate: np.ndarray,
             rule: MetricRule, rules: GateRules, *, binary: bool, higher_is_better: bool, gated: bool) -> GateRow:
    """Compare one metric on one segment under the rules (too few shared items: untested, with the reason)."""
    comparison = compare_items(baseline, candidate, binary=binary, max_drop=rule.max_drop,
                               higher_is_better=higher_is_better, n_resamples=rules.n_resamples, seed=rules.seed)
    note = ""
    if comparison.n_shared < rules.min_shared:
        note = f"{comparison.n_shared} shared item(s); the rules need at least {rules.min_shared}"
        comparison = replace(comparison, p_value=None, test="not tested")
    return GateRow(metric, dimension, segment, binary, higher_is_better, comparison, gated, note)


# --------------------------------------------------------------------------- reports


def _pct(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value * 100:+.1f}" if signed else f"{value * 100:.1f}"


def _p(value: float | None) -> str:
    return "–" if value is None else ("<0.001" if value < 0.001 else f"{value:.3f}")


HEADLINES = {PASS: "✅ **pass**: no gated metric regressed significantly",
             REGRESSION: "❌ **significant regression**",
             UNDECIDED: "⚠️ **could not decide**"}


def markdown_summary(result: GateResult) -> str:
    """The verdict as Markdown fit for a pull-request comment (values in points, n beside every mean)."""
    rules = result.rules
    lines = [f"### Gauntlet gate: run {result.candidate_run} (candidate) vs run {result.baseline_run} (baseline)", "",
             f"{HEADLINES[result.code]} · judge `{result.judge}` · α = {rules.alpha:g} (Holm across "
             f"{'metrics and segments' if rules.gate_segments else 'metrics'}) · repeats "
             f"{result.repeats[0]} / {result.repeats[1]}", ""]
    lines += [f"- {reason}" for reason in result.reasons]
    lines += ["", "| metric | segment | baseline | candidate | Δ (pts) [95% CI] | tolerated drop | n | flaky | test | "
              "p | p (Holm) | |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in result.rows:
        c = row.comparison
        ci = "" if c.ci_low is None else f" [{_pct(c.ci_low, True)}, {_pct(c.ci_high, True)}]"
        mark = "❌" if row.regression else ("flaky only" if c.flaky_only and c.diff and c.diff < 0 else
                                           "" if row.gated else "info")
        segment = "all" if row.dimension == "overall" else f"{row.dimension}={row.segment or '(default)'}"
        lines.append(f"| {row.metric} | {segment} | {_pct(c.baseline)} | {_pct(c.candidate)} | "
                     f"{_pct(c.diff, True)}{ci} | {_pct(c.max_drop)} | {c.n_shared} | {c.n_flaky} | "
                     f"{c.test or '–'}{' · ' + row.note if row.note else ''} | {_p(c.p_value)} | {_p(row.adjusted_p)} "
                     f"| {mark} |")
    if result.flaky:
        lines += ["", f"**Flaky items** ({len(result.flaky)}: pass rate strictly between 0 and 1 in a run; shown "
                      "apart, never failing the gate alone)", "", "| metric | item | baseline rate | candidate rate |",
                  "|---|---|---|---|"]
        lines += [f"| {f['metric']} | {f['item']} | {_pct(f['baseline_rate'])} | {_pct(f['candidate_rate'])} |"
                  for f in result.flaky[:50]]
        if len(result.flaky) > 50:
            lines.append(f"| … | {len(result.flaky) - 50} more in the JSON | | |")
    if result.corrected:
        lines += ["", "**Judge-corrected differences** (PPI++ on gold-labelled shared items)", "",
                  "| metric | judge Δ (pts) | corrected Δ [95% CI] | gold-labelled pairs | note |", "|---|---|---|---|---|"]
        lines += [f"| {c['metric']} | {_pct(c.get('judge_diff'), True)} | {_pct(c.get('estimate'), True)} "
                  f"[{_pct(c.get('ci_low'), True)}, {_pct(c.get('ci_high'), True)}] | {c.get('n', 0)} | "
                  f"{c.get('note', '')} |" for c in result.corrected]
    return "\n".join(lines).rstrip() + "\n"


def json_document(result: GateResult) -> dict[str, Any]:
    """The verdict as a JSON-ready document (every row, flaky item and corrected difference)."""
    rows = [{"metric": r.metric, "dimension": r.dimension, "segment": r.segment, "binary": r.binary,
             "higher_is_better": r.higher_is_better, "gated": r.gated, "note": r.note, "adjusted_p": r.adjusted_p,
             "regression": r.regression, **{k: v for k, v in asdict(r.comparison).items() if k != "flaky"}}
            for r in result.rows]
    return {"verdict": result.verdict, "exit_code": result.code, "reasons": result.reasons,
            "baseline_run": result.baseline_run, "candidate_run": result.candidate_run, "judge": result.judge,
            "repeats": {"baseline": result.repeats[0], "candidate": result.repeats[1]},
            "rules": asdict(result.rules), "rows": rows, "flaky": result.flaky, "corrected": result.corrected}


def flaky_items(metric: str, items: Sequence[str], baseline: np.ndarray, candidate: np.ndarray,
                comparison: Comparison) -> list[dict[str, Any]]:
    """The flaky items of one comparison with both runs' pass rates."""
    b, c = pass_rates(baseline), pass_rates(candidate)
    return [{"metric": metric, "item": items[i], "baseline_rate": float(b[i]), "candidate_rate": float(c[i])}
            for i in comparison.flaky]


# --------------------------------------------------------------------------- reading two runs (the read model's values)

_ITEMS_SQL = """
SELECT r.id AS response_id, r.condition, r."repeat", i.protocol, i.language FROM response r
JOIN instance i ON i.id = r.instance_id WHERE r.run_id = :run AND r.status = 'done'
"""
_KEY = ["protocol", "instance_uid", "condition"]


def run_values(engine, run_id: int, judge: str, model: str | None = None) -> tuple[Any, str]:
    """One row per done response of the run (one model): item key, repeat, segments and every metric value, read
    through the read model (response_scores for EnterpriseRAG, reference_scores for the reference protocols)."""
    import pandas as pd

    from core.analysis import readmodel

    items = readmodel.read_sql(engine, _ITEMS_SQL, {"run": int(run_id)})
    frames = [readmodel.prepare_scores(readmodel.response_scores(engine, [run_id], judge))]
    frames += [readmodel.reference_scores(engine, [run_id], judge, protocol).drop(columns=["condition", "language"])
               for protocol in sorted(set(items["protocol"]) - set(constraint_protocols()))]
    scores = pd.concat([f for f in frames if not f.empty] or frames[:1], ignore_index=True)
    scores = scores.merge(items, on="response_id", how="inner")
    models = sorted(scores["model"].unique())
    if model is None and len(models) > 1:
        raise ValueError(f"run {run_id} holds several models ({', '.join(models)}): name one")
    if model is not None and model not in models:
        raise ValueError(f"model {model!r} is not in run {run_id} (models: {', '.join(models) or 'none done'})")
    model = model or (models[0] if models else "")
    return scores[scores["model"] == model].reset_index(drop=True), model


def item_matrix(frame, metric: str, items: list[tuple]) -> np.ndarray:
    """Per-item values of one metric as an items x 1 array in `items` order (NaN where an item has none): the mean
    over the item's repeats from the read model's own computation (readmodel.item_means), as the report shows it."""
    from core.analysis.readmodel import item_means

    if metric not in frame.columns:
        return np.full((len(items), 1), np.nan)
    values = item_means(frame, _KEY, [metric])[metric].reindex(pd_index(items))
    return values.to_numpy(dtype=float)[:, None]


def response_values(metric: str, *frames) -> np.ndarray:
    """Every response's value of `metric` in the frames (before the per-item means), for metric_shape."""
    return np.concatenate([f[metric].to_numpy(dtype=float) for f in frames if metric in f.columns] or [np.array([])])


def pd_index(items: list[tuple]):
    """A MultiIndex of item keys (protocol, instance_uid, condition)."""
    import pandas as pd

    return pd.MultiIndex.from_tuples(items, names=_KEY)


def metric_shape(metric: str, rule: MetricRule, values: np.ndarray) -> tuple[bool, bool]:
    """(binary, higher_is_better) of a metric: its declaration (core.metrics) where it has one, else the values."""
    from core.metrics import DECLARATIONS

    known = DECLARATIONS.get(metric) if metric in DECLARATIONS else None
    binary = (known.kind == "rate" if known else False) or bool(np.isin(values[~np.isnan(values)], (0.0, 1.0)).all())
    higher = rule.higher_is_better if rule.higher_is_better is not None else (known.higher_is_better if known else True)
    return binary, higher


def preconditions(engine, run_ids: tuple[int, int], judge: str | None) -> tuple[str, list[str]]:
    """The judge to read and the reasons the gate cannot decide before testing (unknown, incomplete or unscored runs)."""
    from core.analysis import readmodel

    reasons = []
    for run_id in run_ids:
        generation = readmodel.generation_summary(engine, run_id)
        if generation.empty:
            reasons.append(f"run {run_id} not found or has no items")
        elif int(generation["pending"].sum()):
            reasons.append(f"run {run_id} is incomplete: {int(generation['pending'].sum())} item(s) pending "
                           f"(finish it with gauntlet run --resume {run_id})")
    judges = [set(readmodel.run_judges(engine, [r])) for r in run_ids]
    common = sorted(judges[0] & judges[1])
    named = [j for j in common if j != readmodel.RULE_JUDGE]
    judge = judge or (named[0] if len(named) == 1 else None) or ""
    if not judge:
        reasons.append("no single judge scored both runs" + (f" (pick one of {', '.join(named)} with --judge)"
                                                             if named else ": score them with gauntlet score"))
    elif judge not in common:
        reasons.append(f"judge {judge!r} did not score both runs")
    return judge, reasons


def judge_fitness(engine, run_ids: tuple[int, int], judge: str, rules: GateRules, gold: dict) -> list[str]:
    """A reason when gold labels exist and the judge's mean kappa against them is below the rules' minimum."""
    if rules.min_judge_kappa is None or not gold:
        return []
    from core.analysis.alignment import average_kappa, judge_vs_gold

    kappa = average_kappa(judge_vs_gold(engine, list(run_ids), judge, gold))
    if kappa is None or kappa < rules.min_judge_kappa:
        shown = "undefined" if kappa is None else f"{kappa:.2f}"
        return [f"judge {judge!r} not fit: mean kappa against gold {shown} < {rules.min_judge_kappa:g}"]
    return []


def corrected_scores(frames: tuple[Any, Any]):
    """The gold-labellable responses of both runs (EnterpriseRAG, first repeat, no condition) as models 'baseline'
    and 'candidate', the layout readmodel.corrected_difference reads."""
    import pandas as pd

    labelled = [f[(f["repeat"] == 0) & (f["protocol"].isin(constraint_protocols())) & (f["condition"] == "")]
                .assign(model=name) for f, name in zip(frames, ("baseline", "candidate"), strict=True)]
    return pd.concat(labelled, ignore_index=True)


def corrected_difference(scores, gold, metric: str, confidence: float = 0.95) -> dict[str, Any]:
    """The read model's PPI++ corrected difference (candidate minus baseline) of one metric, NaN made None."""
    from core.analysis import readmodel

    diff = readmodel.corrected_difference(scores, gold, "candidate", "baseline", metric, confidence=confidence)
    return {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in diff.items()}


def corrected_differences(scores, gold: dict, rules: GateRules,
                          draws: dict[int, tuple[float, str]] | None = None) -> list[dict[str, Any]]:
    """The corrected difference of each gated gold-decidable metric (none without gold labels), weighted by the
    recorded sampling probabilities in `draws` (core.store.labels.gold_draws) when every labelled pair has them."""
    from core.analysis import readmodel

    if not gold or scores.empty:
        return []
    return [corrected_difference(scores, readmodel.gold_values(gold, draws), rule.metric) for rule in rules.metrics
            if rule.metric in readmodel.GOLD_METRICS]


def corrected_p_value(scores, gold, metric: str, max_drop: float, higher_is_better: bool) -> float:
    """One-sided p-value of 'the candidate is worse by more than max_drop' from the corrected difference, by inverting
    its interval: the smallest a at which the (1 - 2a) interval lies wholly below -max_drop (oriented), found by
    bisection; above 0.5 when the estimate itself is not below it."""
    sign = 1.0 if higher_is_better else -1.0

    def bounds(a: float) -> tuple[float, float]:
        d = corrected_difference(scores, gold, metric, confidence=1 - 2 * a)
        low, high = sorted((sign * d["ci_low"] + max_drop, sign * d["ci_high"] + max_drop))
        return low, high

    below = bounds(0.5 - 1e-9)[1] < 0

    def crossed(a: float) -> bool:
        low, high = bounds(a)
        return high < 0 if below else low > 0

    low, high = 1e-6, 0.5 - 1e-9
    if crossed(low):
        high = low
    for _ in range(30 if high > low else 0):
        mid = (low + high) / 2
        low, high = (low, mid) if crossed(mid) else (mid, high)
    return high if below else 1 - high


def gate_corrected(result: GateResult, scores, gold) -> None:
    """Under `corrected: gate`: each gated overall row of a gold-decidable metric is tested on its corrected paired
    difference and interval instead of the raw judge's; with too few gold-labelled pairs it is untested (exit 1)."""
    from core.analysis import readmodel

    for row in result.rows:
        if row.dimension != "overall" or not row.gated or row.metric not in readmodel.GOLD_METRICS:
            continue
        diff = corrected_difference(scores, gold, row.metric) if not scores.empty else {"n": 0, "estimate": None}
        if diff["estimate"] is None:
            row.comparison = replace(row.comparison, p_value=None, test="not tested")
            row.note = (f"judge-corrected difference needs at least {MIN_LABELS} gold-labelled pairs, "
                        f"{diff['n']} found")
            continue
        p = corrected_p_value(scores, gold, row.metric, row.comparison.max_drop, row.higher_is_better)
        row.comparison = replace(row.comparison, diff=diff["estimate"], ci_low=diff["ci_low"],
                                 ci_high=diff["ci_high"], p_value=p, test="PPI++ corrected (one-sided)")
        row.note = f"judge-corrected on {diff['n']} gold-labelled pairs"


def run_gate(engine, baseline_run: int, candidate_run: int, rules: GateRules, judge: str | None = None,
             baseline_model: str | None = None, candidate_model: str | None = None) -> GateResult:
    """Compare the candidate run with the baseline run under the rules: every gated metric overall and per segment."""
    from core.analysis import readmodel
    from core.store.labels import gold_draws, gold_labels

    judge, reasons = preconditions(engine, (baseline_run, candidate_run), judge)
    result = GateResult(baseline_run, candidate_run, judge, rules, reasons=reasons)
    if reasons:
        return decide(result)
    try:
        base, _ = run_values(engine, baseline_run, judge, baseline_model)
        cand, _ = run_values(engine, candidate_run, judge, candidate_model)
    except ValueError as error:
        result.reasons.append(str(error))
        return decide(result)
    result.repeats = (int(base["repeat"].max()) + 1 if len(base) else 0, int(cand["repeat"].max()) + 1 if len(cand) else 0)
    gold = gold_labels(engine, [baseline_run, candidate_run])
    result.reasons += judge_fitness(engine, (baseline_run, candidate_run), judge, rules, gold)
    if result.reasons:
        return decide(result)
    items = sorted(set(map(tuple, base[_KEY].to_numpy().tolist())) & set(map(tuple, cand[_KEY].to_numpy().tolist())))
    segments = base.drop_duplicates(_KEY).set_index(_KEY).reindex(pd_index(items))
    for rule in rules.metrics:
        b, c = item_matrix(base, rule.metric, items), item_matrix(cand, rule.metric, items)
        if np.isnan(b).all() and np.isnan(c).all():
            result.reasons.append(f"{rule.metric}: no value in either run under judge {judge!r}")
            continue
        binary, higher = metric_shape(rule.metric, rule, response_values(rule.metric, base, cand))
        row = gate_row(rule.metric, "overall", "", b, c, rule, rules, binary=binary, higher_is_better=higher, gated=True)
        result.rows.append(row)
        result.flaky += flaky_items(rule.metric, [" / ".join(filter(None, map(str, k))) for k in items], b, c,
                                    row.comparison)
        for dimension in rules.segments:
            labels = segments.reset_index()[dimension].fillna("").astype(str).to_numpy()
            for value in sorted(set(labels)) if len(set(labels)) > 1 else []:
                mask = labels == value
                result.rows.append(gate_row(rule.metric, dimension, value, b[mask], c[mask], rule, rules,
                                            binary=binary, higher_is_better=higher, gated=rules.gate_segments))
    scores = corrected_scores((base, cand))
    draws = gold_draws(engine, [baseline_run, candidate_run])
    result.corrected = corrected_differences(scores, gold, rules, draws)
    if rules.corrected == "gate":
        gate_corrected(result, scores, readmodel.gold_values(gold, draws))
    return decide(result)
