"""Score-state counts beside every mean: how many responses behind a number were scored, not applicable,
unparseable, judge errors, unjudged or skipped, counted once from the stored verdict statuses, and the one sentence
that every table caption, chart caption and CSV of the results pages shows for them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from core.metrics import STATE_WORDS as _WORDS
from core.metrics import STATES, VERDICT_STATES, ScoreState, state_text
from core.store.schema import CATEGORIES

# score state -> the count column every summary frame carries for it (the existing names where they were in use)
STATE_COLUMNS: dict[ScoreState, str] = {"scored": "n_scored", "not_applicable": "n_not_applicable",
                                        "unparseable": "n_unparseable", "judge_error": "n_error",
                                        "unjudged": "n_unscored", "skipped": "n_skipped"}
# score state -> the stored verdict status that holds it (unjudged: no verdict of the judge, a missing status)
STATE_STATUSES: dict[ScoreState, str] = {"scored": "ok", "not_applicable": "not_applicable",
                                         "unparseable": "unparseable", "judge_error": "error", "skipped": "skipped"}



def count_states(states: pd.Series) -> dict[ScoreState, int]:
    """How many of `states` (score state names) are in each state of core.metrics.STATES: the one count every
    state-count column of the read model comes from."""
    return {state: int((states == state).sum()) for state in STATES}


def state_codes(states: pd.Series) -> np.ndarray:
    """Each of `states` as its position in core.metrics.STATES (-1: none of them), for counting many subsets of one
    column by count_codes without comparing strings again."""
    codes, seen = pd.factorize(states)  # each distinct value once (-1: missing), then its position in STATES
    return np.array([STATES.index(v) if v in STATES else -1 for v in seen] + [-1], dtype=np.intp)[codes]


def count_codes(codes: np.ndarray) -> dict[ScoreState, int]:
    """count_states of the states whose state_codes are `codes`."""
    counts = np.bincount(codes[codes >= 0], minlength=len(STATES))
    return {state: int(n) for state, n in zip(STATES, counts, strict=True)}


def state_counts(statuses: pd.Series) -> dict[str, int]:
    """The count column of each score state among stored verdict statuses (None or NaN: unjudged)."""
    states = statuses.map(lambda s: "unjudged" if s is None or s != s else VERDICT_STATES.get(s, s))
    return {STATE_COLUMNS[state]: n for state, n in count_states(states).items()}


def state_columns(frame: pd.DataFrame) -> dict[str, pd.Series]:
    """The state count columns of a summary frame under readable headers, for a table that shows them beside its
    means ("scored", "not applicable", "unparseable", "judge errors", "unjudged", "skipped")."""
    return {_WORDS[state][1]: frame[column] for state, column in STATE_COLUMNS.items() if column in frame.columns}


def state_totals(frame: pd.DataFrame) -> dict[ScoreState, int]:
    """Each state's count summed over the rows of a summary frame (the states whose column it carries; a value that
    is not a number counts 0)."""
    carried = [(state, column) for state, column in STATE_COLUMNS.items() if column in frame.columns]
    dtypes = frame.dtypes  # the dtypes once and each column once: no sub-frame is copied
    if all(pd.api.types.is_numeric_dtype(dtypes[c]) and not pd.api.types.is_bool_dtype(dtypes[c]) for _, c in carried):
        return {state: int(np.nansum(frame[column].to_numpy(dtype=float)))  # counts are exact in float64
                for state, column in carried}
    return {state: int(pd.to_numeric(frame[column], errors="coerce").fillna(0).sum()) for state, column in carried}


def frame_state_text(frame: pd.DataFrame, metric: str | None = None) -> str:
    """state_text of a summary frame's summed state columns; `metric` defaults to the frame's one metric."""
    if metric is None and "metric" in frame.columns and frame["metric"].nunique() == 1:
        metric = str(frame["metric"].iloc[0])
    return state_text(state_totals(frame), metric)


def metric_state_texts(frame: pd.DataFrame, keys: Sequence, by: str | None = None) -> dict:
    """frame_state_text of the rows of each of `keys` in a summary frame, from one grouped sum instead of a filtered
    frame per caption: keys are metrics, or with `by` (value of `by`, metric) pairs; a key without rows gets the text
    of zero counts, as frame_state_text of no rows does."""
    carried = [(state, column) for state, column in STATE_COLUMNS.items() if column in frame.columns]
    counts = np.column_stack([pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
                              for _, column in carried]) if carried else np.zeros((len(frame), 0))
    grouping = frame["metric"].astype(object) if by is None else pd.Series(
        list(zip(frame[by], frame["metric"], strict=True)), index=frame.index, dtype=object)
    codes, uniques = pd.factorize(grouping)
    totals = np.zeros((len(uniques), len(carried)))
    np.add.at(totals, codes[codes >= 0], np.nan_to_num(counts[codes >= 0]))
    found = dict(zip(uniques, totals, strict=True))
    none = np.zeros(len(carried))
    return {key: state_text({state: int(t) for (state, _), t in zip(carried, found.get(key, none), strict=True)},
                            key if by is None else key[1]) for key in keys}


IAS_METRICS = ("loose_ias", "strict_ias", *(f"loose_{c}" for c in CATEGORIES))


def response_statuses(scores: pd.DataFrame, metric: str) -> pd.Series:
    """Each response's stored status for one EnterpriseRAG metric of the per-response frame (response_scores): the
    RAG metrics' own `<metric>_status`; over-abstention is refusal's, not applicable on gap instances; an IAS value
    missing is a judge error when a constraint verdict of the response failed, unjudged when one was left unjudged,
    else not applicable (no constraint of the kind). Amounts (cost, latency) are scored where measured."""
    if metric == "over_abstention":
        return scores["refusal_status"].astype(object).where(scores["mode"] != "gap", "not_applicable")
    if f"{metric}_status" in scores.columns:
        return scores[f"{metric}_status"].astype(object)
    present = scores[metric].notna()
    if metric not in IAS_METRICS:
        return pd.Series("ok", index=scores.index, dtype=object).where(present, None)
    errors = scores.get("n_constraint_errors", pd.Series(0, index=scores.index)).fillna(0) > 0
    unjudged = scores.get("n_constraint_unjudged", pd.Series(0, index=scores.index)).fillna(0) > 0
    status = np.select([present, errors, unjudged], ["ok", "error", "unjudged"], default="not_applicable")
    return pd.Series(status, index=scores.index, dtype=object).where(status != "unjudged", None)


# a stored status, or a state name already, -> its state's position in STATES (state_counts' mapping)
_STATE_CODES: dict[str, int] = {**{state: i for i, state in enumerate(STATES)},
                                **{status: STATES.index(state) for status, state in VERDICT_STATES.items()}}


def _state_codes(statuses: pd.Series) -> np.ndarray:
    """Each stored status's position in STATES (None or NaN: unjudged; a status of no state: len(STATES))."""
    labels, uniques = pd.factorize(statuses)  # missing: -1, the table's last entry
    table = [_STATE_CODES.get(status, len(STATES)) for status in uniques] + [STATES.index("unjudged")]
    return np.asarray(table, dtype=np.int64)[labels]


def metric_state_counts(scores: pd.DataFrame, metrics: Sequence[str], by: str = "model") -> pd.DataFrame:
    """Per `by` value and metric: the count of each score state among the responses of the per-response frame (one
    pass per metric over the whole frame, counted per `by` value at once; rows as the groupby's sorted keys)."""
    columns = [by, "metric", *STATE_COLUMNS.values()]
    keys = scores[by] if by in scores.columns else pd.Series(dtype=object)
    present = keys.notna().to_numpy()
    if not present.any():
        return pd.DataFrame(columns=columns)
    key_codes, uniques = pd.factorize(keys[present], sort=True)
    width = len(STATES) + 1  # the last slot counts statuses of no state (state_counts leaves them out)
    counts = np.stack([np.bincount(key_codes * width + _state_codes(response_statuses(scores, m)[present]),
                                   minlength=len(uniques) * width).reshape(len(uniques), width)[:, : len(STATES)]
                       for m in metrics], axis=1) if metrics else np.zeros((len(uniques), 0, len(STATES)), np.int64)
    frame = pd.DataFrame(counts.reshape(-1, len(STATES)), columns=[STATE_COLUMNS[s] for s in STATES])
    frame.insert(0, "metric", list(metrics) * len(uniques))
    frame.insert(0, by, np.repeat(uniques.to_numpy(), len(metrics)))
    return frame[columns]


def with_metric_states(long: pd.DataFrame, states: pd.DataFrame, by: str = "model") -> pd.DataFrame:
    """A long (by, metric) frame of means with each row's state counts beside it (metric_state_counts)."""
    return long.merge(states, on=[by, "metric"], how="left")


def states_beside(frame: pd.DataFrame, states: pd.DataFrame, on: Sequence[str], prefixes: Mapping[str, str],
                  column: str = "model") -> pd.DataFrame:
    """`frame` with the state counts of each `column` value of `states` (a metric_state_counts frame) beside its rows
    as <prefix>_<count column>, e.g. a pair table's a_n_scored and b_n_scored; 0 where no response is behind it."""
    out = frame
    for value, prefix in prefixes.items():
        mine = states[states[column] == value].drop(columns=column)
        renamed = {c: f"{prefix}_{c}" for c in STATE_COLUMNS.values()}
        out = out.merge(mine.rename(columns=renamed), on=list(on), how="left")
        out[list(renamed.values())] = out[list(renamed.values())].fillna(0).astype(int)
    return out
