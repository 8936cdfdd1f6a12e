"""Per-response scores, constraint verdicts and failure counts read from the store (the IAS rules live here)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sqlalchemy import select, text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from core.generation.reasoning import stored_split
from core.metrics import STATES, VERDICT_STATES
from core.scoring.ias_sums import ias_from_counts
from core.scoring.summaries import (
    COUNT_COLUMNS,
    FAILURE_SELECT_SQL,
    HAS_PROTOCOL_SQL,
    JUDGE_FILTER_SQL,
    METRIC_NAMES,
    MODE_SQL,
    PROTOCOL_JOIN_SQL,
    constraint_protocols_sql,
    enterprise_scores_sql,
    metric_select_sql,
    read_response_pack,
    runs_sql,
    stale_summary_runs,
)
from core.scoring.summaries import UNJUDGED as UNJUDGED  # the read model's name for it (decision_scores, ...)
from core.store.generated import generated_mark
from core.store.models import Constraint, Document, Instance, Model, Response, Verdict
from core.store.schema import CATEGORIES

RULE_JUDGE = "rule"

RESPONSE_COLUMNS: tuple[str, ...] = (
    "run_id", "response_id", "model", "instance_uid", "domain", "mode", "origin",
    "loose_ias", "strict_ias", *(f"loose_{c}" for c in CATEGORIES), *METRIC_NAMES,
    *(f"{m}_status" for m in METRIC_NAMES),
    "n_constraints", "n_constraint_errors", "n_constraint_unjudged", "has_protocol",
    "cost_usd", "latency_ms", "judge_calls", "judge_cost_usd", *(f"{m}_state" for m in METRIC_NAMES),
)

STATE_STATUS: dict[str, str] = {state: status for status, state in VERDICT_STATES.items()}  # state -> verdict status

CONSTRAINT_COLUMNS: tuple[str, ...] = (
    "response_id", "run_id", "model", "instance_uid", "domain", "mode", "category", "sub_dimension", "cid", "text",
    "method", "judge", "status", "passed", "reason",
)


@dataclass(frozen=True)
class IAS:
    """Instruction adherence of one response: Loose (share satisfied) and Strict (all satisfied), with counts."""

    loose: float | None
    strict: float | None
    n_judged: int
    n_failed: int
    n_errors: int
    n_unjudged: int


def ias(verdicts: Iterable[tuple[str, bool | None]]) -> IAS:
    """IAS of one response from its (status, passed) pairs, by ias_from_counts (None where undetermined)."""
    pairs = list(verdicts)
    judged = [bool(p) for s, p in pairs if s == "ok" and p is not None]
    n_errors = sum(s == "error" for s, _ in pairs)
    n_unjudged = sum(s == "not_applicable" or (s == "ok" and p is None) for s, p in pairs)
    loose, strict = (float(x) for x in ias_from_counts(len(judged), sum(judged), n_errors, n_unjudged))
    return IAS(None if np.isnan(loose) else loose, None if np.isnan(strict) else strict, len(judged),
               judged.count(False), n_errors, n_unjudged)


# an instance's constraint count k.constraints, joined onto the response r
CONSTRAINT_COUNT_JOIN_SQL = """
LEFT JOIN (SELECT instance_id, COUNT(*) AS constraints FROM "constraint" GROUP BY instance_id) k
       ON k.instance_id = r.instance_id"""

# every instance a response of the runs answered: uid, domain, mode, origin, knowledge protocol and constraint count
_INSTANCES_SQL = f"""
SELECT i.id AS instance_id, i.uid AS instance_uid, d.name AS domain, i.mode, i.origin, {HAS_PROTOCOL_SQL} AS has_protocol,
       COALESCE(k.constraints, 0) AS instance_constraints
FROM instance i JOIN domain d ON d.id = i.domain_id {PROTOCOL_JOIN_SQL.replace("r.instance_id", "i.id")}
{CONSTRAINT_COUNT_JOIN_SQL.replace("r.instance_id", "i.id")}
WHERE i.id IN (SELECT DISTINCT instance_id FROM response WHERE run_id IN ({{runs}}))
ORDER BY i.id
"""
_MODELS_SQL = "SELECT id AS model_id, name AS model FROM model ORDER BY id"

# the failure_count sums every Figure-4 read returns: verdicts, decided, failed and the six state counts
_FAILURE_SUMS_SQL = """SUM(f.verdicts) AS verdicts,
       SUM(f.decided) AS decided, SUM(f.failed) AS failed, SUM(f.decided) AS n_scored,
       SUM(f.not_applicable) AS n_not_applicable, SUM(f.unparseable) AS n_unparseable, SUM(f.judge_errors) AS n_error,
       SUM(f.unjudged) AS n_unscored, SUM(f.skipped) AS n_skipped"""
FAILURE_SUM_COLUMNS: tuple[str, ...] = ("verdicts", "decided", "failed", "n_scored", "n_not_applicable",
                                        "n_unparseable", "n_error", "n_unscored", "n_skipped")

_FAILURE_COUNTS_SQL = """
SELECT m.name AS model, d.name AS domain, f.mode, f.category, f.sub_dimension, """ + _FAILURE_SUMS_SQL + """
FROM {source} f JOIN model m ON m.id = f.model_id JOIN domain d ON d.id = f.domain_id
WHERE f.judge = :judge AND f.run_id IN ({runs})
GROUP BY m.name, d.name, f.mode, f.category, f.sub_dimension
"""

# Figure 4's bars summed in the database: per model, mode and category (and sub-dimension) over the chosen domains;
# grouped by the model's id, its name joined to the groups (a tenth less than grouping by name)
_FAILURE_VIEW_SQL = """
SELECT m.name AS model, g.* FROM (
SELECT f.model_id, {keys}, """ + _FAILURE_SUMS_SQL + """
FROM {source} f{domain_join}
WHERE f.judge = :judge AND f.run_id IN ({runs}){where}
GROUP BY f.model_id, {keys}) g JOIN model m ON m.id = g.model_id
"""


def _summary_source(engine: Engine, run_ids: Sequence[int], judge: str, table: str, select_sql: str,
                    stale: bool | None = None) -> str:
    """The stored summary table when every run's summaries are current, else the same SELECT inline (reads only);
    `stale`: whether some are not (None: ask stale_summary_runs)."""
    if stale is None:
        stale = bool(stale_summary_runs(engine, run_ids, judge))
    return "(" + runs_sql(select_sql, run_ids) + ")" if stale else table


def metric_source(engine: Engine, run_ids: Sequence[int], judge: str) -> str:
    """response_metric when every run's summaries for `judge` are current, else its SELECT inline (reads only)."""
    return _summary_source(engine, run_ids, judge, "response_metric", metric_select_sql(judge))


def state_statuses(states: pd.Series) -> pd.Series:
    """The verdict status of each state (scored -> ok, ...); None for unjudged and skipped (no verdict)."""
    return states.map(STATE_STATUS).astype(object).where(states.isin(list(STATE_STATUS)), None)


_CONSTRAINT_VERDICTS_SQL = """
SELECT v.response_id, v.run_id, m.name AS model, i.uid AS instance_uid, d.name AS domain, """ + MODE_SQL + """ AS mode,
       c.category,
       c.sub_dimension, c.cid, c.text, v.method, v.judge, v.status, v.passed, v.reason
FROM verdict v JOIN "constraint" c ON c.id = v.constraint_id JOIN response r ON r.id = v.response_id
JOIN instance i ON i.id = r.instance_id JOIN domain d ON d.id = i.domain_id JOIN model m ON m.id = r.model_id
WHERE v.metric = 'constraint' AND v.run_id IN ({runs}) AND """ + JUDGE_FILTER_SQL + """ {extra}
ORDER BY v.response_id, c.position
"""


def read_sql(engine: Engine, sql: str, params: dict | None = None) -> pd.DataFrame:
    """A DataFrame from a textual SQL query with bound parameters (rows taken straight off the DB-API cursor)."""
    with engine.connect() as conn:
        result = conn.execute(text(sql), params or {})
        columns = list(result.keys())
        rows = result.cursor.fetchall() if result.cursor is not None else []
    return pd.DataFrame.from_records(rows, columns=columns, coerce_float=True)


def _empty_scores() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=float if c in _FLOAT_COLUMNS else object) for c in RESPONSE_COLUMNS})


_FLOAT_COLUMNS = frozenset({"loose_ias", "strict_ias", *(f"loose_{c}" for c in CATEGORIES), *METRIC_NAMES,
                            "cost_usd", "latency_ms", "judge_cost_usd"})


def read_columns(engine: Engine, sql: str, params: dict | None = None) -> dict[str, tuple]:
    """A textual SQL query's result as one tuple per column, transposed straight off the DB-API cursor (no frame is
    built row by row); empty when it has no row."""
    with engine.connect() as conn:
        result = conn.execute(text(sql), params or {})
        columns = list(result.keys())
        rows = result.cursor.fetchall() if result.cursor is not None else []
    return dict(zip(columns, zip(*rows, strict=True), strict=True)) if rows else {}


Column = tuple | np.ndarray  # a fetched column: a tuple off the cursor, or an array from a response pack


def _floats(column: Column) -> np.ndarray:
    """A fetched column as floats (NULL -> NaN)."""
    return np.array(column, dtype=float)


def _counts(column: Column) -> np.ndarray:
    """A fetched count column as int64 (NULL -> 0: no summary row)."""
    values = _floats(column)
    return np.where(np.isnan(values), 0, values).astype("int64")


def _counted_cost(column: Column) -> np.ndarray:
    """A fetched judge cost column as floats (NULL -> 0.0: no judge call recorded)."""
    values = _floats(column)
    return np.where(np.isnan(values), 0.0, values)


def response_ias(n: np.ndarray, judged: np.ndarray, passed: np.ndarray, errors: np.ndarray,
                 instance_constraints: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(constraints, unjudged, Loose IAS, Strict IAS) per response from its summary counts (0 without a summary row):
    a response counts at least its instance's constraints, and unjudged = not_applicable, ok without a decision, or no
    verdict of this judge at all for a constraint (ias_from_counts)."""
    n = np.maximum(n, instance_constraints)
    unjudged = n - judged - errors
    loose, strict = ias_from_counts(judged, passed, errors, unjudged)
    return n, unjudged, loose, strict


def _positions(ids: Column, keys: np.ndarray) -> np.ndarray:
    """The row of each of `ids` among `keys` (ascending); an id without a key raises."""
    wanted = np.array(ids, dtype="int64")
    at = np.minimum(np.searchsorted(keys, wanted), max(len(keys) - 1, 0))
    if len(keys) == 0 or not np.array_equal(keys[at], wanted):
        raise LookupError("a response's instance or model was not read with it")
    return at


_TEXT = pd.Series(["text"]).dtype  # the dtype pandas infers for a column of strings (Arrow-backed 'str' in pandas 3)


def _labels(names: Sequence[str | None], at: np.ndarray) -> pd.Series:
    """names[at] as the column pandas infers for those strings, taken in Arrow without a Python object per row where
    pandas keeps strings in Arrow, no name is missing and there are rows (else built from the objects, as inference
    does)."""
    if len(at) and isinstance(_TEXT, pd.StringDtype) and _TEXT.storage == "pyarrow" and None not in names:
        import pyarrow as pa

        taken = pa.array(list(names), type=pa.large_string()).take(pa.array(at))
        return pd.Series(pd.arrays.ArrowStringArray(taken, dtype=_TEXT))
    return pd.Series(np.array(names, dtype=object)[at])


def _ids(fetched: dict[str, tuple], key: str) -> np.ndarray:
    """A fetched id column as int64 keys (ascending: the lookups are read ORDER BY id)."""
    return np.array(fetched[key], dtype="int64")


_STATE_STATUSES = np.array([STATE_STATUS.get(state) for state in STATES], dtype=object)  # None: no verdict status


def _states(codes: Column, metric: str) -> np.ndarray:
    """Fetched state codes (state_code_sql) as an array of codes; a stored state outside core.metrics.STATES raises."""
    values = np.array(codes, dtype=np.intp)
    if (values < 0).any():
        raise ValueError(f"response_metric holds a {metric} state outside {', '.join(STATES)}")
    return values


def response_scores(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """One row per done EnterpriseRAG response: IAS (loose, strict, per category), RAG metrics, counts, generator and
    judge cost (other protocols' responses are read by their own functions, e.g. reference_scores)."""
    stale = bool(stale_summary_runs(engine, run_ids, judge))
    # the runs' packs where their summaries are current and packed (core.scoring.summaries.store_response_pack), else the statement
    fetched: Mapping[str, Column] | None = None if stale else read_response_pack(engine, run_ids, judge)
    if fetched is None:
        fetched = read_columns(engine, enterprise_scores_sql(stale, run_ids, judge), {"judge": judge})
    if not fetched:
        return _empty_scores()
    instances = read_columns(engine, runs_sql(_INSTANCES_SQL, run_ids))
    models = read_columns(engine, _MODELS_SQL)
    at_instance = _positions(fetched["instance_id"], _ids(instances, "instance_id"))
    counts = {c: _counts(fetched[c]) for c in (*COUNT_COLUMNS, "judge_calls")}
    constraints = np.array(instances["instance_constraints"], dtype="int64")[at_instance]
    n, unjudged, loose, strict = response_ias(counts["n"], counts["judged"], counts["passed"], counts["errors"],
                                              constraints)
    out: dict[str, object] = {c: np.array(fetched[c], dtype="int64") for c in ("run_id", "response_id")}
    out["model"] = _labels(models["model"], _positions(fetched["model_id"], _ids(models, "model_id")))
    out |= {c: _labels(instances[c], at_instance) for c in ("instance_uid", "domain", "mode", "origin")}
    out["loose_ias"], out["strict_ias"] = loose, strict
    for c in CATEGORIES:
        out[f"loose_{c}"] = ias_from_counts(counts[f"judged_{c}"], counts[f"passed_{c}"], 0, 0)[0]
    codes = {m: _states(fetched[f"{m}_state"], m) for m in METRIC_NAMES}
    out |= {m: _floats(fetched[m]) for m in METRIC_NAMES}
    # object: None without a status (state_statuses of the states, from their codes)
    out |= {f"{m}_status": pd.Series(_STATE_STATUSES[codes[m]], dtype=object) for m in METRIC_NAMES}
    out |= {"n_constraints": n, "n_constraint_errors": counts["errors"], "n_constraint_unjudged": unjudged,
            "has_protocol": np.array(instances["has_protocol"], dtype=bool)[at_instance],
            "cost_usd": _floats(fetched["cost_usd"]), "latency_ms": _floats(fetched["latency_ms"]),
            "judge_calls": counts["judge_calls"], "judge_cost_usd": _counted_cost(fetched["judge_cost_usd"])}
    out |= {f"{m}_state": _labels(STATES, codes[m]) for m in METRIC_NAMES}
    return pd.DataFrame({c: out[c] for c in RESPONSE_COLUMNS})


# per domain, the first done response of the runs to one of its instances will do (the instance_id index, stopping at
# the first hit): 0.02 ms at paper scale, where the DISTINCT over every done response's instance took 5.7 ms
_DOMAINS_SQL = """
SELECT DISTINCT d.name AS domain FROM domain d
WHERE EXISTS (SELECT 1 FROM instance i JOIN response r ON r.instance_id = i.id
              WHERE i.domain_id = d.id AND r.status = 'done' AND r.run_id IN ({runs})
              AND i.protocol IN ({constraint_protocols}))
"""


def response_domains(engine: Engine, run_ids: Sequence[int]) -> list[str]:
    """The domains of the runs' done EnterpriseRAG responses (the domains response_scores has rows for), sorted."""
    return sorted(str(d) for d in read_columns(engine, runs_sql(constraint_protocols_sql(_DOMAINS_SQL), run_ids)).get(
        "domain", ()))  # the column off the cursor: no frame


def failure_count_rows(engine: Engine, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """Constraint verdicts, decided and failed counts per model, domain, mode, category and sub-dimension (from
    failure_count), with the six state counts: decided (scored), the undetermined verdicts by status and the
    constraints with no verdict of the judge (unjudged)."""
    source = _summary_source(engine, run_ids, judge, "failure_count", FAILURE_SELECT_SQL)
    return read_sql(engine, runs_sql(_FAILURE_COUNTS_SQL.replace("{source}", source), run_ids), {"judge": judge})


def _placeholders(name: str, values: Sequence[str]) -> tuple[str, dict[str, str]]:
    """SQL bind placeholders for `values` (:name0, :name1, ...; NULL when there are none) and their parameters."""
    params = {f"{name}{i}": str(v) for i, v in enumerate(values)}
    return ", ".join(f":{key}" for key in params) or "NULL", params


def failure_mode_counts(engine: Engine, run_ids: Sequence[int], judge: str, domains: Sequence[str] = (),
                        category: str | None = None, *, stale: bool | None = None) -> pd.DataFrame:
    """failure_count_rows summed in the database over `domains` (empty: every domain) per model, mode (NO_MODE
    included) and category, or with `category` per model, mode, category and sub-dimension of that category: one read
    serves every subset choice (failure_view picks the modes, failure_rates sums them) and the modeless count
    (modeless_verdicts); `stale`: whether some run's summaries are not current (None: ask). Over every domain, the
    stored rows summed over the domains (failure_mode_count, a sixth of failure_count's) serve."""
    stored = "failure_count" if domains else "failure_mode_count"
    source = _summary_source(engine, run_ids, judge, stored, FAILURE_SELECT_SQL, stale)
    key_columns = ["model", "mode", "category"] + (["sub_dimension"] if category is not None else [])
    params: dict[str, str] = {}
    where = join = ""
    if category is not None:
        where, params["category"] = " AND f.category = :category", category
    if domains:
        domain_marks, domain_params = _placeholders("domain", domains)
        join, where, params = " JOIN domain d ON d.id = f.domain_id", where + f" AND d.name IN ({domain_marks})", params | domain_params
    keys = ", ".join(f"f.{column}" for column in key_columns[1:])
    sql = _FAILURE_VIEW_SQL.replace("{keys}", keys).replace("{source}", source).replace("{domain_join}", join).replace(
        "{where}", where)
    fetched = read_columns(engine, runs_sql(sql, run_ids), params | {"judge": judge})
    # built from the columns in their dtypes (no row-wise frame, no astype pass); PostgreSQL's SUM is numeric
    return pd.DataFrame({column: pd.array(fetched.get(column, ()), dtype="str") for column in key_columns}
                        | {column: np.array(fetched.get(column, ()), dtype="int64") for column in FAILURE_SUM_COLUMNS})


def constraint_verdicts(engine: Engine, run_ids: Sequence[int], judge: str, *, model: str | None = None,
                        category: str | None = None, sub_dimension: str | None = None,
                        failed_only: bool = False, response_ids: Iterable[int] | None = None) -> pd.DataFrame:
    """One row per constraint verdict (this judge's plus rule verdicts), for drill-down and Figure-4 failure counts;
    `response_ids` narrows them to those responses."""
    extra, params = "", {"judge": judge}
    if response_ids is not None:
        extra += f" AND v.response_id IN ({', '.join(str(int(r)) for r in response_ids) or 'NULL'})"
    for column, key, value in (("m.name", "model", model), ("c.category", "category", category),
                               ("c.sub_dimension", "sub_dimension", sub_dimension)):
        if value:
            extra += f" AND {column} = :{key}"
            params[key] = value
    if failed_only:
        extra += " AND v.status = 'ok' AND v.passed IS NOT NULL AND NOT v.passed"
    sql = _CONSTRAINT_VERDICTS_SQL.replace("{extra}", extra)
    if model:  # one model's verdicts: SQLite reads them by metric instead of every verdict of the runs (same rows)
        sql = sql.replace("v.run_id IN ({runs})", "+v.run_id IN ({runs})")
    frame = read_sql(engine, runs_sql(sql, run_ids), params)
    frame["passed"] = frame["passed"].map(lambda p: None if pd.isna(p) else bool(p)).astype(object)
    return frame[list(CONSTRAINT_COLUMNS)]


def _mean(series: pd.Series) -> float | None:
    s = series.dropna().astype(float)
    return float(s.mean()) if len(s) else None


def model_subset_summary(scores: pd.DataFrame) -> pd.DataFrame:
    """Per model x mode: means (Strict over determined responses only), with error / not-applicable counts."""
    out = []
    for (model, mode), g in scores.groupby(["model", "mode"], sort=True):
        row = {"model": model, "mode": mode, "n_responses": len(g),
               "loose_ias": _mean(g["loose_ias"]), "strict_ias": _mean(g["strict_ias"]),
               "n_strict_undetermined": int(g["strict_ias"].isna().sum()),
               "n_constraint_errors": int(g["n_constraint_errors"].sum()),
               "n_constraint_unjudged": int(g["n_constraint_unjudged"].sum())}
        row |= {f"loose_{c}": _mean(g[f"loose_{c}"]) for c in CATEGORIES}
        for metric in METRIC_NAMES:
            row[metric] = _mean(g[metric])
            row[f"n_{metric}_error"] = int((g[f"{metric}_status"] == "error").sum())
            row[f"n_{metric}_na"] = int((g[f"{metric}_status"] == "not_applicable").sum())
        row["over_abstention"] = row["refusal"] if mode == "noisy" else None
        row["judge_cost_usd"] = float(g["judge_cost_usd"].sum())
        out.append(row)
    return pd.DataFrame(out)


def failure_counts(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per model x category x sub-dimension: judged, failed, failure rate, errors, unjudged (the Figure 4 data)."""
    if verdicts.empty:
        return pd.DataFrame(columns=["model", "category", "sub_dimension", "n_judged", "n_failed", "failure_rate",
                                     "n_errors", "n_unjudged"])
    v = verdicts.assign(
        judged=(verdicts["status"] == "ok") & verdicts["passed"].notna(),
        failed=(verdicts["status"] == "ok") & (verdicts["passed"] == False),  # noqa: E712 - pandas elementwise
        error=verdicts["status"] == "error",
        unjudged=verdicts["status"] == "not_applicable",
    )
    g = v.groupby(["model", "category", "sub_dimension"], sort=True).agg(
        n_judged=("judged", "sum"), n_failed=("failed", "sum"), n_errors=("error", "sum"), n_unjudged=("unjudged", "sum"))
    g["failure_rate"] = (g["n_failed"] / g["n_judged"]).where(g["n_judged"] > 0)
    return g.reset_index()[["model", "category", "sub_dimension", "n_judged", "n_failed", "failure_rate",
                            "n_errors", "n_unjudged"]]


def response_details(engine: Engine, response_id: int, judge: str) -> dict:
    """Everything behind one response for drill-down: query, documents, response text, constraint and metric verdicts."""
    from sqlmodel import col

    with Session(engine) as session:
        resp = session.get(Response, response_id)
        if resp is None:
            return {}
        inst = session.get_one(Instance, resp.instance_id)
        model = session.get(Model, resp.model_id)
        docs = session.execute(select(Document).where(col(Document.instance_id) == inst.id).order_by(col(Document.position))).scalars().all()
        cons = {c.id: c for c in session.execute(select(Constraint).where(col(Constraint.instance_id) == inst.id)).scalars().all()}
        verdicts = session.execute(select(Verdict).where(col(Verdict.response_id) == response_id)).scalars().all()
    constraint_rows = []
    for c in sorted(cons.values(), key=lambda c: c.position):
        for v in verdicts:
            if v.constraint_id == c.id and v.judge in (judge, "rule"):
                constraint_rows.append({"cid": c.cid, "constraint": c.text, "category": c.category, "sub_dimension": c.sub_dimension,
                                        "judge": v.judge, "method": v.method, "status": v.status, "passed": v.passed, "reason": v.reason})
    metric_rows = [{"metric": v.metric, "judge": v.judge, "method": v.method, "status": v.status, "value": v.value, "passed": v.passed, "reason": v.reason}
                   for v in verdicts if v.constraint_id is None]
    split = stored_split(resp.text, resp.reasoning, resp.reasoning_state)
    return {
        "response_id": response_id, "model": model.name if model else "", "instance_uid": inst.uid, "mode": inst.mode, "origin": inst.origin,
        "query": inst.query, "response": split.answer, "reasoning": split.reasoning, "reasoning_state": split.state,
        "reasoning_tokens": resp.reasoning_tokens, "status": resp.status, "latency_ms": resp.latency_ms, "cost_usd": resp.cost_usd,
        "documents": [{"position": d.position + 1, "title": d.title, "role": d.role, "source": d.source, "text": d.text} for d in docs],
        "constraints": pd.DataFrame(constraint_rows, columns=["cid", "constraint", "category", "sub_dimension", "judge", "method", "status", "passed", "reason"]),
        "metrics": pd.DataFrame(metric_rows, columns=["metric", "judge", "method", "status", "value", "passed", "reason"]),
        "judges": sorted({v.judge for v in verdicts}),
        "generated": generated_mark(inst.meta, len(cons)),  # the instance's LLM mark (None: rule- or human-made)
    }
