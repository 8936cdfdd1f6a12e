"""Pick a generator: rank candidate models by weighted metrics under hard floors and a budget, test the top two,
and write a one-page summary (Markdown or HTML)."""

from __future__ import annotations

import html
import warnings
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np
import pandas as pd

from core.analysis import readmodel, stats

PICK_METRICS: tuple[str, ...] = (
    "faithfulness", "coverage", "loose_ias", "strict_ias", "rejection", "conflict_recognition", "over_abstention",
)
DEFAULT_WEIGHTS = {"faithfulness": 1.0, "coverage": 1.0, "strict_ias": 2.0, "rejection": 1.0, "conflict_recognition": 1.0}


@dataclass(frozen=True)
class PickSpec:
    """The product owner's choice: scope, metric weights, hard floors (fractions) and budget per 1k queries."""

    domains: tuple[str, ...] = ()
    modes: tuple[str, ...] = ()
    weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    floors: dict[str, float] = field(default_factory=dict)
    budget_per_1k: float | None = None
    include_baselines: bool = False


@dataclass
class PickResult:
    """Ranked candidates, the top-two comparison and what was decided on."""

    ranking: pd.DataFrame
    top_two: dict | None
    spec: PickSpec
    n_responses: int
    note: str = ""


def _utility(metric: str, value: float) -> float:
    """Metric value as 'higher is better' (over-abstention is inverted)."""
    return 1.0 - value if metric == "over_abstention" else value


def weighted_score(means: dict[str, float], weights: dict[str, float]) -> float:
    """Weighted mean of the available metrics (missing ones drop out of the denominator); NaN if none."""
    num = den = 0.0
    for metric, w in weights.items():
        v = means.get(metric, np.nan)
        if w > 0 and v is not None and not np.isnan(v):
            num += w * _utility(metric, v)
            den += w
    return num / den if den else np.nan


def rank(scores: pd.DataFrame, models: pd.DataFrame, spec: PickSpec) -> PickResult:
    """Rank models on prepared scores: eligible (all floors met, within budget) first by weighted score.

    Baselines are left out unless spec.include_baselines, or when they are the only models scored. When runs overlap,
    only the latest response per (model, instance) counts (readmodel.latest_per_model_instance).
    """
    scoped = readmodel.filter_scores(readmodel.latest_per_model_instance(scores), spec.modes, spec.domains)
    info = readmodel.with_model_info(pd.DataFrame({"model": sorted(scoped["model"].unique())}), models)
    note = ""
    if not spec.include_baselines:
        real = info[~info["is_baseline"]]
        if real.empty and not info.empty:
            note = "Only calibration baselines have been scored; they are ranked here for illustration."
        else:
            info = real
    rows = []
    for model in info["model"]:
        group = scoped[scoped["model"] == model]
        means = {m: float(group[m].mean()) if group[m].notna().any() else np.nan for m in PICK_METRICS}
        cost_1k = float(group["cost_usd"].fillna(0).mean() * 1000)
        fails = []
        for metric, floor in spec.floors.items():
            v = means.get(metric, np.nan)
            label = readmodel.METRICS[metric].label
            if np.isnan(v):
                fails.append(f"{label}: not measured in this scope (floor {floor:.0%})")
            elif metric == "over_abstention" and v > floor:
                fails.append(f"{label} {v:.1%} above the ceiling {floor:.0%}")
            elif metric != "over_abstention" and v < floor:
                fails.append(f"{label} {v:.1%} below the floor {floor:.0%}")
        if spec.budget_per_1k is not None and cost_1k > spec.budget_per_1k:
            fails.append(f"cost ${cost_1k:.2f} per 1k queries over the budget ${spec.budget_per_1k:.2f}")
        score = weighted_score(means, spec.weights)
        contributions = sorted(((w * _utility(m, means[m]), m) for m, w in spec.weights.items() if w > 0 and not np.isnan(means.get(m, np.nan))), reverse=True)
        strengths = ", ".join(f"{readmodel.METRICS[m].label} {means[m]:.1%}" for _, m in contributions[:2])
        rows.append({"model": model, "score": score, "eligible": not fails, "fails": fails, "strengths": strengths,
                     "cost_per_1k": cost_1k, "responses": len(group), **means})
    ranking = pd.DataFrame(rows, columns=["model", "score", "eligible", "fails", "strengths", "cost_per_1k", "responses", *PICK_METRICS])
    ranking = ranking.sort_values(["eligible", "score"], ascending=[False, False], na_position="last").reset_index(drop=True)
    ranking.insert(0, "rank", range(1, len(ranking) + 1))
    ranking["reason"] = [_reason(r) for r in ranking.to_dict("records")]
    top_two = compare_top_two(scoped, ranking, spec) if len(ranking) >= 2 else None
    return PickResult(ranking, top_two, spec, len(scoped), note)


def _reason(row: dict) -> str:
    if not row["eligible"]:
        return "Fails: " + "; ".join(row["fails"])
    score = "n/a" if np.isnan(row["score"]) else f"{row['score']:.1%}"
    return f"Meets every floor and the budget; weighted score {score}; strongest: {row['strengths'] or 'n/a'}."


def compare_top_two(scoped: pd.DataFrame, ranking: pd.DataFrame, spec: PickSpec, n_resamples: int = 2_000, seed: int = 0) -> dict:
    """Do the first two differ? McNemar on Strict IAS over shared instances, and a paired bootstrap CI of the
    weighted-score difference (instances resampled, metric means recomputed per resample)."""
    a, b = ranking["model"].iloc[0], ranking["model"].iloc[1]
    keys = [m for m, w in spec.weights.items() if w > 0]
    pa = scoped[scoped["model"] == a].set_index("instance_uid")
    pb = scoped[scoped["model"] == b].set_index("instance_uid")
    shared = pa.index.intersection(pb.index)
    out = {"a": a, "b": b, "shared_instances": int(len(shared))}
    strict = pd.concat([pa.loc[shared, "strict_ias"].rename("a"), pb.loc[shared, "strict_ias"].rename("b")], axis=1).dropna()
    if len(strict):
        res = stats.mcnemar(strict["a"].astype(int).to_numpy(), strict["b"].astype(int).to_numpy())
        out |= {"mcnemar_p": res.p_value, "mcnemar_method": res.method, "mcnemar_n": int(len(strict)), "a_only": res.a_only, "b_only": res.b_only}
    else:
        out |= {"mcnemar_p": np.nan, "mcnemar_method": "", "mcnemar_n": 0, "a_only": 0, "b_only": 0}
    if keys and len(shared):
        out |= _bootstrap_score_diff(pa.loc[shared], pb.loc[shared], keys, spec, n_resamples, seed)
    else:
        out |= {"score_diff": np.nan, "score_ci_low": np.nan, "score_ci_high": np.nan}
    sig_boot = not np.isnan(out["score_ci_low"]) and (out["score_ci_low"] > 0 or out["score_ci_high"] < 0)
    sig_mc = not np.isnan(out["mcnemar_p"]) and out["mcnemar_p"] < 0.05
    out["significant"] = bool(sig_boot or sig_mc)
    out["verdict"] = (
        f"{a} and {b} differ significantly" + (" (weighted-score bootstrap CI excludes 0)" if sig_boot else "") + (" (McNemar on Strict IAS p < .05)" if sig_mc else "")
        if out["significant"] else f"{a} and {b} are not significantly different on these instances: treat them as tied and decide on cost or other factors"
    )
    return out


def _bootstrap_score_diff(pa: pd.DataFrame, pb: pd.DataFrame, keys: list[str], spec: PickSpec, n_resamples: int, seed: int) -> dict:
    """Paired bootstrap (instances resampled) of the weighted-score difference between two aligned frames."""
    xa = pa[keys].to_numpy(float)
    xb = pb[keys].to_numpy(float)
    k = len(keys)
    weights = np.array([spec.weights[m] for m in keys])
    inverted = np.array(keys) == "over_abstention"
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        reps = readmodel.bootstrap_means(np.column_stack([xa, xb]), n_resamples, seed)
        ra, rb = (np.where(inverted, 1 - r, r) for r in (reps[:, :k], reps[:, k:]))

        def wscore(r: np.ndarray) -> np.ndarray:
            return np.nansum(r * weights, axis=1) / np.where(~np.isnan(r), weights, 0).sum(axis=1)

        diff = wscore(ra) - wscore(rb)
        diff = diff[~np.isnan(diff)]
        est = weighted_score(dict(zip(keys, np.nanmean(xa, axis=0), strict=True)), spec.weights) - weighted_score(
            dict(zip(keys, np.nanmean(xb, axis=0), strict=True)), spec.weights)
    low, high = np.quantile(diff, [0.025, 0.975]) if diff.size else (np.nan, np.nan)
    return {"score_diff": float(est), "score_ci_low": float(low), "score_ci_high": float(high)}


def _pct(v: float) -> str:
    return "—" if v is None or (isinstance(v, float) and np.isnan(v)) else f"{v:.1%}"


def _summary_rows(result: PickResult) -> list[list[str]]:
    rows = []
    for r in result.ranking.to_dict("records"):
        rows.append([str(r["rank"]), r["model"], _pct(r["score"]), "yes" if r["eligible"] else "no", f"${r['cost_per_1k']:.2f}",
                     _pct(r["strict_ias"]), _pct(r["rejection"]), _pct(r["conflict_recognition"]), r["reason"]])
    return rows


SUMMARY_HEADER = ["#", "Model", "Weighted score", "Eligible", "Cost / 1k", "Strict IAS", "Rejection", "Conflict recog.", "Why"]


def _scope_lines(result: PickResult, judge: str, runs: str) -> list[str]:
    s = result.spec
    weights = ", ".join(f"{readmodel.METRICS[m].label} ×{w:g}" for m, w in s.weights.items() if w > 0) or "none"
    floors = ", ".join(f"{readmodel.METRICS[m].label} {'≤' if m == 'over_abstention' else '≥'} {v:.0%}" for m, v in s.floors.items()) or "none"
    return [
        f"Runs: {runs}; judge: {judge}; responses considered: {result.n_responses}",
        f"Domains: {', '.join(s.domains) or 'all'}; subsets: {', '.join(s.modes) or 'all'}",
        f"Weights: {weights}",
        f"Hard floors: {floors}; budget per 1k queries: {'none' if s.budget_per_1k is None else f'${s.budget_per_1k:.2f}'}",
    ]


def _recommendation(result: PickResult) -> str:
    eligible = result.ranking[result.ranking["eligible"]]
    if eligible.empty:
        return "No candidate meets every floor and the budget; relax a floor or raise the budget, or evaluate more models."
    return f"Recommended generator: {eligible['model'].iloc[0]}."


def summary_markdown(result: PickResult, judge: str, runs: str) -> str:
    """The one-page decision summary as Markdown."""
    lines = [f"# Generator choice — {datetime.now(UTC):%Y-%m-%d}", "", f"**{_recommendation(result)}**", ""]
    if result.note:
        lines += [f"> {result.note}", ""]
    lines += ["## Scope", ""] + [f"- {x}" for x in _scope_lines(result, judge, runs)] + ["", "## Ranking", ""]
    lines += ["| " + " | ".join(SUMMARY_HEADER) + " |", "|" + "---|" * len(SUMMARY_HEADER)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in _summary_rows(result)]
    if result.top_two:
        t = result.top_two
        lines += ["", "## Top two", "", f"- {t['verdict']}.",
                  f"- McNemar on Strict IAS ({t['mcnemar_n']} shared instances, {t['mcnemar_method'] or 'n/a'}): p = {t['mcnemar_p']:.3g}",
                  f"- Weighted-score difference {t['score_diff']:+.1%}, 95% paired bootstrap CI [{t['score_ci_low']:+.1%}, {t['score_ci_high']:+.1%}]"]
    return "\n".join(lines) + "\n"


def summary_html(result: PickResult, judge: str, runs: str) -> str:
    """The one-page decision summary as a standalone HTML document (all text escaped)."""
    e = html.escape
    head = "".join(f"<th>{e(h)}</th>" for h in SUMMARY_HEADER)
    body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in _summary_rows(result))
    scope = "".join(f"<li>{e(x)}</li>" for x in _scope_lines(result, judge, runs))
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>Generator choice</title>",
        "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}</style>",
        f"</head><body><h1>Generator choice — {datetime.now(UTC):%Y-%m-%d}</h1><p><strong>{e(_recommendation(result))}</strong></p>",
    ]
    if result.note:
        parts.append(f"<p><em>{e(result.note)}</em></p>")
    parts += [f"<h2>Scope</h2><ul>{scope}</ul>", f"<h2>Ranking</h2><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"]
    if result.top_two:
        t = result.top_two
        parts.append(
            f"<h2>Top two</h2><ul><li>{e(t['verdict'])}.</li>"
            f"<li>McNemar on Strict IAS ({t['mcnemar_n']} shared instances, {e(t['mcnemar_method'] or 'n/a')}): p = {t['mcnemar_p']:.3g}</li>"
            f"<li>Weighted-score difference {t['score_diff']:+.1%}, 95% paired bootstrap CI [{t['score_ci_low']:+.1%}, {t['score_ci_high']:+.1%}]</li></ul>"
        )
    parts.append("</body></html>")
    return "".join(parts)
