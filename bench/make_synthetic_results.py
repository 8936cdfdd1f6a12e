"""Write a synthetic results set at paper scale into a SQLite DB through the real tables (for dashboard benchmarks).

13 models x 983 instances (447 noisy, 227 gap, 309 conflict; six domains), about 8 constraints per instance,
constraint verdicts (rule + heuristic) and metric verdicts as core.scoring.scorer writes them, plus the per-response
summaries it builds. Every row is marked
synthetic (instance meta, run config, model settings). Scores are random draws around a per-model skill, so
rankings are meaningless: this data exists only to time and exercise the dashboards.

    .venv/bin/python -m bench.make_synthetic_results var/bench.db [--models 13 --instances 983 --seed 0]
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from sqlalchemy.engine import Engine

from core.scoring.summaries import summarise_run
from core.store.db import bulk_insert, make_engine, upgrade
from core.store.models import Constraint, Document, Domain, Instance, Model, Response, Run, Verdict
from core.store.schema import SUB_DIMENSIONS_BY_CATEGORY

DOMAINS = ("Energy", "Medical", "Legal", "Financial", "Party Building", "Web Search")
MODE_SHARES = {"noisy": 447 / 983, "gap": 227 / 983, "conflict": 309 / 983}
AUGMENTED_SHARE = {"noisy": 0.0, "gap": 0.85, "conflict": 282 / 309}
CATEGORY_SHARES = {"persona": 0.2, "output": 0.5, "knowledge_protocol": 0.3}
CATEGORY_DIFFICULTY = {"persona": -0.6, "output": -0.4, "knowledge_protocol": 0.5}
RULE_SUBDIMS = {"format", "content"}
JUDGE = "heuristic"


def _chunks(rows: list[dict], size: int = 20_000):
    for i in range(0, len(rows), size):
        yield rows[i : i + size]


def _bulk(engine: Engine, table, rows: list[dict]) -> None:
    with engine.begin() as conn:
        for chunk in _chunks(rows):
            bulk_insert(conn, table, chunk)


def second_opinion(verdicts: list[dict], judge: str, flip: float, rng: np.random.Generator) -> list[dict]:
    """A second judge's copy of the heuristic judge's verdicts with a share `flip` of binary outcomes flipped."""
    out = []
    for v in verdicts:
        if v["judge"] != JUDGE:
            continue
        w = dict(v, judge=judge)
        if w["passed"] is not None and rng.random() < flip:
            w["passed"] = not w["passed"]
            w["value"] = float(w["passed"])
        elif w["value"] is not None and w["passed"] is None:
            w["value"] = float(np.clip(w["value"] + rng.normal(0, 0.1), 0, 1))
        out.append(w)
    return out


def make_results(url: str, n_models: int = 13, n_instances: int = 983, constraints_mean: float = 8.0, seed: int = 0,
                 with_baselines: bool = True, extra_judges: tuple[str, ...] = ()) -> dict[str, int]:
    """Create the schema at `url` and fill it with one done, scored synthetic run; returns row counts.

    `extra_judges` adds, for each name, a second judge's verdicts (the heuristic ones with 15% of outcomes flipped).
    """
    upgrade(url)
    engine = make_engine(url)
    rng = np.random.default_rng(seed)
    now = datetime.now(UTC)

    _bulk(engine, Domain.__table__, [{"id": i + 1, "name": d, "description": "synthetic"} for i, d in enumerate(DOMAINS)])

    modes = rng.choice(list(MODE_SHARES), size=n_instances, p=list(MODE_SHARES.values()))
    instances, constraints, documents = [], [], []
    inst_protocol = np.zeros(n_instances, dtype=bool)
    inst_constraints: list[list[tuple[int, str, str]]] = []
    cid_counter = 0
    for i in range(n_instances):
        mode = str(modes[i])
        origin = "augmented" if rng.random() < AUGMENTED_SHARE[mode] else "natural"
        instances.append({"id": i + 1, "uid": f"syn-{mode}-{i:04d}", "version": 1, "is_latest": True, "domain_id": int(rng.integers(1, len(DOMAINS) + 1)),
                          "query": f"Synthetic question {i} about {mode} retrieval?", "mode": mode, "origin": origin, "protocol": "enterprise_rag",
                          "status": "accepted", "meta": {"synthetic": True}, "created_at": now, "created_by": "bench"})
        n_c = max(3, int(rng.poisson(constraints_mean - 3)) + 3)
        cats = rng.choice(list(CATEGORY_SHARES), size=n_c, p=list(CATEGORY_SHARES.values()))
        mine = []
        for pos, cat in enumerate(cats):
            cid_counter += 1
            sub = str(rng.choice(SUB_DIMENSIONS_BY_CATEGORY[str(cat)]))
            method = "rule" if sub in RULE_SUBDIMS else "llm"
            constraints.append({"id": cid_counter, "instance_id": i + 1, "position": pos, "cid": f"c{pos + 1}", "text": f"Synthetic {cat}/{sub} instruction {pos + 1}.",
                                "category": str(cat), "sub_dimension": sub, "judge_method": method, "checker_id": "synthetic" if method == "rule" else None,
                                "checker_kwargs": {}, "criterion": None if method == "rule" else "synthetic criterion", "precondition": None})
            mine.append((cid_counter, str(cat), method))
        inst_protocol[i] = any(c[1] == "knowledge_protocol" for c in mine)
        inst_constraints.append(mine)
        for pos in range(3):
            documents.append({"instance_id": i + 1, "position": pos, "doc_uid": f"syn-doc-{i}-{pos}", "title": f"Document {pos + 1}",
                              "text": f"Synthetic document {pos + 1} for instance {i}.", "source": "synthetic", "content_type": "text",
                              "role": "conflicting" if mode == "conflict" and pos < 2 else ("noise" if pos == 2 else ("partial" if mode == "gap" else "supporting")),
                              "conflict_group": "g1" if mode == "conflict" and pos < 2 else None, "conflict_summary": None})
    _bulk(engine, Instance.__table__, instances)
    _bulk(engine, Constraint.__table__, constraints)
    _bulk(engine, Document.__table__, documents)

    models = []
    for m in range(n_models):
        paradigm = "reasoning" if m % 2 == 0 else "standard"
        access = "open" if m < (n_models * 9) // 13 else "closed"
        models.append({"id": m + 1, "name": f"synthetic-{m + 1:02d}-{access}-{paradigm}", "provider": "openai_compatible", "model_name": f"synthetic-{m + 1}",
                       "paradigm": paradigm, "access": access, "is_baseline": False, "price_input_per_mtok": float(rng.uniform(0.1, 5)),
                       "price_output_per_mtok": float(rng.uniform(0.4, 15)), "temperature": 0.0, "max_output_tokens": 1024, "settings": {"synthetic": True}, "created_at": now})
    if with_baselines:
        for name in ("baseline:always-refuse", "baseline:extractive"):
            models.append({"id": len(models) + 1, "name": name, "provider": "baseline", "model_name": name, "paradigm": "standard", "access": "open",
                           "is_baseline": True, "price_input_per_mtok": 0.0, "price_output_per_mtok": 0.0, "temperature": 0.0, "max_output_tokens": 1024,
                           "settings": {}, "created_at": now})
    _bulk(engine, Model.__table__, models)
    _bulk(engine, Run.__table__, [{"id": 1, "name": "synthetic paper-scale results", "status": "done", "config": {"synthetic": True, "judge": JUDGE},
                                   "code_version": "synthetic", "budget_usd": None, "spent_usd": 0.0, "message": "synthetic", "created_at": now,
                                   "started_at": now, "finished_at": now, "heartbeat_at": now}])

    responses, verdicts = [], []
    rid = 0
    for model in models:
        skill = -1.0 if model["is_baseline"] else float(rng.normal(1.2, 0.35)) + (0.3 if model["paradigm"] == "reasoning" else 0.0)
        for i, inst in enumerate(instances):
            rid += 1
            latency = float(rng.gamma(4, 600)) if not model["is_baseline"] else 1.0
            cost = 0.0 if model["is_baseline"] else float(rng.uniform(0.0005, 0.01))
            responses.append({"id": rid, "run_id": 1, "model_id": model["id"], "instance_id": inst["id"], "status": "done", "text": f"Synthetic answer {rid}.",
                              "error": None, "attempts": 1, "cache_key": None, "cached": False, "latency_ms": latency, "input_tokens": 1500, "output_tokens": 300,
                              "cost_usd": cost, "prompt_meta": {}, "created_at": now, "finished_at": now})
            base = {"response_id": rid, "run_id": 1, "details": {}, "calls": 0, "cost_usd": 0.0, "created_at": now}
            for cid, cat, method in inst_constraints[i]:
                p = 1 / (1 + np.exp(-(skill - CATEGORY_DIFFICULTY[cat])))
                error = rng.random() < 0.01
                passed = None if error else bool(rng.random() < p)
                verdicts.append(base | {"judge": "rule" if method == "rule" else JUDGE, "metric": "constraint", "constraint_id": cid, "status": "error" if error else "ok",
                                        "passed": passed, "value": None if passed is None else float(passed), "method": "rule" if method == "rule" else "batched",
                                        "reason": "synthetic verdict"})
            mode = inst["mode"]
            q = 1 / (1 + np.exp(-skill))
            metric_values = {"faithfulness": float(np.clip(rng.normal(0.55 + 0.15 * q, 0.15), 0, 1))}
            metric_values["coverage"] = None if mode == "gap" else float(np.clip(rng.normal(0.4 + 0.25 * q, 0.15), 0, 1))
            if mode == "gap":
                metric_values["rejection"] = float(rng.random() < (0.9 if model["name"] == "baseline:always-refuse" else 0.1 + 0.35 * q))
            if mode == "conflict":
                metric_values["conflict_recognition"] = float(rng.random() < 0.1 + 0.4 * q)
            if mode == "noisy":
                metric_values["refusal"] = float(rng.random() < (0.95 if model["name"] == "baseline:always-refuse" else 0.05))
            for metric, value in metric_values.items():
                status = "not_applicable" if value is None else "ok"
                passed = None if value is None or metric in ("faithfulness", "coverage") else bool(value)
                verdicts.append(base | {"judge": JUDGE, "metric": metric, "constraint_id": None, "status": status, "passed": passed, "value": value,
                                        "method": "heuristic", "reason": "synthetic verdict"})
    _bulk(engine, Response.__table__, responses)
    for judge in extra_judges:
        verdicts += second_opinion(verdicts, judge, 0.15, rng)
    _bulk(engine, Verdict.__table__, verdicts)
    summarise_run(engine, 1)  # the pipeline's summarise stage
    engine.dispose()
    return {"models": len(models), "instances": n_instances, "constraints": len(constraints), "responses": len(responses), "verdicts": len(verdicts)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", type=Path, help="SQLite file to create (must not exist)")
    parser.add_argument("--models", type=int, default=13)
    parser.add_argument("--instances", type=int, default=983)
    parser.add_argument("--constraints", type=float, default=8.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.db.exists():
        raise SystemExit(f"{args.db} exists; pick a new path")
    started = time.perf_counter()
    counts = make_results(f"sqlite:///{args.db.resolve()}", args.models, args.instances, args.constraints, args.seed)
    print(f"wrote {counts} to {args.db} in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
