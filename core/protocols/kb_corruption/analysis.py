"""RAGStress aggregates, all on readmodel.reference_scores (each response's mcq_accuracy verdict; nothing recomputed).

Per response, `correct` is its mcq_accuracy (1/0) when the verdict is ok (or unparseable: no letter read, counted as
wrong by mcq_accuracy's declaration and counted in the accuracy table) and the condition applies to the item; a
numeric-typo condition on an item whose correct option holds no number is `not_applicable` (recorded at build time in
metadata.ragstress.not_applicable_types), counted and left out, never read as 0.

- Accuracy per (model, condition): mean with the exact (Clopper-Pearson) 95% CI of stats.interval, n, what was left out.
- Corruption impact D(model, type, severity) = clean accuracy - corrupted accuracy on the questions answered under
  both: the mean of per-question differences, a Student-t 95% CI and McNemar's test.
- Resilience gap G(M1, M2, type) = mean over severities of D(M2) - D(M1): per shared question (clean and all three
  severities answered by both models) the difference of the two models' mean drops; a paired t-test on those, its
  CI, and Bonferroni over every (pair, type) row. Positive: M2 is the more vulnerable to that type.
- Mixed vs worst case: unfiltered-mixed accuracy beside the lowest type-filtered accuracy, McNemar on shared questions.
- Capability vs robustness: Spearman over models (baselines excluded) of no-retrieval accuracy against accuracy under
  the corrupted conditions (all, and per type).
- Severity curves per (model, type), flagged when not monotonic in severity.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats as st
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from core.analysis import readmodel, stats
from core.metrics import get_metric
from core.protocols.kb_corruption import (
    CLEAN,
    CONDITION_NAMES,
    CORRUPTED_CONDITIONS,
    CORRUPTION_DELTA,
    MIXED,
    NAME,
    NO_RETRIEVAL,
    SEVERITIES,
    TYPE_LABELS,
    TYPES,
    canonical,
    condition_parts,
    condition_profile,
)
from core.scoring.judges.names import judge_label
from core.store.models import Document, Instance, Response

PROTOCOL = NAME
METRIC = "mcq_accuracy"
SCORE_COLUMNS = ["run_id", "response_id", "judge", "model", "instance_uid", "condition", "type", "severity",
                 "applicable", "status", "correct"]
ACCURACY_COLUMNS = ["judge", "judge_label", "model", "condition", "type", "severity", "accuracy", "ci_low", "ci_high",
                    "n", "n_scored", "n_not_applicable", "n_error", "n_unscored", "n_unparseable", "n_skipped", "small_n"]
STATE_COUNTS = list(readmodel.STATE_COLUMNS.values())  # n_scored, ..., n_skipped: the responses behind a row
IMPACT_COLUMNS = ["judge", "judge_label", "model", "type", "severity", "condition", "clean_accuracy",
                  "corrupted_accuracy", "delta", "ci_low", "ci_high", "p_value", "n", "small_n", *STATE_COUNTS]
GAP_COLUMNS = ["judge", "judge_label", "model_1", "model_2", "type", "gamma", "ci_low", "ci_high", "t", "p_value",
               "p_bonferroni", "n", "small_n", "note", *STATE_COUNTS]
MIXED_COLUMNS = ["judge", "judge_label", "model", "mixed_accuracy", "mixed_low", "mixed_high", "mixed_n",
                 "worst_condition", "worst_accuracy", "worst_low", "worst_high", "worst_n", "gap", "p_value",
                 "n_shared", "mixed_above_worst", *STATE_COUNTS]
CURVE_COLUMNS = ["judge", "judge_label", "model", "type", *(f"{p}_{s}" for s in SEVERITIES for p in ("acc", "n")),
                 "shape", "non_monotonic", "beyond_ci"]
ROBUST_COLUMNS = ["judge", "judge_label", "model", "no_retrieval", "corrupted", *TYPES, *STATE_COUNTS]
CORR_COLUMNS = ["judge", "judge_label", "robustness", "rho", "p_value", "n_models", "note"]


def _profiles(engine: Engine, uids: Iterable[str]) -> dict[str, dict]:
    """metadata.ragstress of the latest stored version of each RAGStress instance uid."""
    wanted = set(uids)
    with Session(engine) as session:
        rows = session.exec(select(Instance.uid, Instance.meta).where(col(Instance.protocol) == PROTOCOL)
                            .order_by(col(Instance.version))).all()
    return {uid: (meta or {}).get("ragstress", {}) for uid, meta in rows if uid in wanted}


def stress_scores(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """One row per (model, question, condition) of RAGStress responses (the latest when answered twice, '' read as
    clean), with type, severity, whether the condition applies to the item and `correct` (NaN unless ok and
    applicable); `status` is the verdict's, or 'not_applicable' by design."""
    raw = readmodel.reference_scores(engine, run_ids, judge, protocol=PROTOCOL)
    if raw.empty:
        return pd.DataFrame(columns=SCORE_COLUMNS)
    frame = raw.assign(condition=raw["condition"].map(canonical)).sort_values("response_id")
    frame = frame.drop_duplicates(["model", "instance_uid", "condition"], keep="last")
    parts = frame["condition"].map(condition_parts)
    frame["type"], frame["severity"] = parts.str[0], parts.str[1]
    absent = _profiles(engine, frame["instance_uid"].unique())
    frame["applicable"] = [t is None or t not in absent.get(u, {}).get("not_applicable_types", [])
                           for u, t in zip(frame["instance_uid"], frame["type"], strict=True)]
    frame["status"] = frame[f"{METRIC}_status"].where(frame["applicable"], "not_applicable")
    frame["correct"] = frame[METRIC].where(frame["applicable"] & frame["status"].isin(get_metric(METRIC).counted_statuses()))
    return frame.reindex(columns=SCORE_COLUMNS).reset_index(drop=True)


def response_states(scores: pd.DataFrame, models: Iterable[str], conditions: Iterable[str]) -> dict[str, int]:
    """The count of each score state among the responses of `models` under `conditions` (readmodel.state_counts)."""
    mine = scores[scores["model"].isin(list(models)) & scores["condition"].isin(list(conditions))]
    return readmodel.state_counts(mine["status"])


def summed_states(table: pd.DataFrame) -> dict[str, int]:
    """Each state count column of accuracy rows summed: the responses behind a row derived from those cells."""
    return {column: int(table[column].sum()) for column in STATE_COUNTS}


def _judge_fields(scores: pd.DataFrame) -> dict[str, str]:
    judge = str(scores["judge"].iloc[0]) if not scores.empty else ""
    return {"judge": judge, "judge_label": judge_label(judge) if judge else ""}


def accuracy(scores: pd.DataFrame) -> pd.DataFrame:
    """Accuracy per (model, condition) in condition order: mean, exact 95% CI, n, and the responses left out."""
    rows = []
    for model, group in scores.groupby("model", sort=True):
        for condition in CONDITION_NAMES:
            sub = group[group["condition"] == condition]
            if sub.empty:
                continue
            ci = stats.interval(sub["correct"].to_numpy(dtype=float), get_metric(METRIC))
            kind, severity = condition_parts(condition)
            rows.append({**_judge_fields(scores), "model": model, "condition": condition, "type": kind,
                         "severity": severity, "accuracy": ci.mean, "ci_low": ci.ci_low, "ci_high": ci.ci_high,
                         "n": ci.n, **readmodel.state_counts(sub["status"]), "small_n": bool(0 < ci.n < stats.SMALL_N)})
    return pd.DataFrame(rows, columns=ACCURACY_COLUMNS)


def _wide(scores: pd.DataFrame, model: str) -> pd.DataFrame:
    """One model's `correct` as question x condition."""
    sub = scores[scores["model"] == model]
    return sub.pivot(index="instance_uid", columns="condition", values="correct")


def _t_interval(d: np.ndarray) -> tuple[float, float]:
    if len(d) < 2:
        return float("nan"), float("nan")
    half = float(st.t.ppf(0.975, len(d) - 1) * np.std(d, ddof=1) / np.sqrt(len(d)))
    return float(d.mean() - half), float(d.mean() + half)


def _mcnemar_p(a: np.ndarray, b: np.ndarray) -> float:
    return stats.mcnemar(a.astype(bool), b.astype(bool)).p_value if len(a) else float("nan")


def corruption_impact(scores: pd.DataFrame) -> pd.DataFrame:
    """D(model, type, severity) = clean - corrupted accuracy on the questions answered under both."""
    rows = []
    for model in sorted(scores["model"].unique()):
        wide = _wide(scores, model)
        for condition in CORRUPTED_CONDITIONS:
            if CLEAN not in wide or condition not in wide:
                continue
            pair = wide[[CLEAN, condition]].dropna()
            clean, bad = pair[CLEAN].to_numpy(), pair[condition].to_numpy()
            d = clean - bad
            low, high = _t_interval(d)
            kind, severity = condition_parts(condition)
            rows.append({**_judge_fields(scores), "model": model, "type": kind, "severity": severity,
                         "condition": condition, "clean_accuracy": clean.mean() if len(d) else np.nan,
                         "corrupted_accuracy": bad.mean() if len(d) else np.nan,
                         "delta": d.mean() if len(d) else np.nan, "ci_low": low, "ci_high": high,
                         "p_value": _mcnemar_p(clean, bad), "n": len(d), "small_n": 0 < len(d) < stats.SMALL_N,
                         **response_states(scores, [model], [CLEAN, condition])})
    return pd.DataFrame(rows, columns=IMPACT_COLUMNS)


def _type_drops(wide: pd.DataFrame, kind: str) -> pd.Series:
    """Per question: mean over the three severities of (clean - corrupted), where all four are answered."""
    columns = [CLEAN, *(f"{kind}_{s}" for s in SEVERITIES)]
    if any(c not in wide for c in columns):
        return pd.Series(dtype=float)
    full = wide[columns].dropna()
    return full[[c for c in columns[1:]]].rsub(full[CLEAN], axis=0).mean(axis=1)


def _gap_row(first: pd.Series, second: pd.Series) -> dict:
    shared = first.index.intersection(second.index)
    g = (second[shared] - first[shared]).to_numpy(dtype=float)
    n = len(g)
    if n == 0:
        return {"gamma": np.nan, "ci_low": np.nan, "ci_high": np.nan, "t": np.nan, "p_value": np.nan, "n": 0,
                "note": "no shared question with clean and all three severities answered by both"}
    low, high = _t_interval(g)
    if n < 2 or np.std(g, ddof=1) == 0:
        p = 1.0 if n >= 2 and g.mean() == 0 else (0.0 if n >= 2 else np.nan)
        note = "every shared question differs by the same amount: t undefined" if n >= 2 else "one shared question"
        return {"gamma": g.mean(), "ci_low": low, "ci_high": high, "t": np.nan, "p_value": p, "n": n, "note": note}
    test = stats.paired_t(second[shared].to_numpy(dtype=float), first[shared].to_numpy(dtype=float))
    return {"gamma": g.mean(), "ci_low": low, "ci_high": high, "t": test.t, "p_value": test.p_value, "n": n, "note": ""}


def resilience_gaps(scores: pd.DataFrame, models: Sequence[str] | None = None) -> pd.DataFrame:
    """G(M1, M2, type) for every pair of models (M1 before M2 in `models`, default sorted) and corruption type."""
    models = list(models) if models is not None else sorted(scores["model"].unique())
    drops = {m: {k: _type_drops(_wide(scores, m), k) for k in TYPES} for m in models}
    rows = [{**_judge_fields(scores), "model_1": m1, "model_2": m2, "type": kind,
             **_gap_row(drops[m1][kind], drops[m2][kind]),
             **response_states(scores, [m1, m2], [CLEAN, *(f"{kind}_{s}" for s in SEVERITIES)])}
            for m1, m2 in combinations(models, 2) for kind in TYPES]
    frame = pd.DataFrame(rows, columns=[c for c in GAP_COLUMNS if c not in ("p_bonferroni", "small_n")])
    tested = frame["p_value"].notna()
    frame["p_bonferroni"] = np.nan
    if tested.any():
        frame.loc[tested, "p_bonferroni"] = stats.bonferroni(frame.loc[tested, "p_value"].to_numpy()).adjusted
    frame["small_n"] = (frame["n"] > 0) & (frame["n"] < stats.SMALL_N)
    return frame.reindex(columns=GAP_COLUMNS)


def mixed_vs_worst(scores: pd.DataFrame, table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per model: unfiltered-mixed accuracy beside its worst type-filtered condition, McNemar on shared questions."""
    table = accuracy(scores) if table is None else table
    rows = []
    for model, group in table.groupby("model", sort=True):
        mixed = group[group["condition"] == MIXED]
        typed = group[group["type"].notna() & (group["n"] > 0)]
        if mixed.empty or typed.empty:
            continue
        worst = typed.sort_values(["accuracy", "condition"]).iloc[0]
        wide = _wide(scores, model)
        pair = wide[[MIXED, worst["condition"]]].dropna()
        gap = float(mixed["accuracy"].iloc[0] - worst["accuracy"])
        rows.append({**_judge_fields(scores), "model": model, "mixed_accuracy": mixed["accuracy"].iloc[0],
                     "mixed_low": mixed["ci_low"].iloc[0], "mixed_high": mixed["ci_high"].iloc[0],
                     "mixed_n": int(mixed["n"].iloc[0]), "worst_condition": worst["condition"],
                     "worst_accuracy": worst["accuracy"], "worst_low": worst["ci_low"], "worst_high": worst["ci_high"],
                     "worst_n": int(worst["n"]), "gap": gap,
                     "p_value": _mcnemar_p(pair[MIXED].to_numpy(), pair[worst["condition"]].to_numpy()),
                     "n_shared": len(pair), "mixed_above_worst": gap > 0,
                     **summed_states(group[group["condition"].isin([MIXED, worst["condition"]])])})
    return pd.DataFrame(rows, columns=MIXED_COLUMNS)


def _shape(acc: list[float]) -> tuple[str, bool]:
    a, b, c = acc
    if any(np.isnan(acc)):
        return "no data", False
    if (a - b) * (b - c) < 0:
        return ("dip at moderate" if b < min(a, c) else "peak at moderate"), True
    if a == b == c:
        return "flat", False
    return ("falls with severity" if a >= c else "rises with severity"), False


def severity_curves(table: pd.DataFrame) -> pd.DataFrame:
    """Per (model, type): accuracy and n at each severity; the shape, flagged when not monotonic, and whether the
    moderate point's CI clears both other points (beyond noise)."""
    rows = []
    for (model, kind), group in table[table["type"].notna()].groupby(["model", "type"], sort=True):
        cells = group.set_index("severity").reindex(list(SEVERITIES))
        acc = [float(x) for x in cells["accuracy"]]
        shape, bumpy = _shape(acc)
        mid = cells.loc["moderate"]
        beyond = bumpy and (mid["ci_high"] < min(acc[0], acc[2]) or mid["ci_low"] > max(acc[0], acc[2]))
        rows.append({"judge": group["judge"].iloc[0], "judge_label": group["judge_label"].iloc[0], "model": model,
                     "type": kind, **{f"acc_{s}": cells.loc[s, "accuracy"] for s in SEVERITIES},
                     **{f"n_{s}": 0 if pd.isna(cells.loc[s, "n"]) else int(cells.loc[s, "n"]) for s in SEVERITIES},
                     "shape": shape, "non_monotonic": bumpy, "beyond_ci": bool(beyond)})
    return pd.DataFrame(rows, columns=CURVE_COLUMNS)


def robustness_by_model(table: pd.DataFrame) -> pd.DataFrame:
    """Per model: no-retrieval accuracy, mean accuracy over the corrupted conditions, and per corruption type."""
    rows = []
    for model, group in table.groupby("model", sort=True):
        by = group.set_index("condition")["accuracy"]
        typed = group[group["type"].notna()]
        rows.append({"judge": group["judge"].iloc[0], "judge_label": group["judge_label"].iloc[0], "model": model,
                     "no_retrieval": by.get(NO_RETRIEVAL, np.nan), "corrupted": typed["accuracy"].mean(),
                     **{k: typed.loc[typed["type"] == k, "accuracy"].mean() for k in TYPES},
                     **summed_states(group[group["condition"].isin([NO_RETRIEVAL, *CORRUPTED_CONDITIONS])])})
    return pd.DataFrame(rows, columns=ROBUST_COLUMNS)


def capability_vs_robustness(table: pd.DataFrame, exclude: Iterable[str] = ()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-model table, Spearman of no-retrieval accuracy vs corrupted accuracy overall and per type over the models
    not excluded, with the reason when undefined)."""
    per_model = robustness_by_model(table)
    kept = per_model[~per_model["model"].isin(set(exclude))]
    rows = []
    for column in ("corrupted", *TYPES):
        pair = kept[["no_retrieval", column]].dropna()
        row = {**_judge_fields(table), "robustness": "all corruptions" if column == "corrupted" else TYPE_LABELS[column],
               "rho": np.nan, "p_value": np.nan, "n_models": len(pair), "note": ""}
        if len(pair) < 3:
            row["note"] = "needs 3+ models (baselines excluded)"
        elif pair["no_retrieval"].nunique() == 1 or pair[column].nunique() == 1:
            row["note"] = "undefined: a constant column"
        else:
            result = stats.spearman(pair["no_retrieval"], pair[column])
            row.update(rho=result.rho, p_value=result.p_value)
        rows.append(row)
    return per_model, pd.DataFrame(rows, columns=CORR_COLUMNS)


def retrieval_profile(engine: Engine, uids: Iterable[str]) -> pd.DataFrame:
    """Per retrieval condition over the given questions: the no-retrieval rate (zero documents under the filter),
    own-entry retrieval, corrupted share of the retrieved documents (recorded at build time)."""
    profiles = _profiles(engine, uids)
    table = condition_profile(p.get("retrieval", {}) for p in profiles.values())
    return pd.DataFrame([{"condition": name, **values} for name, values in table.items()])


def item_rows(scores: pd.DataFrame, model: str, condition: str) -> pd.DataFrame:
    """The responses behind one (model, condition) cell, wrong answers first."""
    sub = scores[(scores["model"] == model) & (scores["condition"] == condition)]
    return sub[["response_id", "model", "instance_uid", "condition", "status", "correct"]].sort_values(
        ["correct", "instance_uid"], na_position="first").reset_index(drop=True)


def response_documents(engine: Engine, response_id: int, judge: str) -> dict:
    """One response for drill-down (readmodel.response_details) with its question's options and key, its
    mcq_accuracy verdict under `judge`, and the documents its prompt held, in prompt order, with their metadata."""
    detail = readmodel.response_details(engine, response_id, judge)
    if not detail:
        return {}
    with Session(engine) as session:
        resp = session.get_one(Response, response_id)
        reference, meta = session.exec(select(Instance.reference, Instance.meta)
                                       .where(col(Instance.id) == resp.instance_id)).one()
        condition = canonical(resp.condition)
        mine = {d.doc_uid: d for d in session.exec(select(Document).where(col(Document.instance_id) == resp.instance_id))
                if (d.variant or {}).get("retrieved_for") == condition}
    order = [u for u in (resp.prompt_meta or {}).get("doc_order", []) if u in mine] or sorted(
        mine, key=lambda u: mine[u].position)
    own = (meta or {}).get("ragstress", {}).get("source_question_id")
    rows = [{"rank": i + 1, "doc_id": uid, "own_entry": mine[uid].variant.get("source_question_id") == own,
             **{k: mine[uid].variant.get(k) for k in ("corruption_type", "severity", "is_corrupted", "marked_key",
                                                      "claimed_key")}, "text": mine[uid].text}
            for i, uid in enumerate(order)]
    metrics = detail["metrics"]
    verdicts = metrics[(metrics["metric"] == METRIC) & (metrics["judge"] == judge)]
    verdict = verdicts.iloc[-1][["status", "value", "reason"]].to_dict() if not verdicts.empty else None
    return {"response_id": response_id, "model": detail["model"], "instance_uid": detail["instance_uid"],
            "condition": condition, "query": detail["query"], "choices": (reference or {}).get("choices", {}),
            "answer_key": (reference or {}).get("answer_key"), "response": detail["response"], "verdict": verdict,
            "documents": rows}


def decision_scores(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """The decision's per-response values (core.analysis.readmodel.decision_scores): stress_scores' responses with
    mcq_accuracy (`correct`) and, on each corrupted-condition response, corruption_delta = its correctness minus the
    same model's on the question under clean retrieval (the per-question difference the Δ table averages); not
    applicable elsewhere, undetermined where either verdict is."""
    frame = stress_scores(engine, run_ids, judge)
    if frame.empty:
        return pd.DataFrame(columns=[*SCORE_COLUMNS, "domain", "language", CORRUPTION_DELTA])
    ids = readmodel.reference_scores(engine, run_ids, judge, protocol=PROTOCOL).set_index("response_id")
    frame = frame.assign(domain=frame["response_id"].map(ids["domain"]), language=frame["response_id"].map(ids["language"]))
    frame[METRIC], frame[f"{METRIC}_status"] = frame["correct"], frame["status"]
    clean = frame[frame["condition"] == CLEAN].set_index(["model", "instance_uid"])
    key = pd.MultiIndex.from_frame(frame[["model", "instance_uid"]])
    corrupted = frame["condition"].isin(CORRUPTED_CONDITIONS) & frame["applicable"].astype(bool)
    base = pd.Series(clean["correct"].reindex(key).to_numpy(), index=frame.index)
    frame[CORRUPTION_DELTA] = (frame["correct"] - base).where(corrupted)
    base_status = pd.Series(clean["status"].reindex(key).to_numpy(), index=frame.index)
    undetermined = base_status.where(base_status.notna() & (base_status != "ok"), frame["status"])
    status = np.where(~corrupted, "not_applicable", np.where(frame[CORRUPTION_DELTA].notna(), "ok", undetermined))
    frame[f"{CORRUPTION_DELTA}_status"] = pd.Series(status, index=frame.index, dtype=object).where(pd.notna(status))
    return frame
