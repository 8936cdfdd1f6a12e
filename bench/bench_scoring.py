"""Scoring benchmark: `gauntlet score` at its default settings against a stub LLM judge at 200 ms latency.

The stub is the fake server (core/testing/fake_server.py) in its own process, answering the judge prompts with fixed
JSON (bench_judge_calls.SCRIPT). Phases, each on a fresh copy of a seeded database (no phase hits another's cache):
  faithfulness - N responses scored on faithfulness only (claims, then their verification: 2 calls each), the
                 metric RAGAS' faithfulness computes; instances without judged constraints;
  suite        - the same N responses (noisy, gap and conflict instances in turn) on every metric plus 3 judged
                 constraints each: the full judge suite, reported as wall time per instance.
Each measurement runs in a child process: wall time and CPU time of that process (the server's CPU is not counted),
judge calls, and the server's peak and mean (seconds answering / wall time) of requests in flight. With --before PATH (a checkout of an earlier commit, e.g.
`git archive COMMIT core | tar -x -C PATH`) the same phases run on that code,
interleaved with this one, and the ratio is printed.
Run: .venv/bin/python bench/bench_scoring.py [--samples 100] [--latency-ms 200] [--repeat 3] [--before PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MODES = ("noisy", "gap", "conflict")
PHASES = ("faithfulness", "suite")
RAGAS_RULES = [  # the stub's answers to RAGAS' faithfulness prompts: 2 statements, 1 supported (as SCRIPT's for ours)
    {"match": "analyze the complexity of each sentence", "reply": json.dumps({"statements": ["s one", "s two"]})},
    {"match": "judge the faithfulness of a series of statements", "reply": json.dumps({"statements": [
        {"statement": "s one", "reason": "stated", "verdict": 1}, {"statement": "s two", "reason": "not", "verdict": 0}]})},
]


def sample(k: int) -> tuple[str, str, list[str], str]:
    """(mode, query, two document texts, response) of sample `k`."""
    docs = [f"Section {pos}: the limit for case {k} is {k + pos} units; review yearly." for pos in range(2)]
    return (MODES[k % 3], f"What is the limit for case {k}?", docs,
            f"The limit for case {k} is {k} units [doc 1]; it is reviewed yearly [doc 2].")


def seed(path: Path, samples: int, constraints: bool) -> None:
    """Instances of every mode with two documents each (and 1 rule + 3 judged constraints), one done response each."""
    sys.path.insert(0, str(REPO))
    from sqlmodel import Session

    from core.store.db import make_engine, upgrade
    from core.store.models import Domain, Model, Response, Run

    url = f"sqlite:///{path}"
    upgrade(url)
    engine = make_engine(url)
    with Session(engine) as s:
        dom = Domain(name="Bench")
        gen, run = Model(name="gen", provider="baseline", model_name="x"), Run(name="bench", status="done")
        judge = Model(name="judge", provider="openai_compatible", model_name="judge-x",
                      settings={"base_url_env": "BENCH_JUDGE_URL", "api_key_env": "BENCH_JUDGE_KEY"})
        s.add_all([dom, gen, run, judge])
        s.flush()
        for k in range(samples):
            inst_id = add_instance(s, dom.id or 0, k, constraints)
            s.add(Response(run_id=run.id, model_id=gen.id, instance_id=inst_id, status="done", text=sample(k)[3]))
        s.commit()
    engine.dispose()


def add_instance(s: Any, domain_id: int, k: int, constraints: bool) -> int:
    """Sample `k`'s instance with its two documents (and 1 rule + 3 judged constraints); its id."""
    from core.store.models import Constraint, Document, Instance

    mode, query, docs, _ = sample(k)
    inst = Instance(uid=f"i{k}", domain_id=domain_id, query=query, mode=mode)
    s.add(inst)
    s.flush()
    for pos, doc in enumerate(docs):
        s.add(Document(instance_id=inst.id, position=pos, doc_uid=f"d{k}-{pos}", title=f"Manual {pos}",
                       text=doc, role="conflicting" if mode == "conflict" else ("noise" if mode == "gap" else "supporting"),
                       conflict_group="g" if mode == "conflict" else None))
    if constraints:
        s.add(Constraint(instance_id=inst.id, position=0, cid="c1", text="No emojis.", category="output",
                         sub_dimension="negative", judge_method="rule", checker_id="enterprise:no_emoji"))
        for pos, sub in enumerate(("role", "style", "citation"), start=1):
            s.add(Constraint(instance_id=inst.id, position=pos, cid=f"c{pos + 1}", text=f"Follow {sub}.",
                             category="output", sub_dimension=sub, judge_method="llm", criterion=sub))
    return inst.id


def peak_rss_mb() -> float:
    """This process's peak resident set so far, MB: VmHWM (getrusage's ru_maxrss keeps the parent's peak across exec)."""
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0]) / 1024


def verdict_digest(engine: Any) -> str:
    """A hash of every stored verdict's content (ids aside): equal digests, identical verdicts."""
    import hashlib

    from sqlmodel import Session, select

    from core.store.models import Verdict

    with Session(engine) as s:
        rows = sorted(json.dumps([v.response_id, v.metric, v.judge, v.constraint_id, v.status, v.passed, v.value,
                                  v.method, v.reason, v.details, v.calls], sort_keys=True, default=str)
                      for v in s.exec(select(Verdict)))
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()[:16]


def child(phase: str, db: Path, repo: Path, concurrency: int | None, memory: str | None = None) -> dict:
    """Score the database's run in this process with `repo`'s code; wall, CPU and the scoring report's counts (with
    `memory`: peak RSS ('rss') or peak traced Python allocations ('trace') above the level before scoring, in MB)."""
    sys.path.insert(0, str(repo))
    import asyncio
    import gc
    import tracemalloc

    from sqlmodel import Session, func, select

    import core.generation.llm  # noqa: F401 - library imports are one-offs, as RAGAS' are (done before its timer)
    import core.generation.providers.openai_provider  # noqa: F401
    import core.generation.runs  # noqa: F401
    from core.scoring.judges.registry import METRICS
    from core.scoring.scorer import score_run
    from core.store.db import make_engine
    from core.store.models import Verdict

    if phase == "faithfulness":
        METRICS._items = {"faithfulness": METRICS.get("faithfulness")}  # the one metric RAGAS computes here
    engine = make_engine(f"sqlite:///{db}")
    with Session(engine) as s:
        s.exec(select(Verdict)).first()  # the first ORM query configures the mappers: once per process, not scoring
    options = {} if concurrency is None else {"concurrency": concurrency}
    gc.collect()
    rss_before = peak_rss_mb()
    if memory == "trace":
        tracemalloc.start()
    started, cpu = time.perf_counter(), time.process_time()
    report = asyncio.run(score_run(engine, 1, "llm:judge", **options))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    peak = {"rss": peak_rss_mb() - rss_before,
            "trace": tracemalloc.get_traced_memory()[1] / 2**20 if memory == "trace" else None}[memory] if memory else None
    tracemalloc.stop()
    with Session(engine) as s:
        mean = s.exec(select(func.avg(Verdict.value)).where(Verdict.metric == "faithfulness")).one()
    return {"wall": wall, "cpu": cpu, "calls": report.total_calls, "errors": sum(report.errors.values()), "mean": mean,
            "peak_mb": peak, "digest": verdict_digest(engine) if memory else None}


def ragas_child(samples: int) -> dict:
    """RAGAS' faithfulness over the same samples at its defaults (run with a Python that has ragas installed)."""
    from langchain_openai import ChatOpenAI
    from ragas import EvaluationDataset, evaluate
    from ragas.llms import LangchainLLMWrapper
    from ragas.metrics import Faithfulness

    rows = [{"user_input": query, "retrieved_contexts": docs, "response": text}
            for _, query, docs, text in map(sample, range(samples))]
    dataset = EvaluationDataset.from_list(rows)
    started, cpu = time.perf_counter(), time.process_time()  # the judge's client is made in the timed part, as ours
    llm = LangchainLLMWrapper(ChatOpenAI(model="judge-x", base_url=os.environ["BENCH_JUDGE_URL"],
                                         api_key=os.environ["BENCH_JUDGE_KEY"]))
    result = evaluate(dataset, metrics=[Faithfulness()], llm=llm, show_progress=False)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    scores = result.to_pandas()["faithfulness"]
    return {"wall": wall, "cpu": cpu, "calls": 2 * samples, "responses": samples,
            "errors": int(scores.isna().sum()), "mean": float(scores.mean())}


def start_server(latency_ms: float, script: Path) -> tuple[subprocess.Popen, str]:
    """The fake server as its own process (it does not share our GIL or CPU count); it and its base URL."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "core.cli", "fake-server", "--port", str(port), "--latency-ms",
                                str(latency_ms), "--script", str(script)], cwd=REPO, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            stats(base)
            return process, base
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("fake server did not start")


def stats(base: str) -> dict:
    """The fake server's counters (GET /stats)."""
    with urllib.request.urlopen(base + "/stats", timeout=2) as response:
        return json.loads(response.read())


def measure(phase: str, code: str, template: Path, workdir: Path, args: argparse.Namespace, script: Path,
            memory: str | None = None) -> dict:
    """One child measurement of `phase` with `code` (after, before or ragas) on a fresh database and server."""
    db = workdir / f"{phase}-{time.monotonic_ns()}.db"
    shutil.copy(template, db)
    server, base = start_server(args.latency_ms, script)
    env = {**os.environ, "BENCH_JUDGE_URL": base + "/v1", "BENCH_JUDGE_KEY": "bench-not-a-real-key",
           "GAUNTLET_SECRETS_FILE": str(workdir / "none.toml"), "RAGAS_DO_NOT_TRACK": "true"}
    if code == "ragas":
        command = [str(args.ragas_python), __file__, "--child", "ragas", "--samples", str(args.samples)]
    else:
        repo = REPO if code == "after" else args.before.resolve()
        command = [sys.executable, __file__, "--child", phase, "--db", str(db), "--repo", str(repo)]
        command += ["--concurrency", str(args.concurrency)] if args.concurrency else []
        command += ["--memory", memory] if memory else []
    try:
        out = subprocess.run(command, env=env, capture_output=True, text=True)
        if out.returncode:
            raise RuntimeError(f"{code} {phase} failed:\n{out.stderr[-3000:]}")
        figures = json.loads(out.stdout.strip().splitlines()[-1])
        served = stats(base)
        figures["max_in_flight"], figures["mean_in_flight"] = served["max_in_flight"], served["busy_s"] / figures["wall"]
    finally:
        server.terminate()
        server.wait()
        db.unlink(missing_ok=True)
    return figures


def median(values: list[float]) -> float:
    """The middle value (upper middle for an even count)."""
    return sorted(values)[len(values) // 2]


def memory_growth(args: argparse.Namespace, workdir: Path, script: Path) -> None:
    """Peak RSS and peak traced allocations of the full suite at each size, per code; growth per item between sizes
    and whether every code stored the same verdicts."""
    sizes = [int(n) for n in args.memory_sizes.split(",")]
    codes = ["after"] + ["before"] * bool(args.before)
    peaks: dict[tuple[str, str], dict[int, float]] = {(c, m): {} for c in codes for m in ("rss", "trace")}
    for size in sizes:
        template = workdir / f"memory-{size}.db"
        seed(template, size, constraints=True)
        digests = {}
        for code in codes:
            for memory in ("rss", "trace") if str(size) in args.trace_sizes.split(",") else ("rss",):
                figures = measure("suite", code, template, workdir, args, script, memory)
                peaks[code, memory][size] = figures["peak_mb"]
                digests[code, memory] = figures["digest"]
                print(f"memory {size:6d} items {code:6s} {memory:5s} peak +{figures['peak_mb']:7.1f} MB | wall "
                      f"{figures['wall']:6.1f} s CPU {figures['cpu']:6.1f} s | calls {figures['calls']} errors "
                      f"{figures['errors']} | verdicts {figures['digest']}", flush=True)
        print(f"memory {size:6d} items: verdicts identical across codes and runs: {len(set(digests.values())) == 1}",
              flush=True)
    for (code, memory), by_size in peaks.items():
        measured = [size for size in sizes if size in by_size]
        if len(measured) < 2:
            continue
        steps = [f"{a}->{b}: {(by_size[b] - by_size[a]) * 1024 / (b - a):5.1f} KB/item"
                 for a, b in zip(measured, measured[1:], strict=False)]
        overall = (by_size[measured[-1]] - by_size[measured[0]]) * 1024 / (measured[-1] - measured[0])
        print(f"growth {code:6s} {memory:5s} {' | '.join(steps)} | {measured[0]}->{measured[-1]}: {overall:5.1f} KB/item",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--repeat", type=int, default=3, help="runs per phase and code; best and median reported")
    parser.add_argument("--concurrency", type=int, default=None, help="default: the scorer's own default")
    parser.add_argument("--phases", default=",".join(PHASES))
    parser.add_argument("--before", type=Path, default=None, help="an earlier checkout to compare against")
    parser.add_argument("--ragas-python", type=Path, default=None,
                        help="a Python with ragas installed (a throwaway venv, never .venv): RAGAS on faithfulness")
    parser.add_argument("--memory-sizes", default=None,
                        help="e.g. 200,800,3200: peak memory of the full suite at each size, growth per item "
                             "(the latency phases are skipped)")
    parser.add_argument("--trace-sizes", default="200,800,3200",
                        help="the sizes also measured under tracemalloc (slow: about 3x the time)")
    parser.add_argument("--child", choices=(*PHASES, "ragas"), help=argparse.SUPPRESS)
    parser.add_argument("--memory", choices=("rss", "trace"), help=argparse.SUPPRESS)
    parser.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--repo", type=Path, default=REPO, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        figures = ragas_child(args.samples) if args.child == "ragas" else child(args.child, args.db, args.repo,
                                                                               args.concurrency, args.memory)
        print(json.dumps(figures))
        return
    sys.path.insert(0, str(REPO / "bench"))
    from bench_judge_calls import SCRIPT

    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; {args.samples} responses, stub "
          f"judge at {args.latency_ms:g} ms, concurrency {args.concurrency or 'default'}", flush=True)
    workdir = Path(tempfile.mkdtemp(prefix="bench-scoring-"))
    try:
        script = workdir / "script.json"
        script.write_text(json.dumps([rule.model_dump(exclude_none=True) for rule in SCRIPT] + RAGAS_RULES))
        if args.memory_sizes:
            memory_growth(args, workdir, script)
        for phase in args.phases.split(",") if not args.memory_sizes else ():
            codes = ["after"] + ["before"] * bool(args.before) + ["ragas"] * bool(args.ragas_python and phase == "faithfulness")
            template = workdir / f"{phase}.db"
            seed(template, args.samples, constraints=phase == "suite")
            runs: dict[str, list[dict]] = {code: [] for code in codes}
            for _ in range(args.repeat):
                for code in codes:  # interleaved
                    runs[code].append(measure(phase, code, template, workdir, args, script))
            for code, figures in runs.items():
                walls = [f["wall"] for f in figures]
                print(f"{phase:12s} {code:6s} wall best {min(walls):6.2f} s median {median(walls):6.2f} s | CPU median "
                      f"{median([f['cpu'] for f in figures]):5.2f} s | calls {figures[-1]['calls']} errors "
                      f"{figures[-1]['errors']} mean faithfulness {figures[-1]['mean']:.3f} | peak in flight "
                      f"{max(f['max_in_flight'] for f in figures)}, mean {median([f['mean_in_flight'] for f in figures]):4.1f} | "
                      f"per instance {median(walls) / args.samples * 1000:6.1f} ms",
                      flush=True)
            for code in codes[1:]:
                ratio = {k: median([f[k] for f in runs["after"]]) / median([f[k] for f in runs[code]]) for k in ("wall", "cpu")}
                print(f"{phase:12s} after/{code}: wall {ratio['wall']:.2f}x, CPU {ratio['cpu']:.2f}x (medians)", flush=True)
        print(f"load average {os.getloadavg()[0]:.2f} at the end")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
