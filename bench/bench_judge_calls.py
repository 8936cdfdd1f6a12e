"""Judge calls per (model, instance) for the full metric suite on the fake server: batched vs single constraint
judging, with and without context-claim reuse.  Run: .venv/bin/python bench/bench_judge_calls.py [--models 3]"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path

from sqlmodel import Session, delete

from core.scoring.scorer import score_run
from core.store.db import make_engine, upgrade
from core.store.models import Constraint, ContextClaims, Document, Domain, Instance, LLMCall, Model, Response, Run
from core.testing.fake_server import FakeLLMServer, ScriptRule

N_PER_MODE = {"noisy": 4, "gap": 3, "conflict": 3}
LLM_CONSTRAINTS = [
    ("persona", "role", None), ("output", "style", None), ("knowledge_protocol", "citation", None),
    ("knowledge_protocol", "knowledge_gap", "gap"), ("knowledge_protocol", "conflict_handling", "conflict"),
]
SCRIPT = [
    ScriptRule(match=r"\[task: constraint-batched\]", reply=json.dumps(
        {"verdicts": [{"id": f"c{i}", "verdict": "yes", "reason": "ok"} for i in range(1, 7)]})),
    ScriptRule(match=r"\[task: constraint-single\]", reply='{"verdict": "yes", "reason": "ok"}'),
    ScriptRule(match=r"\[task: response-claims\]", reply='{"claims": ["claim one", "claim two"]}'),
    ScriptRule(match=r"\[task: claim-verify\]",
               reply='{"results": [{"index": 1, "supported": true}, {"index": 2, "supported": false}]}'),
    ScriptRule(match=r"\[task: context-claims\]", reply='{"core": ["k1", "k2"], "supplementary": ["s1"]}'),
    ScriptRule(match=r"\[task: coverage-verify\]", reply=json.dumps(
        {"results": [{"id": i, "covered": True} for i in ("K1", "K2", "S1")]})),
    ScriptRule(match=r"\[task: (?:rejection|refusal)\]", reply='{"refused": 0, "reason": "answers"}'),
    ScriptRule(match=r"\[task: conflict-recognition\]", reply='{"recognized": 1, "reason": "names both"}'),
]


def build(url: str, n_models: int, base_url: str) -> tuple[int, list[int]]:
    """A DB with instances of every mode and one response per (model, instance), one run per model."""
    upgrade(url)
    engine = make_engine(url)
    with Session(engine) as s:
        dom = Domain(name="Bench")
        s.add(dom)
        s.add(Model(name="judge", provider="openai_compatible", model_name="judge-x", settings={"base_url": base_url}))
        s.flush()
        instances = []
        for mode, n in N_PER_MODE.items():
            for k in range(n):
                inst = Instance(uid=f"{mode}-{k}", domain_id=dom.id, query=f"Question {k} about {mode} topic?", mode=mode)
                s.add(inst)
                s.flush()
                role = {"noisy": "supporting", "gap": "noise", "conflict": "conflicting"}[mode]
                for pos in range(2):
                    s.add(Document(instance_id=inst.id, position=pos, doc_uid=f"{mode}-{k}-{pos}", title=f"Doc {pos}",
                                   text=f"Document {pos} states value {pos + 10} for topic {k}.", role=role,
                                   conflict_group="g" if mode == "conflict" else None))
                s.add(Constraint(instance_id=inst.id, position=0, cid="c1", text="No emojis.", category="output",
                                 sub_dimension="negative", judge_method="rule", checker_id="enterprise:no_emoji"))
                for pos, (cat, sub, pre) in enumerate(LLM_CONSTRAINTS, start=1):
                    s.add(Constraint(instance_id=inst.id, position=pos, cid=f"c{pos + 1}", text=f"Instruction {sub}.",
                                     category=cat, sub_dimension=sub, judge_method="llm", criterion=f"Check {sub}.",
                                     precondition=pre))
                instances.append(inst.id)
        runs = []
        for m in range(n_models):
            model = Model(name=f"gen-{m}", provider="baseline", model_name="x")
            run = Run(name=f"bench-{m}", status="done")
            s.add_all([model, run])
            s.flush()
            s.add_all([Response(run_id=run.id, model_id=model.id, instance_id=i, status="done",
                                text=f"Answer of model {m} on item {i}: the value is 10 [1].") for i in instances])
            runs.append(run.id)
        s.commit()
    return len(instances), runs


def measure(n_models: int, mode: str, reuse: bool) -> dict:
    """Score every model's run; without reuse, stored context claims and the call cache are wiped between models."""
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer(script=SCRIPT) as server:
        url = "sqlite:///" + str(Path(tmp) / "bench.db")
        n_inst, runs = build(url, n_models, server.base_url + "/v1")
        engine = make_engine(url)
        judge_calls, started = 0, time.perf_counter()
        for run_id in runs:
            if not reuse:
                with Session(engine) as s:
                    s.exec(delete(ContextClaims))
                    s.exec(delete(LLMCall))
                    s.commit()
            report = asyncio.run(score_run(engine, run_id, "llm:judge", constraint_mode=mode))
            judge_calls += report.total_calls
        pairs = n_models * n_inst
        return {"mode": mode, "reuse": reuse, "pairs": pairs, "judge_calls": judge_calls, "server_calls": server.call_count,
                "per_pair": judge_calls / pairs, "seconds": time.perf_counter() - started}


def main() -> None:
    """Print judge calls per (model, instance) for each configuration."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "test-key")
    print(f"{args.models} models x {sum(N_PER_MODE.values())} instances {N_PER_MODE}; "
          f"5 llm constraints per instance (2 conditional) + 1 rule constraint")
    print(f"{'constraints':<11} {'claim reuse':<11} {'judge calls':>11} {'server calls':>12} {'per (model, instance)':>22} {'s':>6}")
    for mode in ("batched", "single"):
        for reuse in (True, False):
            r = measure(args.models, mode, reuse)
            print(f"{r['mode']:<11} {str(r['reuse']):<11} {r['judge_calls']:>11} {r['server_calls']:>12} "
                  f"{r['per_pair']:>22.2f} {r['seconds']:>6.1f}")


if __name__ == "__main__":
    main()
