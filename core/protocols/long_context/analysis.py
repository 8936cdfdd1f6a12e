"""The long-context protocol's aggregates: accuracy per model, task (LaRA's level) and setting (chunks or the whole
document) with its 95% interval, n and the count of every state, where a document over the model's context window
(a response the runner never sent: error 'context_window: ...') is counted as 'skipped', never as wrong; the mean
generation cost per answer of each setting; and the decision output, per model and task, which setting wins
(the higher accuracy, its interval apart from the other's; else 'no clear winner') with the cost of each."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from sqlalchemy.engine import Engine

from core.analysis.readmodel.protocol_tables import breakdown, instance_attributes
from core.analysis.readmodel.reference import reference_scores
from core.analysis.readmodel.responses import read_sql

from . import ACCURACY, CHUNKS, NAME, WHOLE

SETTINGS = {CHUNKS: "chunks", WHOLE: "whole document"}
OVER_WINDOW = "context_window:"
_ITEMS_SQL = """
SELECT r.id AS response_id, m.name AS model, i.uid AS instance_uid, r.condition, r.status, r.error, r.cost_usd
FROM response r JOIN instance i ON i.id = r.instance_id JOIN model m ON m.id = r.model_id
WHERE r.run_id IN ({runs}) AND i.protocol = :protocol AND r.status IN ('done', 'failed')
"""
WINNER_COLUMNS = ["model", "task", "chunks", "chunks_n", "chunks_cost_usd", "whole document", "whole document_n",
                  "whole document_cost_usd", "whole document_too_long", "winner"]


def setting_scores(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """One row per answered or over-window item: model, task, setting, accuracy with its state (over the window:
    'skipped'), cost."""
    runs = ", ".join(str(int(r)) for r in run_ids) or "NULL"
    items = read_sql(engine, _ITEMS_SQL.replace("{runs}", runs), {"protocol": NAME})
    items = items[(items["status"] == "done") | items["error"].fillna("").str.startswith(OVER_WINDOW)]
    scores = reference_scores(engine, run_ids, judge, protocol=NAME).set_index("response_id")
    items = items.join(scores[[ACCURACY, f"{ACCURACY}_state"]], on="response_id")
    items.loc[items["status"] == "failed", f"{ACCURACY}_state"] = "skipped"
    tasks = instance_attributes(engine, NAME).set_index("instance_uid")["attributes"].map(
        lambda a: a.get("question_type") if isinstance(a, dict) else None)
    return items.assign(task=items["instance_uid"].map(tasks).fillna("?"),
                        setting=items["condition"].map(SETTINGS).fillna(items["condition"]))


def setting_table(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """Accuracy per model, task and setting with n, every state's count and the mean cost per answer."""
    scores = setting_scores(engine, run_ids, judge)
    table = breakdown(scores, ACCURACY, ["task", "setting"])
    cost = scores[scores["status"] == "done"].groupby(["model", "task", "setting"])["cost_usd"].mean()
    return table.join(cost.rename("cost_usd_per_answer"), on=["model", "task", "setting"])


def winner(chunks: pd.Series | None, whole: pd.Series | None) -> str:
    """Which setting wins one (model, task) cell: the higher accuracy when the intervals do not overlap."""
    if chunks is None or whole is None or not chunks["n"] or not whole["n"]:
        return "not comparable (a setting has no scored answer)"
    if chunks["ci_low"] > whole["ci_high"]:
        return "chunks"
    if whole["ci_low"] > chunks["ci_high"]:
        return "whole document"
    return "no clear winner"


def setting_winners(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """Per model and task: each setting's accuracy, n and cost per answer, whole documents over the window, and the
    winner."""
    table = setting_table(engine, run_ids, judge)
    rows = []
    for (model, task), part in table.groupby(["model", "task"], sort=True):
        cells = {row["setting"]: row for _, row in part.iterrows()}
        chunk, whole = cells.get("chunks"), cells.get("whole document")
        row = {"model": model, "task": task, "winner": winner(chunk, whole),
               "whole document_too_long": int(whole["n_skipped"]) if whole is not None else 0}
        for name, cell in (("chunks", chunk), ("whole document", whole)):
            row |= {name: cell["value"] if cell is not None else float("nan"),
                    f"{name}_n": int(cell["n"]) if cell is not None else 0,
                    f"{name}_cost_usd": cell["cost_usd_per_answer"] if cell is not None else float("nan")}
        rows.append(row)
    return pd.DataFrame(rows, columns=WINNER_COLUMNS)
