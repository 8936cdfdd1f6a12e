"""RAG-Stress aggregates, all built on readmodel.reference_scores (no per-response metric is recomputed here).

Per response: `correct` is the reference metric of its answer type (mcq_accuracy for MCQ, exact_match = 1 for open
QA: containment, language-aware), `designated` is the `wrong_answer` metric (the response gives the designated wrong
answer of `reference.wrong_answers`, by the same containment; for MCQ its option letter), and `misled` is designated
and not correct. Undetermined values (a metric not ok) stay NaN and are counted, never read as 0. An MCQ answer whose
letter cannot be read is `unparseable`: counted as wrong (mcq_accuracy's declaration) and counted in every table.

- Misleading rate (MR): on a model's closed-book-correct questions, the share of misled responses under a misleading
  condition; "any wrong" is the share no longer correct (a refusal counts as wrong).
- Clean and closed-book accuracy on every question answered.
- Policy gap: MR(prioritise documents) - MR(may rely on prior knowledge) on the same questions, McNemar per position;
  over all positions a sign test on each question's count of misled positions (McNemar on those counts' order), so
  one question counts once.
- Paired audit of two models or checkpoints on the same questions: harmful override (closed-book correct, wrong with
  evidence) and beneficial correction (closed-book wrong, correct with clean evidence), McNemar between the two.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from core.analysis import readmodel, stats
from core.metrics import get_metric
from core.protocols.misleading_evidence import CLEAN, CLOSED_BOOK, MISLEADING_CONDITIONS, NAME, POLICIES, POSITIONS
from core.scoring.judges.names import judge_label

OUTCOME_COLUMNS = ["judge", "dataset", "model", "instance_uid", "domain", "language", "answer_type", "condition",
                   "response_id", "correct", "designated", "misled", "unparseable", "status"]
RATE_COLUMNS = ["judge", "judge_label", "dataset", "model", "condition", "policy", "position", "n_closed_book_correct", "n",
                "n_undetermined", "n_unparseable", "n_scored", "n_not_applicable", "n_error", "n_unscored",
                "n_skipped", "mr", "mr_low", "mr_high", "any_wrong", "any_wrong_low", "any_wrong_high",
                "small_n"]
ACCURACY_COLUMNS = ["judge", "judge_label", "dataset", "model", "condition", "n", "n_undetermined", "n_unparseable", "n_scored",
                    "n_not_applicable", "n_error", "n_unscored", "n_skipped", "accuracy", "ci_low", "ci_high",
                    "small_n"]
GAP_COLUMNS = ["judge", "judge_label", "dataset", "model", "position", "n_pairs", "mr_documents", "mr_prior_knowledge",
               "gap", "gap_low", "gap_high",
               "documents_only", "prior_knowledge_only", "statistic", "p_value", "test", "small_n"]
AUDIT_COLUMNS = ["judge", "judge_label", "dataset", "outcome", "condition", "model_a", "model_b", "n", "count_a",
                 "count_b", "rate_a", "rate_b", "a_only", "b_only", "statistic", "p_value", "test", "small_n",
                 *(f"{side}_{column}" for side in "ab" for column in readmodel.STATE_COLUMNS.values())]
MEAN_COLUMNS = ["judge", "judge_label", "dataset", "measure", "condition", "mean", "ci_low", "ci_high", "n_questions",
                "n_models", "small_n"]
ALL_POSITIONS = "all"
CLEAN_ACCURACY, GAP = "clean_accuracy", "policy_gap"
BOOTSTRAP_RESAMPLES = 2000


MISLEADING_RATE, ANY_WRONG, CORRECT = "misleading_rate", "any_wrong_rate", "rag_stress_correct"


def _counted(frame: pd.DataFrame, metric: str) -> pd.Series:
    """Whether each response's `metric` enters the mean: its status is one the metric's declaration counts."""
    return frame[f"{metric}_status"].isin(get_metric(metric).counted_statuses())


def dataset_label(domain: str, language: str | None) -> str:
    """The dataset a RAG-Stress instance belongs to, keyed by its language ('RAG-Stress MedQA', 'zh' -> 'MedQA (zh)'):
    English and Chinese MedQA share a domain but are separate datasets in every figure."""
    base = str(domain).removeprefix("RAG-Stress").strip() or "unknown"
    return f"{base} ({language})" if isinstance(language, str) and language else base


def outcomes(scores: pd.DataFrame) -> pd.DataFrame:
    """Per (model, instance, condition), the latest response's correct / designated / misled (1.0, 0.0 or NaN)."""
    if scores.empty:
        return pd.DataFrame(columns=OUTCOME_COLUMNS)
    latest = scores.loc[scores.groupby(["model", "instance_uid", "condition"])["response_id"].idxmax()]
    mcq = latest["answer_type"] == "mcq"
    correct = np.where(mcq, latest["mcq_accuracy"], (latest["exact_match"] >= 1).astype(float))
    known = np.where(mcq, _counted(latest, "mcq_accuracy"), _counted(latest, "exact_match"))
    out = latest.assign(correct=np.where(known, correct, np.nan), designated=latest["wrong_answer"],
                        unparseable=(mcq & (latest["mcq_accuracy_status"] == "unparseable")).astype(float),
                        status=np.where(mcq, latest["mcq_accuracy_status"], latest["exact_match_status"]),
                        dataset=[dataset_label(d, lang) for d, lang in zip(latest["domain"], latest["language"],
                                                                           strict=True)])
    out["misled"] = np.where(out["correct"].notna() & out["designated"].notna(),
                             ((out["designated"] == 1) & (out["correct"] == 0)).astype(float), np.nan)
    return out.reindex(columns=OUTCOME_COLUMNS).sort_values(["dataset", "model", "instance_uid", "condition"],
                                                            ignore_index=True)


def load_outcomes(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """outcomes() of the RAG-Stress responses of `run_ids` under `judge` (reference metrics are judge-independent,
    but stored per scoring judge)."""
    return outcomes(readmodel.reference_scores(engine, run_ids, judge, protocol=NAME))


def _by_condition(out: pd.DataFrame, condition: str, column: str) -> pd.DataFrame:
    """model x instance_uid -> `column` under one condition."""
    rows = out[out["condition"] == condition]
    return rows.pivot_table(index="instance_uid", columns="model", values=column, aggfunc="last", dropna=False)


def closed_book_correct(out: pd.DataFrame) -> pd.DataFrame:
    """(model, instance_uid) of each model's questions answered correctly closed book."""
    rows = out[(out["condition"] == CLOSED_BOOK) & (out["correct"] == 1)]
    return rows[["model", "instance_uid"]].reset_index(drop=True)


def _mean_ci(values: np.ndarray, metric: str) -> tuple[float, float, float, int]:
    if not np.isfinite(values).any():
        return np.nan, np.nan, np.nan, 0
    ci = stats.interval(values.astype(float), get_metric(metric))
    return ci.mean, ci.ci_low, ci.ci_high, ci.n


def _judge(out: pd.DataFrame) -> str:
    return str(out["judge"].iloc[0]) if not out.empty else ""


def per_dataset(out: pd.DataFrame, build: Callable[[pd.DataFrame], pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    """`build` applied to each dataset's outcomes on its own (nothing pooled across datasets), keyed by `dataset`."""
    parts = [build(part).assign(dataset=name) for name, part in out.groupby("dataset", sort=True)]
    parts = [part for part in parts if not part.empty]
    return pd.concat(parts, ignore_index=True).reindex(columns=columns) if parts else pd.DataFrame(columns=columns)


def misleading_rates(out: pd.DataFrame) -> pd.DataFrame:
    """Per dataset x model x misleading condition: MR and 'any wrong' (95% Clopper-Pearson) on the model's
    closed-book-correct questions, n with a value, undetermined responses and questions without a response counted."""
    return per_dataset(out, _dataset_rates, RATE_COLUMNS)


def _dataset_rates(out: pd.DataFrame) -> pd.DataFrame:
    rows = []
    judge = _judge(out)
    known = closed_book_correct(out)
    for model in sorted(out["model"].unique()):
        subset = set(known.loc[known["model"] == model, "instance_uid"])
        mine = out[(out["model"] == model) & out["instance_uid"].isin(subset)]
        for condition, (policy, position) in MISLEADING_CONDITIONS.items():
            cell = mine[mine["condition"] == condition]
            mr, mr_low, mr_high, n = _mean_ci(cell["misled"].to_numpy(dtype=float), MISLEADING_RATE)
            wrong = 1.0 - cell["correct"].to_numpy(dtype=float)
            any_wrong, aw_low, aw_high, _ = _mean_ci(wrong, ANY_WRONG)
            rows.append({"judge": judge, "judge_label": judge_label(judge), "model": model, "condition": condition,
                         "policy": policy, "position": position, "n_closed_book_correct": len(subset), "n": n,
                         "n_undetermined": int(len(cell) - n), **readmodel.state_counts(cell["status"]),
                         "mr": mr, "mr_low": mr_low, "mr_high": mr_high,
                         "any_wrong": any_wrong, "any_wrong_low": aw_low, "any_wrong_high": aw_high,
                         "small_n": bool(0 < n < stats.SMALL_N)})
    return pd.DataFrame(rows, columns=RATE_COLUMNS)


def accuracy(out: pd.DataFrame, conditions: Sequence[str] = (CLOSED_BOOK, CLEAN)) -> pd.DataFrame:
    """Per dataset x model x condition: accuracy on every question answered (95% CI), n and undetermined responses."""
    return per_dataset(out, lambda part: _dataset_accuracy(part, conditions), ACCURACY_COLUMNS)


def _dataset_accuracy(out: pd.DataFrame, conditions: Sequence[str]) -> pd.DataFrame:
    rows = []
    judge = _judge(out)
    for (model, condition), cell in out[out["condition"].isin(conditions)].groupby(["model", "condition"]):
        value, low, high, n = _mean_ci(cell["correct"].to_numpy(dtype=float), CORRECT)
        rows.append({"judge": judge, "judge_label": judge_label(judge), "model": model, "condition": condition,
                     "n": n, "n_undetermined": int(len(cell) - n), **readmodel.state_counts(cell["status"]),
                     "accuracy": value, "ci_low": low, "ci_high": high,
                     "small_n": bool(0 < n < stats.SMALL_N)})
    return pd.DataFrame(rows, columns=ACCURACY_COLUMNS)


@dataclass(frozen=True)
class _Grid:
    """One dataset's outcomes as arrays over (condition, model, question), questions in sorted order (as a pivot
    sorts them): `correct` and `misled` (NaN: no response or undetermined) and `known`, each model's closed-book-
    correct questions (model, question)."""

    models: list[str]
    questions: np.ndarray
    correct: np.ndarray
    misled: np.ndarray
    known: np.ndarray


_GRID_CONDITIONS = [CLOSED_BOOK, CLEAN, *MISLEADING_CONDITIONS]


def _grid(out: pd.DataFrame) -> _Grid:
    """`out` (one row per model, question and condition, as outcomes() gives) as a _Grid, in one pass."""
    m, models = pd.factorize(out["model"], sort=True)
    q, questions = pd.factorize(out["instance_uid"], sort=True)
    c = out["condition"].map({name: i for i, name in enumerate(_GRID_CONDITIONS)}).to_numpy(dtype=float)
    keep = ~np.isnan(c)
    shape = (len(_GRID_CONDITIONS), len(models), len(questions))
    cell = np.ravel_multi_index((c[keep].astype(np.intp), m[keep], q[keep]), shape)
    if len(cell) and np.bincount(cell).max() > 1:
        raise ValueError("RAG-Stress outcomes hold more than one response per model, question and condition")
    arrays = {}
    for column in ("correct", "misled"):
        grid = np.full(shape, np.nan)
        grid.ravel()[cell] = out[column].to_numpy(dtype=float)[keep]
        arrays[column] = grid
    known = arrays["correct"][0] == 1
    return _Grid([str(x) for x in models], np.asarray(questions, dtype=object), arrays["correct"], arrays["misled"],
                 known)


def _condition(name: str) -> int:
    return _GRID_CONDITIONS.index(name)


@dataclass(frozen=True)
class _Pairs:
    """One model's paired misled outcomes at one position on its closed-book-correct questions judged under both
    policies: the question mask and the documents / prior-knowledge values of those questions (in question order)."""

    mask: np.ndarray
    documents: np.ndarray
    prior_knowledge: np.ndarray


def _pairs(grid: _Grid, model: int, position: str) -> _Pairs:
    docs = grid.misled[_condition(f"misleading_documents_{position}"), model]
    prior = grid.misled[_condition(f"misleading_prior_knowledge_{position}"), model]
    mask = grid.known[model] & ~np.isnan(docs) & ~np.isnan(prior)
    return _Pairs(mask, docs[mask], prior[mask])


def _gap_row(model: str, position: str, d: tuple[np.ndarray, np.ndarray], tested: tuple[np.ndarray, np.ndarray],
             n_pairs: int, pooled: tuple[np.ndarray, np.ndarray]) -> dict:
    """One policy-gap row: the pairs' documents and prior-knowledge values `d`, the arrays McNemar compares, and the
    per-question pooled sums and counts of documents - prior_knowledge behind the bootstrap."""
    test = stats.mcnemar(*tested) if n_pairs else None
    gap, low, high, _, _ = model_mean(pooled[0][:, None], pooled[1][:, None])
    return {"model": model, "position": position, "n_pairs": n_pairs,
            "mr_documents": float(d[0].mean()) if n_pairs else np.nan,
            "mr_prior_knowledge": float(d[1].mean()) if n_pairs else np.nan,
            "gap": gap, "gap_low": low, "gap_high": high,
            "documents_only": test.a_only if test else 0, "prior_knowledge_only": test.b_only if test else 0,
            "statistic": test.statistic if test else np.nan, "p_value": test.p_value if test else np.nan,
            "test": f"McNemar ({test.method})" if test else "", "small_n": bool(0 < n_pairs < stats.SMALL_N)}


def policy_gap(out: pd.DataFrame) -> pd.DataFrame:
    """Per dataset, model and position (and over all positions): MR under 'prioritise the documents' minus MR under
    'may rely on prior knowledge' on the same closed-book-correct questions, with a paired test and a 95% bootstrap
    interval over questions. Over all positions the gap pools the (question, position) pairs and the test is a sign
    test over questions (McNemar on whether a question was misled at more positions under one policy than the other),
    so each question counts once."""
    return per_dataset(out, _dataset_gap, GAP_COLUMNS)


def _pooled_gap(grid: _Grid, model: int) -> tuple[list[_Pairs], np.ndarray, np.ndarray]:
    """A model's pairs per position and, per question, the sum of documents - prior_knowledge over its positions and
    how many positions it has."""
    pairs = [_pairs(grid, model, position) for position in POSITIONS]
    sums, counts = np.zeros(len(grid.questions)), np.zeros(len(grid.questions))
    for p in pairs:
        sums[p.mask] += p.documents - p.prior_knowledge
        counts[p.mask] += 1
    return pairs, sums, counts


def _dataset_gap(out: pd.DataFrame) -> pd.DataFrame:
    grid, rows = _grid(out), []
    for i, model in enumerate(grid.models):
        pairs, sums, counts = _pooled_gap(grid, i)
        for position, p in zip(POSITIONS, pairs, strict=True):
            n = int(p.mask.sum())
            rows.append(_gap_row(model, position, (p.documents, p.prior_knowledge), (p.documents, p.prior_knowledge),
                                 n, (p.documents - p.prior_knowledge, np.ones(n))))
        docs, prior = np.zeros(len(grid.questions)), np.zeros(len(grid.questions))
        for p in pairs:
            docs[p.mask] += p.documents
            prior[p.mask] += p.prior_knowledge
        have = counts > 0
        row = _gap_row(model, ALL_POSITIONS, (np.concatenate([p.documents for p in pairs]),
                                              np.concatenate([p.prior_knowledge for p in pairs])),
                       (docs[have] > prior[have], prior[have] > docs[have]), int(have.sum()),
                       (sums[have], counts[have]))
        rows.append(row | {"test": row["test"].replace("McNemar", "sign test over questions")})
    judge = _judge(out)
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=GAP_COLUMNS)
    return frame.assign(judge=judge, judge_label=judge_label(judge)).reindex(columns=GAP_COLUMNS)


def model_mean(s: np.ndarray, c: np.ndarray) -> tuple[float, float, float, int, int]:
    """(mean, low, high, n_questions, n_models) from per-(question, model) sums `s` and counts `c` of a value (a
    model's repeated values for a question, e.g. positions, pool; questions and models with none are dropped): the
    mean over models of each model's mean, with a 95% percentile bootstrap interval that resamples questions with
    one draw shared by every model (a question counts once however many models answered it); the interval is
    widened to hold the estimate when a skewed bootstrap leaves it outside."""
    rows, cols = c.sum(axis=1) > 0, c.sum(axis=0) > 0
    s, c = s[rows][:, cols], c[rows][:, cols]
    if not s.size:
        return np.nan, np.nan, np.nan, 0, 0

    def stat(ix: np.ndarray) -> np.ndarray:
        draws = ix.astype(int)
        r, n = draws.shape
        # how often each question is drawn in each resample, times its sums and counts (einsum: one thread, no BLAS
        # pool spinning); the sums are of 0/1 outcomes and their differences, so every total is exact
        times = np.bincount((draws + n * np.arange(r)[:, None]).ravel(), minlength=r * n).reshape(r, n).astype(float)
        total, count = np.einsum("rn,nm->rm", times, s), np.einsum("rn,nm->rm", times, c)
        means = np.divide(total, count, out=np.zeros_like(total), where=count > 0)
        return means.sum(axis=1) / np.maximum((count > 0).sum(axis=1), 1)

    result = stats.bootstrap_ci(stat, np.arange(len(s)), n_resamples=BOOTSTRAP_RESAMPLES, seed=0)
    est = result.estimate
    return est, min(result.ci_low, est), max(result.ci_high, est), len(s), int(s.shape[1])


def _masked_mean(values: np.ndarray, mask: np.ndarray) -> tuple[float, float, float, int, int]:
    """model_mean of one value per (model, question) where `mask` holds (arrays shaped model x question)."""
    return model_mean(np.where(mask, values, 0.0).T, mask.astype(float).T)


def _dataset_means(out: pd.DataFrame) -> pd.DataFrame:
    grid = _grid(out)
    clean = grid.correct[_condition(CLEAN)]
    plan = [(CLEAN_ACCURACY, CLEAN, _masked_mean(clean, ~np.isnan(clean)))]
    for condition in MISLEADING_CONDITIONS:
        misled = grid.misled[_condition(condition)]
        plan.append((MISLEADING_RATE, condition, _masked_mean(misled, grid.known & ~np.isnan(misled))))
    pooled = [_pooled_gap(grid, i)[1:] for i in range(len(grid.models))]
    sums = np.stack([p[0] for p in pooled], axis=1) if pooled else np.zeros((len(grid.questions), 0))
    counts = np.stack([p[1] for p in pooled], axis=1) if pooled else np.zeros((len(grid.questions), 0))
    plan.append((GAP, ALL_POSITIONS, model_mean(sums, counts)))
    rows = [{"measure": measure, "condition": condition, "mean": mean, "ci_low": low, "ci_high": high,
             "n_questions": n, "n_models": n_models, "small_n": bool(0 < n < stats.SMALL_N)}
            for measure, condition, (mean, low, high, n, n_models) in plan]
    judge = _judge(out)
    return pd.DataFrame(rows).assign(judge=judge, judge_label=judge_label(judge))


def model_means(out: pd.DataFrame) -> pd.DataFrame:
    """Per dataset, averaged over models (each model's own mean, then their mean): clean accuracy, MR under each
    misleading condition, and the policy gap over all positions (the paper's 'averaged over models and positions');
    each with a 95% bootstrap interval over questions, the questions and models behind it."""
    return per_dataset(out, _dataset_means, MEAN_COLUMNS)


def with_rate_states(frame: pd.DataFrame, rates: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """`frame` (policy gap or position means) with the six state counts of the MR cells (`rates`) behind each row,
    summed over the cells that share its `keys`; a row at position 'all' sums every position."""
    counts = list(readmodel.STATE_COLUMNS.values())
    summed = rates.groupby(keys)[counts].sum().reset_index()
    if "position" in keys:
        others = [k for k in keys if k != "position"]
        pooled = (rates.groupby(others)[counts].sum().reset_index() if others else
                  rates[counts].sum().to_frame().T).assign(position=ALL_POSITIONS)
        summed = pd.concat([summed, pooled], ignore_index=True)
    return frame.merge(summed, on=keys, how="left")


def position_means(rates: pd.DataFrame) -> pd.DataFrame:
    """Per dataset x policy x position: MR averaged over the models that have a value (the models are the unit), with the
    number of models and the smallest and largest model MR."""
    have = rates.dropna(subset=["mr"])
    grouped = have.groupby(["dataset", "policy", "position"])["mr"]
    frame = grouped.agg(mean_mr="mean", n_models="count", min_mr="min", max_mr="max").reset_index()
    order = {p: i for i, p in enumerate(POSITIONS)}
    return frame.sort_values(["dataset", "policy", "position"], key=lambda s: s.map(order) if s.name == "position" else s,
                             ignore_index=True)


def model_summary(rates: pd.DataFrame, acc: pd.DataFrame) -> pd.DataFrame:
    """Per dataset x model: MR under each policy averaged over the positions, clean and closed-book accuracy, with their n and
    the count of each score state (the scatter of MR against clean accuracy)."""
    keys = ["dataset", "model"]
    mr = rates.groupby([*keys, "policy"])["mr"].mean().unstack("policy").reindex(columns=list(POLICIES))
    mr.columns = [f"mr_{c}" for c in mr.columns]
    n_known = rates.groupby(keys)["n_closed_book_correct"].max().rename("n_closed_book_correct")
    counts = list(readmodel.STATE_COLUMNS.values())
    wide = acc.pivot_table(index=keys, columns="condition", values=["accuracy", "n", *counts], aggfunc="first")
    wide.columns = [f"{c}_{m}" if m != "accuracy" else f"{c}_accuracy" for m, c in wide.columns]
    frame = pd.concat([mr, n_known, wide], axis=1).rename_axis(keys).reset_index()
    for column in ("clean_accuracy", "closed_book_accuracy", *(f"{c}_{n}" for c in (CLEAN, CLOSED_BOOK)
                                                                 for n in ("n", *counts))):
        if column not in frame:
            frame[column] = np.nan
    frame["small_n"] = frame["n_closed_book_correct"].fillna(0).between(1, stats.SMALL_N - 1)
    return frame


def _indicator(out: pd.DataFrame, models: Sequence[str], condition: str, closed_book: int, after: int) -> pd.DataFrame:
    """Per question answered by both models closed book and under `condition`: 1 where the closed-book outcome was
    `closed_book` and the outcome under `condition` is `after`."""
    cb, cond = _by_condition(out, CLOSED_BOOK, "correct"), _by_condition(out, condition, "correct")
    both = pd.concat({m: pd.DataFrame({"cb": cb.get(m), "after": cond.get(m)}) for m in models}, axis=1).dropna()
    return pd.DataFrame({m: ((both[(m, "cb")] == closed_book) & (both[(m, "after")] == after)).astype(int)
                         for m in models}, index=both.index)


def _audit_states(out: pd.DataFrame, models: dict[str, str], condition: str) -> dict[str, int]:
    """Per side (a, b): the count of each score state among the model's closed-book and `condition` answers."""
    return {f"{side}_{column}": n for side, model in models.items()
            for column, n in readmodel.state_counts(out.loc[(out["model"] == model)
                                                            & out["condition"].isin([CLOSED_BOOK, condition]),
                                                            "status"]).items()}


def audit(out: pd.DataFrame, model_a: str, model_b: str) -> pd.DataFrame:
    """Per dataset answered by both models, the paired audit of two models or checkpoints on the questions both
    answered: harmful override (closed-book correct, wrong with the evidence) per evidence condition, and beneficial
    correction (closed-book wrong, correct with clean evidence); counts, rates and McNemar (A vs B) per question;
    a_n_* and b_n_* count the state of each model's closed-book and condition answers behind a row."""
    both = out.groupby("dataset")["model"].transform(lambda m: {model_a, model_b} <= set(m))
    return per_dataset(out[both.astype(bool)], lambda part: _dataset_audit(part, model_a, model_b), AUDIT_COLUMNS)


def _dataset_audit(out: pd.DataFrame, model_a: str, model_b: str) -> pd.DataFrame:
    plan = [("harmful override", c, 1, 0) for c in (CLEAN, *MISLEADING_CONDITIONS)]
    plan.append(("beneficial correction", CLEAN, 0, 1))
    rows = []
    for outcome, condition, before, after in plan:
        flags = _indicator(out, [model_a, model_b], condition, before, after)
        n = len(flags)
        test = stats.mcnemar(flags[model_a].to_numpy(), flags[model_b].to_numpy()) if n else None
        count_a, count_b = (int(flags[model_a].sum()), int(flags[model_b].sum())) if n else (0, 0)
        rows.append({"outcome": outcome, "condition": condition, "model_a": model_a, "model_b": model_b, "n": n,
                     "count_a": count_a, "count_b": count_b, "rate_a": count_a / n if n else np.nan,
                     "rate_b": count_b / n if n else np.nan, "a_only": test.a_only if test else 0,
                     "b_only": test.b_only if test else 0, "statistic": test.statistic if test else np.nan,
                     "p_value": test.p_value if test else np.nan, "test": f"McNemar ({test.method})" if test else "",
                     "small_n": bool(0 < n < stats.SMALL_N),
                     **_audit_states(out, {"a": model_a, "b": model_b}, condition)})
    judge = _judge(out)
    return pd.DataFrame(rows).assign(judge=judge, judge_label=judge_label(judge)).reindex(columns=AUDIT_COLUMNS)


# --------------------------------------------------------------------------- drill-down

_EVIDENCE_SQL = """
SELECT i.uid AS instance_uid, i.query, i.language, i.reference, i.meta, d.position, d.role, d.text, d.variant
FROM instance i JOIN document d ON d.instance_id = i.id
WHERE i.uid = :uid AND i.is_latest AND i.protocol = :protocol ORDER BY d.position
"""
_RESPONSES_SQL = """
SELECT r.id AS response_id, m.name AS model, r.condition, r.text FROM response r
JOIN instance i ON i.id = r.instance_id JOIN model m ON m.id = r.model_id
WHERE r.status = 'done' AND r.run_id IN ({runs}) AND i.uid = :uid ORDER BY r.id
"""


def _json(value):
    import json

    return json.loads(value) if isinstance(value, str) else value


def evidence(engine: Engine, instance_uid: str) -> dict:
    """A RAG-Stress instance's question, reference, designated wrong answer and evidence documents, each split into
    (text before the edit, the edited span, text after) with the span it replaced; {} when there is no such instance."""
    rows = readmodel.read_sql(engine, _EVIDENCE_SQL, {"uid": instance_uid, "protocol": NAME})
    if rows.empty:
        return {}
    first = rows.iloc[0]
    meta = (_json(first["meta"]) or {}).get("rag_stress", {})
    documents = []
    for _, row in rows.iterrows():
        variant = _json(row["variant"]) or {}
        edit = variant.get("edit") or {}
        start, end = int(edit.get("start", 0)), int(edit.get("end", 0))
        text = row["text"]
        documents.append({"evidence": variant.get("evidence", ""), "position": variant.get("position"),
                          "role": row["role"], "before_span": text[:start], "span": text[start:end],
                          "after_span": text[end:], "replaced": edit.get("before", "") if variant.get("evidence") !=
                          CLEAN else "", "text": text})
    return {"instance_uid": instance_uid, "query": first["query"], "language": first["language"],
            "reference": _json(first["reference"]) or {}, "wrong_answer": meta.get("wrong_answer", ""),
            "wrong_key": meta.get("wrong_key"), "entity_type": meta.get("entity_type", ""),
            "method": meta.get("method", ""), "documents": documents,
            "generated": _generated_label(_json(first["meta"]) or {})}


def _generated_label(meta: dict) -> str:
    """The item's LLM mark (core.store.generated) as one line, '' for a rule-made item."""
    from core.store.generated import generated_mark

    mark = generated_mark(meta)
    return mark.label() if mark else ""


def edit_markdown(document: dict) -> str:
    """An evidence document of `evidence()` as inert Markdown (untrusted text escaped by core.store.sanitize) with the
    edited span in <mark> and, on misleading evidence, the text it replaced struck through after it."""
    from core.store.sanitize import highlighted_markdown

    return highlighted_markdown(document["before_span"], document["span"], document["after_span"],
                                document["replaced"])


def responses(engine: Engine, run_ids: Sequence[int], instance_uid: str) -> pd.DataFrame:
    """The done responses of `run_ids` to one instance: response_id, model, condition, text."""
    runs = ", ".join(str(int(r)) for r in run_ids) or "NULL"
    return readmodel.read_sql(engine, _RESPONSES_SQL.replace("{runs}", runs), {"uid": instance_uid})


def decision_scores(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """The decision's per-response values (core.analysis.readmodel.decision_scores): the read model's reference
    values with misleading_rate (misled: 1 or 0) and any_wrong_rate (1 − correct) on each misleading-condition
    response to a question the model answered correctly closed book, as misleading_rates counts them; elsewhere not
    applicable (outside that set) or the response's own status; the latest response per item, as outcomes."""
    scores = readmodel.reference_scores(engine, run_ids, judge, protocol=NAME)
    out = outcomes(scores)
    known = closed_book_correct(out).assign(_cbc=True)
    out = out.merge(known, on=["model", "instance_uid"], how="left")
    counted = out["_cbc"].fillna(False).astype(bool) & out["condition"].isin(list(MISLEADING_CONDITIONS))
    out[MISLEADING_RATE] = out["misled"].where(counted)
    out[ANY_WRONG] = (1.0 - out["correct"]).where(counted)
    for metric in (MISLEADING_RATE, ANY_WRONG):
        status = np.where(out[metric].notna(), "ok", np.where(counted, out["status"], "not_applicable"))
        out[f"{metric}_status"] = pd.Series(status, index=out.index, dtype=object).where(pd.notna(status), None)
    extra = out.set_index("response_id")[[MISLEADING_RATE, ANY_WRONG, f"{MISLEADING_RATE}_status",
                                          f"{ANY_WRONG}_status"]]
    latest = scores[scores["response_id"].isin(out["response_id"])]  # as outcomes: the latest response per item
    return latest.merge(extra, left_on="response_id", right_index=True, how="left").reset_index(drop=True)
