"""Runner benchmark: 2,000 generation calls at 100 ms fake latency with concurrency 32, against the 6.25 s floor.

Phases, each runner phase on a fresh copy of one seeded database (so no phase hits another's cache); the fake
server runs as a separate process so it does not share our GIL; every figure is the best of --repeat runs:
  latency   - the server answers after 100 ms: wall time vs the floor 2000 x 0.1 / 32, once per --workers value
              (`gauntlet run --workers N`: N processes, each with concurrency 32/N; CPU includes the workers');
  zero      - the same at 0 ms latency: everything on our side per call (SDK, HTTP, cache, DB writes);
  sdk-only  - the bare AsyncOpenAI client, same calls and concurrency, no runner: zero minus this = our overhead;
  baseline  - the no-network baseline provider: the runner's own bookkeeping per call (cache + DB writes).
CPU figures are CPU time per call of this process and its worker processes (the server's CPU is not counted).
Run: .venv/bin/python bench/bench_runner.py [--calls 2000] [--concurrency 32] [--latency-ms 100] [--workers 1,2]
     [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import socket
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
from core.generation import runner, runs# noqa: E402
from core.store.db import make_engine, upgrade  # noqa: E402
from tests.factories import add_model, seed_instances  # noqa: E402


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
    runs.ensure_baselines(engine)
    engine.dispose()


def timed_run(template: Path, workdir: Path, phase: str, model: str, concurrency: int,
              workers: int = 1) -> tuple[float, float, dict]:
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
    return wall, cpu, {"done": result.done, "failed": result.failed}


def workers_cpu() -> float:
    """CPU seconds of this process's ended (joined) children: the run's worker processes, not the server."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def bench_prompts(template: Path) -> list[list[dict[str, str]]]:
    """The runner's own prompts for every seeded instance, as SDK message lists."""
    from sqlmodel import Session, select

    from core.store.models import Instance

    engine = make_engine(f"sqlite:///{template}")
    with Session(engine) as session:
        ids = list(session.exec(select(Instance.id)))
        prompts = runs.load_prompts(session, ids, "stored", 0)
    engine.dispose()
    return [[{"role": m.role, "content": m.content} for m in prompts[i][0]] for i in ids]


async def sdk_only(base_url: str, prompts: list[list[dict[str, str]]], concurrency: int) -> dict:
    """The bare SDK making the same calls as the runner with `concurrency` in flight, on the same HTTP client."""
    import openai

    from core.generation.providers.errors import http_client_for

    client = openai.AsyncOpenAI(api_key="bench", base_url=base_url + "/v1", max_retries=0,
                                http_client=http_client_for(openai, concurrency))
    gate = asyncio.Semaphore(concurrency)
    failures = 0

    async def one(messages: list[dict[str, str]]) -> None:
        nonlocal failures
        async with gate:
            try:
                await client.chat.completions.create(model="bench-gpt", messages=messages, max_completion_tokens=64,
                                                     temperature=0.0)
            except openai.OpenAIError:
                failures += 1

    await asyncio.gather(*(one(messages) for messages in prompts))
    await client.close()
    return {"done": len(prompts) - failures, "failed": failures}


def timed_sdk(base_url: str, prompts: list[list[dict[str, str]]], concurrency: int) -> tuple[float, float, dict]:
    """(wall s, CPU s, outcome) of the bare SDK."""
    started, cpu = time.perf_counter(), time.process_time()
    outcome = asyncio.run(sdk_only(base_url, prompts, concurrency))
    return time.perf_counter() - started, time.process_time() - cpu, outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--workers", default="1,2", help="comma-separated worker counts for the latency phase")
    parser.add_argument("--repeat", type=int, default=3, help="runs per phase; the best is reported")
    args = parser.parse_args()
    worker_counts = [int(n) for n in args.workers.split(",") if n.strip()]
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start", flush=True)
    workdir = Path(tempfile.mkdtemp(prefix="bench-runner-"))
    os.environ["OPENAI_API_KEY"] = "bench-not-a-real-key"
    os.environ["GAUNTLET_SECRETS_FILE"] = str(workdir / "none.toml")
    try:
        template = workdir / "template.db"
        seed(template, args.calls)
        floor = args.calls * args.latency_ms / 1000 / args.concurrency
        figures = {}
        for latency in (args.latency_ms, 0.0):
            server, base = start_server(latency)
            os.environ["OPENAI_BASE_URL"] = base + "/v1"
            try:
                for workers in worker_counts if latency else [1]:
                    phase = f"latency-w{workers}" if latency else "zero"
                    figures[phase] = best(args.repeat, lambda n, p=phase, w=workers: timed_run(
                        template, workdir, f"{p}-{n}", "bench-gpt", args.concurrency, w))
                    report(phase, latency, *figures[phase], args.calls, floor if latency else None)
                if not latency:
                    prompts = bench_prompts(template)
                    figures["sdk-only"] = best(args.repeat, lambda n: timed_sdk(base, prompts, args.concurrency))
                    report("sdk-only", latency, *figures["sdk-only"], args.calls, None)
            finally:
                server.terminate()
                server.wait()
        figures["baseline"] = best(args.repeat, lambda n: timed_run(template, workdir, f"baseline-{n}",
                                                                     "baseline:always-refuse", args.concurrency))
        report("baseline", 0.0, *figures["baseline"], args.calls, None)
        own_wall = (figures["zero"][0] - figures["sdk-only"][0]) / args.calls * 1000
        own_cpu = (figures["zero"][1] - figures["sdk-only"][1]) / args.calls * 1000
        print(f"our overhead per call over the bare SDK: wall {own_wall:.3f} ms, CPU {own_cpu:.3f} ms; "
              f"runner bookkeeping alone (baseline): wall {figures['baseline'][0] / args.calls * 1000:.3f} ms")
        print(f"load average {os.getloadavg()[0]:.2f} at the end")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def best(repeat: int, measure: Callable[[int], tuple[float, float, dict]]) -> tuple[float, float, dict]:
    """The run with the lowest wall time out of `repeat` (CPU taken from that same run)."""
    return min((measure(n) for n in range(max(1, repeat))), key=lambda figures: figures[0])


def report(phase: str, latency: float, wall: float, cpu: float, result: dict, calls: int, floor: float | None) -> None:
    line = (f"{phase:10s} latency={latency:5.0f} ms calls={calls} wall={wall:6.2f} s "
            f"wall/call={wall / calls * 1000:6.3f} ms cpu/call={cpu / calls * 1000:6.3f} ms "
            f"done={result['done']} failed={result['failed']}")
    if floor is not None:
        line += f" floor={floor:.2f} s over_floor={(wall / floor - 1) * 100:+.1f}%"
    print(line, flush=True)


if __name__ == "__main__":
    main()
