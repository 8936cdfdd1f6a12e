"""Paper-scale end to end: 15 models x 983 instances generated, then scored with the full judge suite, against the
fake server (core/testing/fake_server.py, its own process) at 200 ms latency with 16 calls in flight.

Each instance has two documents, one rule and three judged constraints (bench_scoring's instances); the generators'
answers and the judge's response claims are drawn from 1,000 variants, so the judge's prompts differ between models as
real answers do (its cache does not turn one model's calls into another's). Generation (`gauntlet run`'s runner) and
scoring (`gauntlet score`'s scorer) run one after the other in one child process on a seeded SQLite database.
Reported per phase and in total: calls, wall time against the latency floor (calls x latency / in flight), CPU time
per call of the child (the server's CPU not counted), and the child's peak RSS.
Run: .venv/bin/python bench/bench_paper_scale.py [--models 15] [--instances 983] [--latency-ms 200] [--in-flight 16]
     [--log /tmp/bench-paper-scale.log]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
VARIANTS = 1000


def script() -> list[dict]:
    """The judge's answers (bench_judge_calls.SCRIPT, response claims varied) and, for anything else, a generator's."""
    from bench_judge_calls import SCRIPT

    claims = [json.dumps({"claims": [f"claim {k} one", f"claim {k} two"]}) for k in range(VARIANTS)]
    answers = [f"The limit is {k} units [doc 1]; it is reviewed yearly [doc 2]." for k in range(VARIANTS)]
    rules = [rule.model_dump(exclude_none=True) for rule in SCRIPT]
    for rule in rules:
        if "response-claims" in rule["match"]:
            rule.pop("reply")
            rule["choices"] = claims
    return [*rules, {"match": "", "choices": answers}]


def seed(path: Path, models: int, instances: int, in_flight: int) -> int:
    """Instances, `models` generators and the judge on the fake server, and a run of every pair; the run's id."""
    from bench_scoring import add_instance
    from sqlmodel import Session

    from core.generation import runs
    from core.store.db import make_engine, upgrade
    from core.store.models import Domain, Model

    url = f"sqlite:///{path}"
    upgrade(url)
    engine = make_engine(url)
    settings = {"base_url_env": "BENCH_LLM_URL", "api_key_env": "BENCH_LLM_KEY", "timeout_s": 60}
    with Session(engine) as s:
        dom = Domain(name="Bench")
        s.add(dom)
        s.add_all([Model(name=f"gen-{m}", provider="openai_compatible", model_name=f"gen-{m}", settings=settings,
                         max_output_tokens=64) for m in range(models)])
        s.add(Model(name="judge", provider="openai_compatible", model_name="judge-x", settings=settings))
        s.flush()
        for k in range(instances):
            add_instance(s, dom.id or 0, k, constraints=True)
        s.commit()
    run_id = runs.create_run(engine, runs.RunOptions(models=[f"gen-{m}" for m in range(models)],
                                                     concurrency=in_flight, max_retries=0))
    engine.dispose()
    return run_id


def child(db: Path, run_id: int, in_flight: int) -> dict:
    """Generate, then score, the run in this process: per phase calls, wall, CPU and the peak RSS after it."""
    from bench_scoring import peak_rss_mb

    import core.generation.providers.openai_provider  # noqa: F401 - library imports are one-offs, not per call
    from core.generation import runner
    from core.scoring.scorer import score_run
    from core.store.db import make_engine

    engine = make_engine(f"sqlite:///{db}")
    figures: dict[str, dict] = {"start": {"peak_mb": peak_rss_mb()}}
    started, cpu = time.perf_counter(), time.process_time()

    def log(phase: str, done: int, total: int) -> None:  # on stderr every 1,000: a stopped run still says how far
        if done % 1000 == 0 or done == total:
            print(f"{phase} {done}/{total} wall {time.perf_counter() - started:.1f} s CPU "
                  f"{time.process_time() - cpu:.1f} s peak RSS {peak_rss_mb():.0f} MB", file=sys.stderr, flush=True)

    result = asyncio.run(runner.execute_run(engine, run_id, progress=lambda p: log("generation", p.done, p.total)))
    figures["generation"] = {"calls": result.done + result.failed, "failed": result.failed,
                             "wall": time.perf_counter() - started, "cpu": time.process_time() - cpu,
                             "peak_mb": peak_rss_mb()}
    started, cpu = time.perf_counter(), time.process_time()
    report = asyncio.run(score_run(engine, run_id, "llm:judge", concurrency=in_flight,
                                   progress=lambda done, total: log("scoring", done, total)))
    figures["scoring"] = {"calls": report.total_calls, "failed": sum(report.errors.values()),
                          "responses": report.responses, "verdicts": report.verdicts_written,
                          "wall": time.perf_counter() - started, "cpu": time.process_time() - cpu,
                          "peak_mb": peak_rss_mb()}
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=int, default=15)
    parser.add_argument("--instances", type=int, default=983)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--in-flight", type=int, default=16)
    parser.add_argument("--log", type=Path, default=Path("/tmp/bench-paper-scale.log"),
                        help="the child's progress (every 1,000 responses) and errors")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--run-id", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.run_id, args.in_flight)))
        return
    from bench_scoring import start_server, stats

    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; {args.models} models x "
          f"{args.instances} instances, fake server at {args.latency_ms:g} ms, {args.in_flight} calls in flight",
          flush=True)
    workdir = Path(tempfile.mkdtemp(prefix="bench-paper-"))
    try:
        (workdir / "script.json").write_text(json.dumps(script()))
        db = workdir / "paper.db"
        run_id = seed(db, args.models, args.instances, args.in_flight)
        server, base = start_server(args.latency_ms, workdir / "script.json")
        env = {**os.environ, "BENCH_LLM_URL": base + "/v1", "BENCH_LLM_KEY": "bench-not-a-real-key",
               "GAUNTLET_SECRETS_FILE": str(workdir / "none.toml")}
        try:
            with args.log.open("w") as log:
                out = subprocess.run([sys.executable, __file__, "--child", str(db), "--run-id", str(run_id),
                                      "--in-flight", str(args.in_flight)], env=env, stdout=subprocess.PIPE,
                                     stderr=log, text=True)
            served = stats(base)
        finally:
            server.terminate()
            server.wait()
        if out.returncode:
            raise RuntimeError(f"child failed: see {args.log}")
        figures = json.loads(out.stdout.strip().splitlines()[-1])
        report(figures, args, served)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def report(figures: dict, args: argparse.Namespace, served: dict) -> None:
    """Per phase and in total: calls, wall against the latency floor, CPU per call, peak RSS."""
    phases = [figures["generation"], figures["scoring"]]
    total = {key: sum(p[key] for p in phases) for key in ("calls", "failed", "wall", "cpu")}
    for name, p in (("generation", phases[0]), ("scoring", phases[1]), ("total", total)):
        floor = p["calls"] * args.latency_ms / 1000 / args.in_flight
        print(f"{name:10s} calls {p['calls']:7d} failed {p['failed']:4d} | wall {p['wall']:8.1f} s, floor "
              f"{floor:8.1f} s ({p['wall'] / floor:.2f}x) | CPU {p['cpu']:7.1f} s, {p['cpu'] / p['calls'] * 1000:.2f} "
              f"ms/call", flush=True)
    print(f"scoring: {figures['scoring']['responses']} responses, {figures['scoring']['verdicts']} verdicts; peak RSS "
          f"{figures['start']['peak_mb']:.0f} MB at start, {phases[0]['peak_mb']:.0f} MB after generation, "
          f"{phases[1]['peak_mb']:.0f} MB after scoring; server answered {served['calls']}, "
          f"peak in flight {served.get('max_in_flight')}")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
