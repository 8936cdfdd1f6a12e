"""Runner benchmark: our per-call CPU overhead over the bare SDK, 2,000 generation calls at 100 ms fake latency with
concurrency 32 (the wall floor is 2000 x 0.1 / 32 = 6.25 s).

The fake server runs as a separate process, so its CPU is not counted and it does not share our GIL. Each round runs
  sdk       the bare AsyncOpenAI client (chat.completions.create) making the runner's calls with the same concurrency
            and HTTP client: the reference;
  runner    our runner end to end (cache writes, lease, budget reservations, response rows) on a fresh copy of one
            seeded database;
  sdk-post  the bare client on client.post, the path our OpenAI adapter takes (create() minus its params transform):
            runner - sdk-post is the runner's own bookkeeping;
the order rotating between rounds (interleaved), after one untimed round of each to warm up. CPU is time.process_time
of this process (every thread; the server and, with --workers, the joined worker processes via RUSAGE_CHILDREN).
Reported: CPU ms per call of each (best and median of --repeat rounds), the difference per call (best vs best and the
median of the per-round differences) and the wall ratio.
Optional: --workers N adds rounds of `gauntlet run --workers N`; --baseline times the no-network baseline provider
(the runner's bookkeeping alone); --profile FILE writes a cProfile of one extra runner round and prints its top.
Run: .venv/bin/python bench/bench_runner.py [--calls 2000] [--concurrency 32] [--latency-ms 100] [--repeat 3]
     [--workers 2] [--baseline] [--profile /tmp/runner.prof]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import core.generation.providers.openai_provider  # noqa: E402,F401 - import the SDK before timing: a one-off, not per call
from core.generation import registered_models, run_prompts, runner, runs  # noqa: E402
from core.store.db import make_engine, upgrade  # noqa: E402
from tests.factories import add_model, seed_instances  # noqa: E402

Figures = tuple[float, float, dict]  # wall s, CPU s, outcome


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(latency_ms: float) -> tuple[subprocess.Popen, str]:
    """The fake server as a separate process (so it does not share our GIL); returns it and its base URL."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "core.cli", "fake-server", "--port", str(port), "--latency-ms",
                                str(latency_ms)], cwd=REPO, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(base + "/health", timeout=0.5)
        except urllib.error.HTTPError:
            return process, base
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("fake server did not start")


def seed(template: Path, calls: int) -> None:
    url = f"sqlite:///{template}"
    upgrade(url)
    engine = make_engine(url)
    seed_instances(engine, calls)
    add_model(engine, "bench-gpt", "openai", max_output_tokens=64)
    registered_models.ensure_baselines(engine)
    engine.dispose()


def timed_run(template: Path, workdir: Path, phase: str, model: str, concurrency: int,
              workers: int = 1) -> Figures:
    """(wall s, CPU s of this process and its worker processes, outcome) of one run of every instance with `model`."""
    path = workdir / f"{phase}.db"
    shutil.copy(template, path)
    engine = make_engine(f"sqlite:///{path}")
    run_id = runs.create_run(engine, runs.RunOptions(models=[model], concurrency=concurrency, max_retries=0,
                                                     workers=workers))
    started, cpu = time.perf_counter(), time.process_time() + workers_cpu()
    result = asyncio.run(runner.execute_run(engine, run_id))
    wall, cpu = time.perf_counter() - started, time.process_time() + workers_cpu() - cpu
    engine.dispose()
    path.unlink()
    return wall, cpu, {"done": result.done, "failed": result.failed}


def workers_cpu() -> float:
    """CPU seconds of this process's ended (joined) children: the run's worker processes, not the live server."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def bench_prompts(template: Path) -> list[list[dict[str, str]]]:
    """The runner's own prompts for every seeded instance, as SDK message lists."""
    from sqlmodel import Session, select

    from core.store.models import Instance

    engine = make_engine(f"sqlite:///{template}")
    with Session(engine) as session:
        ids = list(session.exec(select(Instance.id)))
        prompts = run_prompts.load_prompts(session, ids, "stored", 0)
    engine.dispose()
    return [[{"role": m.role, "content": m.content} for m in prompts[i][0]] for i in ids]


async def sdk_only(base_url: str, prompts: list[list[dict[str, str]]], concurrency: int, post: bool = False) -> dict:
    """The bare SDK making the same calls as the runner with `concurrency` in flight, on the same HTTP client:
    chat.completions.create, or with `post` the client.post path our adapter takes (no params transform)."""
    import openai
    from openai.types.chat import ChatCompletion

    from core.generation.providers.errors import http_client_for

    client = openai.AsyncOpenAI(api_key="bench", base_url=base_url + "/v1", max_retries=0,
                                http_client=http_client_for(openai, concurrency))
    gate = asyncio.Semaphore(concurrency)
    failures = 0

    async def one(messages: list[dict[str, str]]) -> None:
        nonlocal failures
        async with gate:
            body = {"model": "bench-gpt", "messages": messages, "max_completion_tokens": 64, "temperature": 0.0}
            try:
                if post:
                    await client.post("/chat/completions", body=body, cast_to=ChatCompletion,
                                      options={"security": {"bearer_auth": True}})
                else:
                    await client.chat.completions.create(**body)
            except openai.OpenAIError:
                failures += 1

    await asyncio.gather(*(one(messages) for messages in prompts))
    await client.close()
    return {"done": len(prompts) - failures, "failed": failures}


def timed_sdk(base_url: str, prompts: list[list[dict[str, str]]], concurrency: int, post: bool = False) -> Figures:
    """(wall s, CPU s, outcome) of the bare SDK."""
    started, cpu = time.perf_counter(), time.process_time()
    outcome = asyncio.run(sdk_only(base_url, prompts, concurrency, post))
    return time.perf_counter() - started, time.process_time() - cpu, outcome


def interleaved(repeat: int, phases: dict[str, Callable[[int], Figures]], calls: int) -> dict[str, list[Figures]]:
    """`repeat` rounds of every phase, the order rotating each round; each run reported as it ends."""
    names = list(phases)
    results: dict[str, list[Figures]] = {name: [] for name in names}
    for n in range(repeat):
        for name in names[n % len(names):] + names[:n % len(names)]:
            results[name].append(phases[name](n))
            report(f"{name} #{n + 1}", *results[name][-1], calls)
    return results


def report(label: str, wall: float, cpu: float, result: dict, calls: int) -> None:
    print(f"{label:14s} wall={wall:6.2f} s cpu/call={cpu / calls * 1000:6.3f} ms "
          f"done={result['done']} failed={result['failed']}", flush=True)


def summary(results: dict[str, list[Figures]], calls: int, floor: float) -> None:
    """Best and median CPU ms/call of each phase, runner - SDK per call, and wall ratios to the SDK and the floor."""
    cpu = {name: [run[1] / calls * 1000 for run in runs_] for name, runs_ in results.items()}
    wall = {name: [run[0] for run in runs_] for name, runs_ in results.items()}
    for name in results:
        print(f"{name:10s} cpu/call best {min(cpu[name]):.3f} ms median {statistics.median(cpu[name]):.3f} ms; "
              f"wall best {min(wall[name]):.2f} s median {statistics.median(wall[name]):.2f} s "
              f"({min(wall[name]) / floor:.2f}x the {floor:.2f} s floor)")
    for name, reference in [(n, "sdk") for n in results if n != "sdk"] + [("runner", "sdk-post")]:
        diffs = [ours - sdk for ours, sdk in zip(cpu[name], cpu[reference], strict=True)]
        ratios = [ours / sdk for ours, sdk in zip(wall[name], wall[reference], strict=True)]
        print(f"{name} over {reference}: CPU {min(cpu[name]) - min(cpu[reference]):+.3f} ms/call best vs best, "
              f"{statistics.median(diffs):+.3f} ms/call median of rounds; wall ratio best "
              f"{min(wall[name]) / min(wall[reference]):.2f}x, median of rounds {statistics.median(ratios):.2f}x")


def profile(template: Path, workdir: Path, concurrency: int, path: str, calls: int) -> None:
    """cProfile one runner round into `path`; print the top functions by own time (per call of the run)."""
    profiler = cProfile.Profile()
    profiler.enable()
    timed_run(template, workdir, "profile", "bench-gpt", concurrency)
    profiler.disable()
    profiler.dump_stats(path)
    stats = pstats.Stats(path)
    total = stats.total_tt  # type: ignore[attr-defined]
    print(f"profile ({path}): {total / calls * 1000:.3f} ms/call under cProfile; top by own time:")
    stats.sort_stats("tottime").print_stats(25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds; best and median are reported")
    parser.add_argument("--workers", type=int, default=1, help="also time `gauntlet run --workers N` (N > 1)")
    parser.add_argument("--baseline", action="store_true", help="also time the no-network baseline provider")
    parser.add_argument("--profile", default="", help="cProfile one extra runner round into this file")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start; {args.calls} calls, "
          f"concurrency {args.concurrency}, latency {args.latency_ms:g} ms", flush=True)
    workdir = Path(tempfile.mkdtemp(prefix="bench-runner-"))
    os.environ["OPENAI_API_KEY"] = "bench-not-a-real-key"
    os.environ["GAUNTLET_SECRETS_FILE"] = str(workdir / "none.toml")
    server, base = start_server(args.latency_ms)
    os.environ["OPENAI_BASE_URL"] = base + "/v1"
    try:
        template = workdir / "template.db"
        seed(template, args.calls)
        prompts = bench_prompts(template)
        phases: dict[str, Callable[[int], Figures]] = {
            "sdk": lambda n: timed_sdk(base, prompts, args.concurrency),
            "sdk-post": lambda n: timed_sdk(base, prompts, args.concurrency, post=True),
            "runner": lambda n: timed_run(template, workdir, f"runner-{n}", "bench-gpt", args.concurrency),
        }
        if args.workers > 1:
            phases[f"workers-{args.workers}"] = lambda n: timed_run(template, workdir, f"workers-{n}", "bench-gpt",
                                                                    args.concurrency, args.workers)
        if args.baseline:
            phases["baseline"] = lambda n: timed_run(template, workdir, f"baseline-{n}", "baseline:always-refuse",
                                                     args.concurrency)
        for phase in phases.values():  # warm-up: imports, first connections, SQLite page cache
            phase(-1)
        results = interleaved(args.repeat, phases, args.calls)
        summary(results, args.calls, args.calls * args.latency_ms / 1000 / args.concurrency)
        if args.profile:
            profile(template, workdir, args.concurrency, args.profile, args.calls)
        print(f"load average {os.getloadavg()[0]:.2f} at the end")
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
