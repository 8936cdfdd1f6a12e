"""LIT-RAGBench aggregates on the read model (readmodel.reference_scores, protocol 'lit_ragbench'): accuracy per
category and per aspect with 95% CIs, the category-averaged accuracy, the over-abstention rate on the four answerable
categories, English beside Japanese, and the drill-down of one response (its shuffled context and the judge's reasons).

Definitions (LIT-RAGBench, Itai et al. 2026, section 5.2 and 5.4.5):
- accuracy(category) = mean of the judge's 1/0 `judged_accuracy` over the questions with an aspect of that category; a
  question with two aspects counts for both (and once per category);
- category-averaged accuracy = the unweighted mean of the category accuracies present (n_categories says how many);
  its CI is Clopper-Pearson on the effective n of an equal-weight average of strata, K^2 / sum(1 / n_k);
- over-abstention = share of answerable (non-Abstention) questions the response declines (`refusal` = 1) and gets
  wrong; undetermined when the judge failed on either verdict (counted, never 0).
Judge errors and unscored responses are counted per cell and left out of the denominators.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from core.analysis import stats
from core.analysis.readmodel import STATE_COLUMNS, read_sql, reference_scores, state_counts, state_text
from core.metrics import ScoreState, get_metric
from core.protocols.html import html_to_text
from core.protocols.lit_ragbench import ABSTENTION, ASPECTS, CATEGORIES, NAME, aspect_codes, categories_of
from core.protocols.lit_ragbench.released import PAPER, PAPER_CONDITION, PRODUCT
from core.protocols.views import protocol_runs
from core.scoring.judges.names import judge_label

ACCURACY = "judged_accuracy"
REFUSAL = "refusal"
OVER_ABSTENTION = "over_abstention"
GROUP = ["model", "language", "condition"]
CELL_COLUMNS = [*GROUP, "level", "key", "label", "category", "judge", "judge_label", "value", "ci_low", "ci_high", "n",
                "n_error", "n_not_applicable", "n_unscored", "n_scored", "n_unparseable", "n_skipped", "small_n"]
OVERALL_COLUMNS = [*GROUP, "judge", "judge_label", "value", "ci_low", "ci_high", "n_categories", "n", "micro_value",
                   "micro_ci_low", "micro_ci_high", "n_scored", "n_not_applicable", "n_unparseable", "n_error",
                   "n_unscored", "n_skipped", "small_n"]
ABSTENTION_COLUMNS = [*GROUP, "judge", "judge_label", "over_abstention", "oa_ci_low", "oa_ci_high", "oa_n",
                      "oa_undetermined", "abstention_accuracy", "aa_ci_low", "aa_ci_high", "aa_n", "small_n",
                      *(f"aa_{column}" for column in STATE_COLUMNS.values()),
                      *(f"oa_{column}" for column in STATE_COLUMNS.values())]
# why an answerable question's over-abstention is undetermined: the first of these statuses among its two verdicts
_UNDETERMINED_ORDER = ("error", "unparseable", "skipped", "not_applicable")
LANGUAGE_STATES = [f"{column}_{language}" for language in ("en", "ja") for column in STATE_COLUMNS.values()]
LANGUAGE_COLUMNS = ["model", "condition", "level", "key", "label", "judge_label", "value_en", "n_en", "ci_low_en",
                    "ci_high_en", "value_ja", "n_ja", "ci_low_ja", "ci_high_ja", "diff_ja_en", *LANGUAGE_STATES]

_ATTRIBUTES_SQL = """
SELECT r.id AS response_id, i.attributes, i.uid AS instance_uid FROM response r JOIN instance i ON i.id = r.instance_id
WHERE r.status = 'done' AND r.run_id IN ({runs}) AND i.protocol = :protocol
"""
_DETAIL_SQL = """
SELECT r.id AS response_id, r.instance_id, r.text, r.condition, r.prompt_meta, m.name AS model, i.uid AS instance_uid,
       i.query, i.language, i.reference, i.attributes
FROM response r JOIN instance i ON i.id = r.instance_id JOIN model m ON m.id = r.model_id WHERE r.id = :rid
"""
_DOCUMENTS_SQL = """
SELECT doc_uid, position, title, role, content_type, text FROM document WHERE instance_id = :iid ORDER BY position
"""
_VERDICTS_SQL = """
SELECT metric, judge, status, value, method, reason FROM verdict
WHERE response_id = :rid AND judge = :judge AND constraint_id IS NULL ORDER BY id
"""


def _json(value: Any) -> Any:
    """A JSON column as Python (SQLite hands JSON back as text)."""
    return json.loads(value) if isinstance(value, str) else value


def _language(tag: Any) -> str:
    """The primary subtag ('ja-JP' -> 'ja'); 'und' when missing."""
    return str(tag or "und").split("-")[0].lower() or "und"


def lit_runs(engine: Engine) -> pd.DataFrame:
    """Runs holding done lit_ragbench responses, newest first: run_id, name, status, responses."""
    return protocol_runs(engine, NAME)


def over_abstention(frame: pd.DataFrame) -> pd.Series:
    """Per response: 1 when an answerable question is declined and judged wrong, 0 when it is answered or judged
    right, NaN when a verdict is missing or failed, and on Abstention questions (not applicable)."""
    refused, correct = frame[REFUSAL], frame[ACCURACY]
    main = ~frame["categories"].map(lambda cs: ABSTENTION in cs).astype(bool)
    known_no = (refused == 0) | (correct == 1)
    known_yes = (refused == 1) & (correct == 0)
    return pd.Series(np.where(main & known_no, 0.0, np.where(main & known_yes, 1.0, np.nan)), index=frame.index)


def lit_scores(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """One row per (model, instance, condition), the latest response when runs overlap: the read model's columns
    (judged_accuracy, refusal and their statuses) plus language, aspects, categories and over_abstention."""
    frame = reference_scores(engine, run_ids, judge, protocol=NAME)
    runs = ", ".join(str(int(r)) for r in run_ids) or "NULL"
    attributes = read_sql(engine, _ATTRIBUTES_SQL.replace("{runs}", runs), {"protocol": NAME})
    aspects = attributes.set_index("response_id")["attributes"].map(lambda a: list((_json(a) or {}).get("aspects", [])))
    frame["aspects"] = frame["response_id"].map(aspects) if not frame.empty else pd.Series(dtype=object)
    frame["aspects"] = frame["aspects"].map(lambda a: aspect_codes(a) if isinstance(a, list) else [])
    frame["categories"] = frame["aspects"].map(categories_of)
    frame["language"] = frame["language"].map(_language)
    if not frame.empty:
        keep = frame.groupby(["model", "instance_uid", "condition"], sort=False)["response_id"].idxmax()
        frame = frame.loc[sorted(keep)].reset_index(drop=True)
    frame[OVER_ABSTENTION] = over_abstention(frame) if not frame.empty else pd.Series(dtype=float)
    return frame


def _explode(scores: pd.DataFrame, level: str) -> pd.DataFrame:
    """One row per (response, category) or (response, aspect): a question counts once for each key it has."""
    column = "categories" if level == "category" else "aspects"
    long = scores.assign(key=scores[column]).explode("key").dropna(subset=["key"])
    return long.drop_duplicates(["response_id", "key"])


def _cell(group: pd.DataFrame, judge: str) -> dict[str, Any]:
    """Mean accuracy with its 95% CI (stats.interval), n, and the responses left out by status."""
    ci = stats.interval(group[ACCURACY].to_numpy(dtype=float), get_metric(ACCURACY))
    status = group[f"{ACCURACY}_status"]
    n = ci.n
    return {"judge": judge, "judge_label": judge_label(judge), "value": ci.mean, "ci_low": ci.ci_low,
            "ci_high": ci.ci_high, "n": n, **state_counts(status), "small_n": bool(0 < n < stats.SMALL_N)}


def accuracy_table(scores: pd.DataFrame, level: str = "category") -> pd.DataFrame:
    """Accuracy per model x language x condition x category (level 'category') or aspect (level 'aspect'), in the
    protocol's order, with 95% CIs, n and the counts left out."""
    if scores.empty:
        return pd.DataFrame(columns=CELL_COLUMNS)
    judge = str(scores["judge"].iloc[0])
    order = list(CATEGORIES) if level == "category" else list(ASPECTS)
    rows = []
    for (model, language, condition, key), group in _explode(scores, level).groupby([*GROUP, "key"], sort=False):
        if level == "category":
            label = category = key
        else:
            aspect = ASPECTS[key]
            label, category = f"{aspect.category}: {aspect.label}", aspect.category
        rows.append({"model": model, "language": language, "condition": condition, "level": level, "key": key,
                     "label": label, "category": category,
                     **_cell(group, judge)})
    table = pd.DataFrame(rows, columns=CELL_COLUMNS)
    table["_order"] = table["key"].map(order.index)
    return table.sort_values([*GROUP, "_order"]).drop(columns="_order").reset_index(drop=True)


def averaged_ci(values: np.ndarray, counts: np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean of K category accuracies and its CI: Clopper-Pearson on the effective n K^2 / sum(1/n_k) of an
    equal-weight average of strata (exact when every category has the same n)."""
    mean = float(np.mean(values))
    n_eff = len(counts) ** 2 / float(np.sum(1.0 / counts))
    low, high = stats.effective_n_bounds(mean, n_eff, confidence)
    return mean, float(low), float(high)


def overall_table(scores: pd.DataFrame, categories: pd.DataFrame) -> pd.DataFrame:
    """Per model x language x condition: the category-averaged accuracy (over the categories with a value) with its
    CI and n_categories, beside the plain accuracy over all questions (micro) with its CI."""
    rows = []
    for (model, language, condition), cells in categories.groupby(GROUP, sort=False):
        present = cells[cells["n"] > 0]
        mine = scores[(scores["model"] == model) & (scores["language"] == language) & (scores["condition"] == condition)]
        micro = stats.interval(mine[ACCURACY].to_numpy(dtype=float), get_metric(ACCURACY))
        value, low, high = (averaged_ci(present["value"].to_numpy(float), present["n"].to_numpy(float))
                            if not present.empty else (np.nan, np.nan, np.nan))
        n = micro.n
        rows.append({"model": model, "language": language, "condition": condition,
                     "judge": cells["judge"].iloc[0], "judge_label": cells["judge_label"].iloc[0], "value": value,
                     "ci_low": low, "ci_high": high, "n_categories": len(present), "n": n,
                     "micro_value": micro.mean, "micro_ci_low": micro.ci_low, "micro_ci_high": micro.ci_high,
                     **state_counts(mine[f"{ACCURACY}_status"]),
                     "small_n": bool((present["n"] < stats.SMALL_N).any())})
    return pd.DataFrame(rows, columns=OVERALL_COLUMNS)


def over_abstention_statuses(main: pd.DataFrame) -> pd.Series:
    """Per answerable response, the status its over-abstention is in: ok where determined, else the refusal or
    accuracy verdict's (judge error, unparseable, skipped, not applicable in that order; None: a verdict missing)."""
    def status(row: pd.Series) -> str | None:
        if not pd.isna(row[OVER_ABSTENTION]):
            return "ok"
        given = {row[f"{REFUSAL}_status"], row[f"{ACCURACY}_status"]}
        return next((s for s in _UNDETERMINED_ORDER if s in given), None)

    return main.apply(status, axis=1) if not main.empty else pd.Series(dtype=object)


def undetermined_text(row: Mapping[str, Any]) -> str:
    """An abstention row's undetermined over-abstention split by state ('1 judge error · 2 unjudged'), '' for none."""
    counts: dict[ScoreState, int] = {state: int(row[f"oa_{column}"]) for state, column in STATE_COLUMNS.items()
                                     if state != "scored" and int(row[f"oa_{column}"])}
    return state_text(counts).removeprefix("n = ")


def abstention_table(scores: pd.DataFrame, categories: pd.DataFrame) -> pd.DataFrame:
    """Per model x language x condition: over-abstention on the answerable categories (mean, CI, n, undetermined and
    its six state counts oa_n_*) beside the Abstention category's accuracy with the six state counts of its cell (aa_n_*), for the trade-off
    scatter."""
    rows = []
    for (model, language, condition), mine in scores.groupby(GROUP, sort=False):
        main = mine[~mine["categories"].map(lambda cs: ABSTENTION in cs)]
        oa = stats.interval(main[OVER_ABSTENTION].to_numpy(dtype=float), get_metric(OVER_ABSTENTION))
        cell = categories[(categories["model"] == model) & (categories["language"] == language)
                          & (categories["condition"] == condition) & (categories["key"] == ABSTENTION)]
        n_oa, judge = oa.n, str(mine["judge"].iloc[0])
        aa = cell.iloc[0] if not cell.empty else None
        rows.append({"model": model, "language": language, "condition": condition, "judge": judge,
                     "judge_label": judge_label(judge),
                     "over_abstention": oa.mean, "oa_ci_low": oa.ci_low, "oa_ci_high": oa.ci_high, "oa_n": n_oa,
                     "oa_undetermined": int(len(main) - n_oa),
                     "abstention_accuracy": aa["value"] if aa is not None else np.nan,
                     "aa_ci_low": aa["ci_low"] if aa is not None else np.nan,
                     "aa_ci_high": aa["ci_high"] if aa is not None else np.nan,
                     "aa_n": int(aa["n"]) if aa is not None else 0,
                     "small_n": bool(0 < n_oa < stats.SMALL_N or (aa is not None and 0 < aa["n"] < stats.SMALL_N)),
                     **{f"aa_{c}": int(aa[c]) if aa is not None else 0 for c in STATE_COLUMNS.values()},
                     **{f"oa_{c}": n for c, n in state_counts(over_abstention_statuses(main)).items()}})
    return pd.DataFrame(rows, columns=ABSTENTION_COLUMNS)


def language_table(cells: pd.DataFrame) -> pd.DataFrame:
    """English beside Japanese per model x condition x category (or aspect): values, n, CIs, ja - en and each
    language's state counts (n_scored_en, ..., n_skipped_ja)."""
    if cells.empty:
        return pd.DataFrame(columns=LANGUAGE_COLUMNS)
    keys = ["model", "condition", "level", "key", "label", "judge_label"]
    order = {key: i for i, key in enumerate(dict.fromkeys(cells["key"]))}
    wide = (cells[cells["language"].isin(["en", "ja"])].set_index([*keys, "language"])
            [["value", "n", "ci_low", "ci_high", *STATE_COLUMNS.values()]].unstack("language"))
    wide.columns = [f"{a}_{b}" for a, b in wide.columns]
    wide = wide.reset_index().reindex(columns=LANGUAGE_COLUMNS)
    wide = wide.sort_values(["model", "condition", "key"], key=lambda s: s.map(order) if s.name == "key" else s)
    wide["diff_ja_en"] = wide["value_ja"] - wide["value_en"]
    wide[["n_en", "n_ja", *LANGUAGE_STATES]] = wide[["n_en", "n_ja", *LANGUAGE_STATES]].fillna(0).astype(int)
    return wide.reset_index(drop=True)


def setting_table(overall: pd.DataFrame) -> pd.DataFrame:
    """The category-averaged accuracy under the product prompts (default condition) beside the paper's released
    prompts (condition paper_prompts), per model and language, with CIs, n and paper - product; only pairs that
    have both settings."""
    keys = ["model", "language", "judge_label"]
    settings = {PRODUCT: "", PAPER: PAPER_CONDITION}
    sides = [overall[overall["condition"] == condition].set_index(keys)[["value", "ci_low", "ci_high", "n"]]
             .add_prefix(f"{name}_") for name, condition in settings.items()]
    wide = sides[0].join(sides[1], how="inner").reset_index()
    wide["diff_paper_product"] = wide[f"{PAPER}_value"] - wide[f"{PRODUCT}_value"]
    return wide


def lit_report(engine: Engine, run_ids: Sequence[int], judge: str) -> dict[str, pd.DataFrame]:
    """Every LIT-RAGBench table of the runs under `judge`: scores, categories, aspects, overall, abstention, the
    English-Japanese comparisons by category and by aspect, and the two prompt settings side by side."""
    scores = lit_scores(engine, run_ids, judge)
    categories = accuracy_table(scores, "category")
    aspects = accuracy_table(scores, "aspect")
    overall = overall_table(scores, categories)
    return {"scores": scores, "categories": categories, "aspects": aspects,
            "overall": overall, "abstention": abstention_table(scores, categories),
            "languages": language_table(categories), "aspect_languages": language_table(aspects),
            "settings": setting_table(overall)}


def response_detail(engine: Engine, response_id: int, judge: str) -> dict[str, Any]:
    """One response for drill-down: question, reference answer and reasoning, aspects, its prompt setting (product
    or paper), the documents in the order the prompt gave them (role, format, as the prompt showed them), the shuffle seeds, the response and `judge`'s
    verdicts with reasons. Empty when the response does not exist."""
    row = read_sql(engine, _DETAIL_SQL, {"rid": int(response_id)})
    if row.empty:
        return {}
    r = row.iloc[0]
    meta, reference = _json(r["prompt_meta"]) or {}, _json(r["reference"]) or {}
    documents = read_sql(engine, _DOCUMENTS_SQL, {"iid": int(r["instance_id"])})
    converted = set(meta.get("html_as_text", []))
    by_uid = {d["doc_uid"]: d for d in documents.to_dict("records")}
    order = [u for u in meta.get("doc_order", []) if u in by_uid] or list(by_uid)
    shown = [{"prompt_position": i, "stored_position": int(by_uid[u]["position"]) + 1, "doc_uid": u,
              "role": "positive" if by_uid[u]["role"] == "supporting" else "negative",
              "content_type": "text" if u in converted else by_uid[u]["content_type"],
              "title": by_uid[u]["title"] or "",
              "text": html_to_text(by_uid[u]["text"]) if u in converted else by_uid[u]["text"]}
             for i, u in enumerate(order, start=1)]
    aspects = list((_json(r["attributes"]) or {}).get("aspects", []))
    return {"response_id": int(r["response_id"]), "model": r["model"], "instance_uid": r["instance_uid"],
            "language": _language(r["language"]), "condition": r["condition"], "query": r["query"],
            "aspects": [f"{ASPECTS[c].category}: {ASPECTS[c].label}" if c in ASPECTS else c for c in aspects],
            "reference_answer": "; ".join(a.get("text", "") for a in reference.get("answers", [])),
            "answer_type": reference.get("answer_type"), "reasoning": reference.get("reasoning") or "",
            "response": r["text"] or "", "prompt_setting": meta.get("prompt_setting", PRODUCT),
            "order": meta.get("order"), "seed": meta.get("seed"),
            "bundle_seed": meta.get("bundle_seed"), "documents": shown,
            "verdicts": read_sql(engine, _VERDICTS_SQL, {"rid": int(response_id), "judge": judge}),
            "judge": judge, "judge_label": judge_label(judge)}


def decision_scores(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """The decision's per-response values (core.analysis.readmodel.decision_scores): lit_scores with the status each
    response's over-abstention is in (over_abstention_statuses; not applicable where the question has no answer)."""
    frame = lit_scores(engine, run_ids, judge)
    statuses = over_abstention_statuses(frame) if not frame.empty else pd.Series(dtype=object)
    abstention = frame["categories"].map(lambda cs: ABSTENTION in cs).astype(bool) if not frame.empty else statuses
    frame[f"{OVER_ABSTENTION}_status"] = statuses.astype(object).where(~abstention.astype(bool), "not_applicable")
    return frame
