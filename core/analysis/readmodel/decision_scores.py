"""The per-item values a decision across protocols weighs: one frame for every protocol of the runs, one column per
declared decision metric (core.protocols.decision_metrics), keyed `protocol:metric` (the default protocol's metrics
keep their bare names, so its rules, gold labels and pages read as before).

Each protocol's values come from the read model's own per-response reading: the constraint protocols' response_scores,
a protocol's declared `decision_scores` hook, else reference_scores with instruction_scores' IAS for the aggregates it
declares. Nothing is recomputed here: values are renamed, keyed and reduced to the latest item per model, as
load_scores does for the default protocol.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
from sqlalchemy.engine import Engine

from core.analysis.readmodel.instructions import INSTRUCTION_METRICS, instruction_scores
from core.analysis.readmodel.reference import reference_scores
from core.analysis.readmodel.responses import UNJUDGED, read_sql, response_scores
from core.analysis.readmodel.scope import latest_per_model_instance, prepare_scores
from core.analysis.readmodel.states import count_codes, count_states, response_statuses, state_codes
from core.metrics import DECLARATIONS, STATES, VERDICT_STATES, MetricDeclaration, get_metric, resolve_hook
from core.protocols import (
    DEFAULT_PROTOCOL,
    PROTOCOLS,
    DecisionMetric,
    constraint_protocols,
    decision_metrics,
    get_protocol,
)
from core.registry import unknown_name_message
from core.scoring.summaries import runs_sql
from core.store.schema import NO_MODE

SEPARATOR = ":"
PER_CONSTRAINT = "constraint"  # the constraint verdict metric: one value per constraint, read through the IAS
# per protocol of the instances, the first done response of the runs to one of its instances will do (an index seek
# each, stopping at the first hit): 0.02 ms at paper scale, where the DISTINCT over every done response took 2.3 ms
_PROTOCOLS_SQL = """
SELECT p.protocol FROM (SELECT DISTINCT protocol FROM instance) p
WHERE EXISTS (SELECT 1 FROM instance i JOIN response r ON r.instance_id = i.id
              WHERE i.protocol = p.protocol AND r.status = 'done' AND r.run_id IN ({runs}))
"""
_COST_SQL = "SELECT r.id AS response_id, r.cost_usd, r.latency_ms FROM response r WHERE r.run_id IN ({runs})"
ID_COLUMNS = ("run_id", "response_id", "model", "instance_uid", "domain", "language", "condition")


@dataclass(frozen=True)
class DecisionKey:
    """One metric a decision can weigh: its key, its protocol (id and title) and its declaration as a decision reads it."""

    key: str
    protocol: str
    protocol_title: str
    metric: DecisionMetric

    @property
    def label(self) -> str:
        """The metric's label with its protocol, e.g. 'Strict IAS (EnterpriseRAG)'."""
        return f"{self.metric.label} ({self.protocol_title})"

    @property
    def declaration(self) -> MetricDeclaration:
        """The metric's declaration (core.metrics): kind, range, states."""
        return get_metric(self.metric.id)


def metric_key(protocol: str, metric: str) -> str:
    """The column a decision reads `metric` of `protocol` from: the bare id for the default protocol, else
    'protocol:metric'."""
    return metric if protocol == DEFAULT_PROTOCOL else f"{protocol}{SEPARATOR}{metric}"


def split_key(key: str) -> tuple[str, str]:
    """(protocol, metric id) of a decision key (the default protocol's 'PROTOCOL:strict_ias' and bare 'strict_ias' name one metric)."""
    protocol, sep, metric = key.partition(SEPARATOR)
    return (protocol, metric) if sep else (DEFAULT_PROTOCOL, key)


def normal_key(key: str) -> str:
    """The canonical spelling of a key (the default protocol's metrics bare)."""
    return metric_key(*split_key(key))


def _metrics(protocol: str) -> tuple[DecisionMetric, ...]:
    """The decision metrics of a protocol that take one value per response (a per-constraint verdict does not)."""
    return tuple(m for m in decision_metrics(protocol) if m.id != PER_CONSTRAINT)


def decision_catalogue() -> dict[str, DecisionKey]:
    """Every decision metric of every registered protocol, keyed, the default protocol first and headline metrics
    first within a protocol (read from the declarations alone)."""
    return dict(_catalogue(PROTOCOLS.version, DECLARATIONS.version))


@lru_cache(maxsize=8)
def _catalogue(*_registered: int) -> dict[str, DecisionKey]:
    """decision_catalogue, kept while no protocol or metric is registered or removed (callers get a copy)."""
    names = sorted(PROTOCOLS.names(), key=lambda p: (p != DEFAULT_PROTOCOL, p))
    out: dict[str, DecisionKey] = {}
    for protocol in names:
        title = get_protocol(protocol).title
        for metric in _metrics(protocol):
            key = metric_key(protocol, metric.id)
            out[key] = DecisionKey(key, protocol, title, metric)
    return out


def decision_key(key: str) -> DecisionKey:
    """The catalogue entry of `key` (either spelling); an unknown key raises KeyError naming the known ones."""
    return _decision_key(key, PROTOCOLS.version, DECLARATIONS.version)


@lru_cache(maxsize=1024)
def _decision_key(key: str, *_registered: int) -> DecisionKey:
    """decision_key, kept while no protocol or metric is registered or removed (an unknown key is not kept)."""
    protocol, metric = split_key(key)
    if protocol in PROTOCOLS:
        for declared in _metrics(protocol):
            if declared.id == metric:
                return DecisionKey(metric_key(protocol, metric), protocol, get_protocol(protocol).title, declared)
    raise KeyError(unknown_name_message("decision metric", key, list(decision_catalogue())))


def run_protocols(engine: Engine, run_ids: Sequence[int]) -> list[str]:
    """The protocols whose instances the runs answered (sorted)."""
    return sorted(read_sql(engine, runs_sql(_PROTOCOLS_SQL, run_ids))["protocol"].dropna().astype(str))


def _generic_scores(engine: Engine, run_ids: Sequence[int], judge: str, protocol: str) -> pd.DataFrame:
    """reference_scores of the protocol with instruction_scores' IAS for the instruction aggregates it declares."""
    frame = reference_scores(engine, run_ids, judge, protocol)
    wanted = [m for m in get_protocol(protocol).aggregates if m in INSTRUCTION_METRICS]
    if wanted and not frame.empty:
        ias = instruction_scores(engine, run_ids, judge, protocol).set_index("response_id")
        for metric in wanted:
            frame[metric] = frame["response_id"].map(ias[metric]).astype(float)
            errors = frame["response_id"].map(ias["errors"]).fillna(0)
            unjudged = frame["response_id"].map(ias["unjudged"]).fillna(0)
            status = np.select([frame[metric].notna(), errors > 0, unjudged > 0], ["ok", "error", "unjudged"],
                               default="not_applicable")
            frame[f"{metric}_status"] = pd.Series(status, index=frame.index, dtype=object).where(status != "unjudged")
    return frame


def protocol_scores(engine: Engine, run_ids: Sequence[int], judge: str, protocol: str) -> pd.DataFrame:
    """One row per done response of `protocol` with its decision metrics (its declared `decision_scores` hook, else
    _generic_scores)."""
    hook = get_protocol(protocol).decision_scores
    return resolve_hook(hook)(engine, run_ids, judge) if hook else _generic_scores(engine, run_ids, judge, protocol)


def _keyed(frame: pd.DataFrame, protocol: str, costs: pd.DataFrame) -> pd.DataFrame:
    """A protocol's per-response frame with its metrics renamed to keys, a composite instance_uid (protocol, instance,
    condition: one item each), generation cost and latency, and no mode (subsets are the default protocol's)."""
    metrics = [m.id for m in _metrics(protocol) if m.id in frame.columns]
    rename: dict[str, str] = {}
    for m in metrics:
        key = metric_key(protocol, m)
        rename |= {m: key, f"{m}_status": f"{key}_status", f"{m}_state": f"{key}_state"}
    condition = frame["condition"].fillna("").astype(str) if "condition" in frame else pd.Series("", index=frame.index)
    out = frame[[c for c in ID_COLUMNS if c in frame.columns] + [c for c in rename if c in frame.columns]].rename(
        columns=rename)
    out["item_uid"] = out["instance_uid"].astype(str)
    out["instance_uid"] = protocol + "/" + out["item_uid"] + np.where(condition != "", "#" + condition, "")
    out["protocol"], out["mode"] = protocol, NO_MODE
    cost = costs.set_index("response_id")
    out["cost_usd"] = out["response_id"].map(cost["cost_usd"]).astype(float)
    out["latency_ms"] = out["response_id"].map(cost["latency_ms"]).astype(float)
    out["judge_cost_usd"] = 0.0
    return out


def decision_scores(engine: Engine, run_ids: Sequence[int], judge: str,
                    responses: pd.DataFrame | None = None) -> pd.DataFrame:
    """Prepared per-item scores of every protocol the runs answered, under `judge`: the default protocol's as
    load_scores gives them, then every other protocol's decision metrics as `protocol:metric` columns (NaN on the
    other protocols' rows), one row per (model, item) with the latest run winning and repeats averaged. `responses`:
    the runs' response_scores frame when the caller has read it already (it is not read again)."""
    present = run_protocols(engine, run_ids)
    base = response_scores(engine, run_ids, judge) if responses is None else responses
    base = base.assign(protocol=DEFAULT_PROTOCOL, item_uid=base["instance_uid"])
    frames = [base]
    others = [p for p in present if p not in constraint_protocols()]
    if others:  # only other protocols' rows take their cost from here (response_scores has the default protocol's)
        costs = read_sql(engine, runs_sql(_COST_SQL, run_ids))
        frames += [_keyed(protocol_scores(engine, run_ids, judge, p), p, costs) for p in others]
    frames = [f for f in frames if not f.empty] or [base]
    combined = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    combined = combined.reindex(columns=list(dict.fromkeys([*base.columns, *combined.columns])))  # none of the default
    for column in combined.columns:  # concat leaves object columns where one side had no rows of a float column
        if column.endswith(("_status", "_state")) or column in ID_COLUMNS or combined[column].dtype != object:
            continue
        converted = pd.to_numeric(combined[column], errors="coerce")
        if converted.notna().sum() == combined[column].notna().sum():
            combined[column] = converted.astype(float)
    return prepare_scores(latest_per_model_instance(combined))


def key_statuses(scores: pd.DataFrame, key: str) -> pd.Series:
    """Each row's stored status of a decision key (readmodel.states.response_statuses), on its protocol's rows only."""
    protocol, _ = split_key(key)
    mine = scores["protocol"] == protocol if "protocol" in scores else pd.Series(True, index=scores.index)
    if key not in scores.columns:
        return pd.Series(None, index=scores.index[mine], dtype=object)
    rows = scores if mine.all() else scores[mine]  # every row the protocol's: the frame itself, not a copy of it
    try:
        return response_statuses(rows, key)
    except KeyError:  # a frame without the stored statuses a derived metric reads: a value is scored, else unjudged
        present = rows[key].notna()
        return pd.Series("ok", index=present.index, dtype=object).where(present, None)




EVIDENCE_COLUMNS = ["model", "key", "protocol", "protocol_title", "metric", "label", "role", "judge", "judge_label",
                    "value", "ci_low", "ci_high", "n", *(f"n_{s}" for s in STATES), "interval", "small_n"]


def key_states(scores: pd.DataFrame, key: str) -> pd.Series:
    """Each row's score state of a decision key (its `<key>_state` where stored, else from its status)."""
    if f"{key}_state" in scores.columns:
        return scores[f"{key}_state"].astype(object).where(scores[f"{key}_state"].notna(), UNJUDGED)
    return key_statuses(scores, key).map(VERDICT_STATES).astype(object).fillna(UNJUDGED)


def key_state_codes(scores: pd.DataFrame, key: str) -> np.ndarray:
    """state_codes of key_states(scores, key), without making the stored states Python strings first."""
    column = f"{key}_state"
    if column not in scores.columns:
        return _status_state_codes(key_statuses(scores, key))
    codes = state_codes(scores[column])
    return np.where(scores[column].isna().to_numpy(), STATES.index(UNJUDGED), codes)


def _status_state_codes(statuses: pd.Series) -> np.ndarray:
    """state_codes of the score states of stored statuses as key_states reads them (a status of no state and a
    missing one: unjudged), each distinct status mapped once."""
    labels, seen = pd.factorize(statuses)  # missing: -1, the table's last entry
    states = [VERDICT_STATES.get(status, UNJUDGED) for status in seen] + [UNJUDGED]
    return np.array([STATES.index(s) if s in STATES else -1 for s in states], dtype=np.intp)[labels]


def _model_intervals(values: np.ndarray | None, at_of: list[np.ndarray], entry: DecisionKey) -> list:
    """stats.interval of `values` at each model's row positions (no values: an empty interval), one
    stats.metric_intervals call per number of rows over those models' columns (column-major, so each column is
    summed as one model's values alone: the same numbers, tests/analysis/test_key_summary_intervals.py)."""
    from core.analysis import stats

    out: list = [None] * len(at_of)
    lengths = [len(at) if values is not None else 0 for at in at_of]
    for length in dict.fromkeys(lengths):
        models = [j for j, n in enumerate(lengths) if n == length]
        matrix = np.full((max(length, 1), len(models)), np.nan, order="F")
        for i, j in enumerate(models):
            if length and values is not None:
                matrix[:, i] = values[at_of[j]]
        ci = stats.metric_intervals(matrix, [entry.declaration] * len(models))
        for i, j in enumerate(models):
            out[j] = stats.Interval(float(ci.mean[i]), float(ci.ci_low[i]), float(ci.ci_high[i]), int(ci.n[i]),
                                    str(ci.method[i]))
    return out


def _protocol_rows(scores: pd.DataFrame, protocol: str, models: list[str]) -> tuple[pd.DataFrame, list[np.ndarray]]:
    """The rows of `protocol`'s items and, per model of `models`, its row positions among them, in order."""
    mine = scores[scores["protocol"] == protocol] if "protocol" in scores else scores
    rows_of = mine.groupby("model", sort=False).indices if len(mine) else {}
    return mine, [rows_of.get(model, np.empty(0, dtype=np.intp)) for model in models]


def key_summary(scores: pd.DataFrame, metrics: Sequence[str], judge: str) -> pd.DataFrame:
    """Per model x decision metric, on that metric's protocol's items: the mean with the 95% interval of its declared
    kind (stats.interval, as every table of the read model), n with a value, the count of every score state, the
    interval family and small_n; the judge named. A model with no item of the protocol has n = 0 and no value."""
    from core.analysis import stats
    from core.scoring.judges.names import judge_label

    rows: list[dict] = []
    models = sorted(scores["model"].dropna().unique()) if "model" in scores else []
    split: dict[str, tuple[pd.DataFrame, list[np.ndarray]]] = {}  # protocol -> its rows, each model's positions
    for key in metrics:
        entry = decision_key(key)
        if entry.protocol not in split:
            split[entry.protocol] = _protocol_rows(scores, entry.protocol, models)
        mine, at_of = split[entry.protocol]
        measured = key in mine.columns
        all_values = mine[key].to_numpy(dtype=float) if measured else None
        all_codes = key_state_codes(mine, key) if measured else None  # row-wise, counted per model below
        cis = _model_intervals(all_values, at_of, entry)
        for model, at, ci in zip(models, at_of, cis, strict=True):
            states = count_codes(all_codes[at]) if all_codes is not None else count_states(pd.Series(UNJUDGED, index=at))
            rows.append({"model": model, "key": entry.key, "protocol": entry.protocol,
                         "protocol_title": entry.protocol_title, "metric": entry.metric.id, "label": entry.label,
                         "role": entry.metric.role, "judge": judge, "judge_label": judge_label(judge),
                         "value": ci.mean, "ci_low": ci.ci_low, "ci_high": ci.ci_high, "n": ci.n,
                         **{f"n_{s}": n for s, n in states.items()}, "interval": ci.method,
                         "small_n": bool(0 < ci.n < stats.SMALL_N)})
    return pd.DataFrame(rows, columns=EVIDENCE_COLUMNS)
