"""DomainRAG aggregates on the read model (readmodel.reference_scores, protocol 'domainrag'): score vs noise count per
gold position (the "lost in the middle" lines, with the repeated-gold control and the no-noise golden reference), HTML
vs text on structural QA, ability x setting per model, and adherence to anti-references.

Definitions (DomainRAG, Wang et al. 2024, sections 4.2 and 4.4-4.6):
- every cell is the mean of one per-response metric (default `exact_match`: an alternative's share of parts contained,
  the best alternative) over the questions, with its 95% CI (stats.interval) and n; not-applicable (e.g. consistency on
  short answers), judge errors and unscored responses are counted per cell and left out of the denominators;
- a setting that groups several conditions (noisy = 15 noise count x position conditions, repeated gold = 5) is first
  averaged per question, so n counts questions, not prompts;
- anti-reference adherence = the metric against the anti-answer on the faithful questions given the anti-reference
  alone (the `faithful_anti` companion instances), beside the same questions' gold score closed book and with the
  golden reference; on all 49 questions and on the 39 whose anti-answer shares no item with the gold answer (where
  the metric can tell the two answers apart);
- where runs overlap, the latest response per (model, instance, condition) counts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from core.analysis import stats
from core.analysis.readmodel import read_sql, reference_scores, run_judges, state_counts
from core.metrics import get_metric
from core.protocols.domainrag import (
    ANTI,
    ANTI_REFERENCE,
    CLOSED_BOOK,
    GOLDEN,
    HTML,
    HTML_AS_TEXT,
    NAME,
    NOISE_CONDITIONS,
    REPEATED_CONDITIONS,
    RETRIEVAL_CONDITIONS,
)
from core.protocols.views import protocol_runs
from core.scoring.judges.names import judge_label

METRIC = "exact_match"
ABILITY_LABELS = {"extractive": "Extractive", "conversational": "Conversational", "structural": "Structural",
                  "faithful": "Faithful", "time_sensitive": "Time-sensitive", "multidoc": "Multi-document"}
GOLDEN_SETTING, NOISY, REPEATED = "golden", "noisy", "repeated_gold"
FORMATS = {GOLDEN: "text", HTML: "html", HTML_AS_TEXT: "html_as_text"}
FORMAT_LABELS = {"text": "plain text", "html": "cleaned HTML", "html_as_text": "HTML converted to text (ours)"}
NO_NOISE = "no noise (golden)"
CELL_STATS = ["judge", "judge_label", "metric", "value", "ci_low", "ci_high", "n", "n_not_applicable", "n_error",
              "n_unscored", "n_scored", "n_unparseable", "n_skipped", "small_n"]
_ATTRIBUTES_SQL = """
SELECT r.id AS response_id, i.attributes, i.meta FROM response r JOIN instance i ON i.id = r.instance_id
WHERE r.status = 'done' AND r.run_id IN ({runs}) AND i.protocol = :protocol
"""


def describe(condition: str) -> dict[str, Any]:
    """What a condition is: its setting (the condition name, 'golden' for the default), the family it belongs to and
    its parameters (noise_count, position, retriever, k)."""
    row: dict[str, Any] = {"setting": condition or GOLDEN_SETTING, "family": condition or GOLDEN_SETTING,
                           "noise_count": np.nan, "position": None, "retriever": None, "k": np.nan}
    if condition in NOISE_CONDITIONS:
        row["noise_count"], row["position"] = NOISE_CONDITIONS[condition]
        row["family"] = NOISY
    elif condition in REPEATED_CONDITIONS:
        row["noise_count"], row["family"] = REPEATED_CONDITIONS[condition], REPEATED
    elif condition in RETRIEVAL_CONDITIONS:
        row["retriever"], row["k"] = RETRIEVAL_CONDITIONS[condition]
        row["family"] = "retrieved"
    return row


def domainrag_runs(engine: Engine) -> pd.DataFrame:
    """Runs holding done domainrag responses, newest first: run_id, name, status, responses."""
    return protocol_runs(engine, NAME)


def domainrag_judges(engine: Engine, run_ids: Sequence[int]) -> list[str]:
    """The judges that scored these runs."""
    return run_judges(engine, list(run_ids))


def _attributes(engine: Engine, run_ids: Sequence[int]) -> pd.DataFrame:
    runs = ", ".join(str(int(r)) for r in run_ids) or "NULL"
    frame = read_sql(engine, _ATTRIBUTES_SQL.replace("{runs}", runs), {"protocol": NAME})
    attributes = frame["attributes"].map(_json)
    meta = frame["meta"].map(_json)
    return pd.DataFrame({"question_type": attributes.map(lambda a: a.get("question_type")).to_numpy(dtype=object),
                         "anti_kind": attributes.map(lambda a: next(iter(a.get("aspects") or []), None)).to_numpy(
                             dtype=object),
                         "dense_unknown_share": meta.map(lambda m: m.get("dense_unknown_share")).to_numpy(dtype=object)},
                        index=frame["response_id"].to_numpy())


def _json(value: Any) -> dict[str, Any]:
    return json.loads(value) if isinstance(value, str) else value or {}


def domainrag_scores(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """readmodel.reference_scores of the domainrag responses (latest per model, instance and condition), with the
    question type, the ability (faithful_anti counts for faithful), the faithful questions' anti_kind ('disjoint' or
    'shares_items') and the condition described (see `describe`)."""
    scores = reference_scores(engine, run_ids, judge, protocol=NAME)
    scores = scores.drop_duplicates(["model", "instance_uid", "condition"], keep="last").reset_index(drop=True)
    attributes = _attributes(engine, run_ids)
    for column in ("question_type", "anti_kind", "dense_unknown_share"):
        scores[column] = scores["response_id"].map(attributes[column]) if not scores.empty else None
    scores["ability"] = scores["question_type"].replace({ANTI: "faithful"})
    described = pd.DataFrame([describe(c) for c in scores["condition"]], index=scores.index,
                             columns=["setting", "family", "noise_count", "position", "retriever", "k"])
    return pd.concat([scores, described], axis=1)


def unreadable_dense_share(scores: pd.DataFrame) -> float | None:
    """The embedder's [UNK] share of the corpus (recorded at build) when responses of our dense conditions are in
    `scores` and it reached the warning level (core.construction.retrieval.UNKNOWN_WARN), else None."""
    from core.construction.retrieval import UNKNOWN_WARN

    dense = scores.loc[scores["retriever"] == "dense", "dense_unknown_share"] if not scores.empty else pd.Series()
    shares = pd.to_numeric(dense, errors="coerce").dropna()
    return float(shares.max()) if not shares.empty and shares.max() >= UNKNOWN_WARN else None


def unreadable_dense_warning(share: float) -> str:
    """The warning shown beside results of a dense retriever that could not read the corpus's language."""
    return (f"The dense retriever's embedder mapped {share:.0%} of the corpus's characters to unknown tokens ([UNK]) "
            "when these instances were built: it cannot read this language, so the dense_top1 / dense_top3 results "
            "measure near-random passages. Use the released dense runs or an embedder for this language.")


def cell(values: pd.Series, statuses: pd.Series, judge: str, metric: str) -> dict[str, Any]:
    """Mean, 95% CI and n of one cell, with the responses left out counted by reason."""
    ci = stats.interval(values.to_numpy(dtype=float), get_metric(metric))
    n = ci.n
    return {"judge": judge, "judge_label": judge_label(judge), "metric": metric, "value": ci.mean,
            "ci_low": ci.ci_low, "ci_high": ci.ci_high, "n": n, **state_counts(statuses),
            "small_n": bool(0 < n < stats.SMALL_N)}


def cells(scores: pd.DataFrame, by: list[str], judge: str, metric: str = METRIC) -> pd.DataFrame:
    """One cell per group of `by`: the metric's mean over the group's questions (a question answered under several
    conditions of the group is averaged first) with CI, n and the counts left out."""
    rows = []
    for key, group in scores.groupby(by, sort=True, dropna=False):
        per_question = group.groupby("instance_uid", sort=True)
        values = per_question[metric].mean()
        statuses = per_question[f"{metric}_status"].agg(_question_status)
        rows.append({**dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True)),
                     **cell(values, statuses, judge, metric)})
    return pd.DataFrame(rows, columns=[*by, *CELL_STATS])


def _question_status(statuses: pd.Series) -> str | None:
    """A question's status across its conditions: 'ok' when any is scored, else the most telling reason (an
    unparseable answer before a judge error, before not applicable, before skipped)."""
    present = set(statuses.dropna())
    for status in ("ok", "unparseable", "error", "not_applicable", "skipped"):
        if status in present:
            return status
    return None


def noise_curve(scores: pd.DataFrame, judge: str, metric: str = METRIC) -> pd.DataFrame:
    """Extractive QA: per model, the metric vs noise count for each gold position (first / middle / last), the
    repeated-gold control at the same bundle sizes, and the golden reference alone at noise count 0."""
    extractive = scores[scores["question_type"] == "extractive"]
    noisy = extractive[extractive["family"] == NOISY].assign(line=lambda f: f["position"])
    repeated = extractive[extractive["family"] == REPEATED].assign(line=REPEATED)
    golden = extractive[extractive["condition"] == GOLDEN].assign(line=NO_NOISE, noise_count=0)
    frame = pd.concat([noisy, repeated, golden], ignore_index=True)
    if frame.empty:
        return pd.DataFrame(columns=["model", "line", "noise_count", *CELL_STATS])
    return cells(frame, ["model", "line", "noise_count"], judge, metric)


def html_vs_text(scores: pd.DataFrame, judge: str, metric: str = METRIC) -> pd.DataFrame:
    """Structural QA: per model, the metric with the page as plain text (the golden reference), as cleaned HTML and as
    HTML converted to text by us; `format_label` names each."""
    structural = scores[(scores["question_type"] == "structural") & scores["condition"].isin(list(FORMATS))]
    structural = structural.assign(format=structural["condition"].map(FORMATS))
    out = cells(structural, ["model", "format"], judge, metric)
    return out.assign(format_label=out["format"].map(FORMAT_LABELS))


def _grid_setting(scores: pd.DataFrame) -> np.ndarray:
    """Each response's column of the ability x setting grid: the noise sweep and the repeated-gold control are one
    setting each ('noisy', 'repeated_gold'), any other condition its own setting."""
    return np.where(scores["family"].isin([NOISY, REPEATED]), scores["family"], scores["setting"])


def ability_setting(scores: pd.DataFrame, judge: str, metric: str = METRIC) -> pd.DataFrame:
    """Per model x ability x setting: the metric with CI and n; the noise sweep and the repeated-gold control are one
    setting each ('noisy', 'repeated_gold', averaged per question); 'anti_reference' is scored against the anti-answer."""
    frame = scores.assign(column=_grid_setting(scores))
    out = cells(frame, ["model", "ability", "column"], judge, metric).rename(columns={"column": "setting"})
    return out.assign(ability_label=out["ability"].map(ABILITY_LABELS))


ANTI_SCOPES = {"disjoint": "anti-answer shares no item with the gold answer", "all": "all faithful questions"}
ANTI_MEASURES = {"close_book": "close_book (gold answer)", "golden": "golden reference (gold answer)",
                 "anti": "anti-reference (anti-answer)"}


def anti_adherence(scores: pd.DataFrame, judge: str, metric: str = METRIC) -> pd.DataFrame:
    """Faithful QA per model and scope: the gold answer's score closed book and with the golden reference, and
    adherence to the anti-reference (the anti-answer's score when the anti-reference is the only document). Scope
    'disjoint' keeps the questions whose anti-answer shares no item with the gold one (39 of 49): on the others (a
    list with an item dropped or swapped) a model repeating the gold list also contains the anti-answer."""
    faithful = scores[scores["ability"] == "faithful"]
    gold, anti = faithful["question_type"] == "faithful", faithful["question_type"] == ANTI
    parts = {ANTI_MEASURES["close_book"]: faithful[gold & (faithful["condition"] == CLOSED_BOOK)],
             ANTI_MEASURES["golden"]: faithful[gold & (faithful["condition"] == GOLDEN)],
             ANTI_MEASURES["anti"]: faithful[anti & (faithful["condition"] == ANTI_REFERENCE)]}
    frame = pd.concat([p.assign(measure=name) for name, p in parts.items()], ignore_index=True)
    frame = pd.concat([frame[frame["anti_kind"] == "disjoint"].assign(scope=ANTI_SCOPES["disjoint"]),
                       frame.assign(scope=ANTI_SCOPES["all"])], ignore_index=True)
    if frame.empty:
        return pd.DataFrame(columns=["model", "scope", "measure", *CELL_STATS])
    return cells(frame, ["model", "scope", "measure"], judge, metric)


def domainrag_report(engine: Engine, run_ids: Sequence[int], judge: str, metric: str = METRIC) -> dict[str, pd.DataFrame]:
    """Every DomainRAG view for these runs under `judge`: scores, noise_curve, html_vs_text, ability_setting and
    anti_adherence."""
    scores = domainrag_scores(engine, run_ids, judge)
    return {"scores": scores, "noise_curve": noise_curve(scores, judge, metric),
            "html_vs_text": html_vs_text(scores, judge, metric), "ability_setting": ability_setting(scores, judge, metric),
            "anti_adherence": anti_adherence(scores, judge, metric)}



DRILL_COLUMNS = ["response_id", "model", "instance_uid", "ability", "setting", "condition"]


def cell_responses(scores: pd.DataFrame, model: str, ability: str | None, setting: str | None, judge: str,
                   metric: str = METRIC) -> pd.DataFrame:
    """The responses behind one cell of the views (a model, and optionally an ability and a grid setting): ids, the
    condition, the metric's value and state under `judge`, lowest value first and unscored last."""
    frame = scores.assign(setting=_grid_setting(scores)) if not scores.empty else scores.assign(setting=None)
    mine = frame[frame["model"] == model]
    if ability is not None:
        mine = mine[mine["ability"] == ability]
    if setting is not None:
        mine = mine[mine["setting"] == setting]
    state = f"{metric}_state" if f"{metric}_state" in mine else f"{metric}_status"
    rows = mine[[*DRILL_COLUMNS, metric, state]].assign(judge=judge_label(judge))
    return rows.sort_values([metric, "instance_uid"], na_position="last")
