"""Run memory: peak memory of `gauntlet run` (core.generation.runner.execute_run) per item, at several run sizes.

Each size runs in a fresh child process on a fresh seeded database: N EnterpriseRAG instances cycled from the bundled
sample (data/sample: about 9 KB, nine documents and several constraints an instance), one generator on the
openai_compatible provider answering through the real OpenAI SDK from the fake server (its own process, 0 ms latency),
concurrency 8. Measured around execute_run only (the imports and the seeding are before it): the peak of traced Python
allocations (tracemalloc) and the peak resident set (VmHWM), both above the level before the run, in MB. Growth per item
= (peak at the largest size - peak at the smallest) / (largest - smallest) items; target (issue 42): <= 20 KB per
item from 200 to 3,200 items. With --before PATH (an earlier checkout, e.g. `git archive COMMIT core | tar -x -C
PATH`) the same sizes run on that code too, interleaved.

    .venv/bin/python -m bench.bench_run_memory [--sizes 200,800,3200] [--before PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET_KB = 20.0  # per item (issue 42)


SAMPLE = REPO / "data" / "sample" / "enterprise_rag_sample.jsonl"


def seed(path: Path, items: int) -> None:
    """N instances cycled from the bundled EnterpriseRAG sample (its queries, documents and constraints; about 9 KB
    and nine documents an instance, as the paper's) and one registered generator on the fake server."""
    from sqlmodel import Session

    from core.store.db import make_engine, upgrade
    from core.store.models import Constraint, Document, Domain, Instance, Model

    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    url = f"sqlite:///{path}"
    upgrade(url)
    engine = make_engine(url)
    with Session(engine) as s:
        dom = Domain(name="Energy")
        s.add_all([dom, Model(name="gen", provider="openai_compatible", model_name="gen-x",
                              settings={"base_url_env": "BENCH_GEN_URL", "api_key_env": "BENCH_GEN_KEY"})])
        s.flush()
        for k in range(items):
            row = rows[k % len(rows)]
            inst = Instance(uid=f"{row['id']}-{k}", domain_id=dom.id or 0, query=row["query"], mode=row["mode"])
            s.add(inst)
            s.flush()
            s.add_all(Document(instance_id=inst.id, position=pos, doc_uid=f"{d['doc_id']}-{k}", title=d["title"],
                               text=d["text"], role=d["role"], content_type=d.get("content_type", "text"))
                      for pos, d in enumerate(row["documents"]))
            s.add_all(Constraint(instance_id=inst.id, position=pos, cid=c["id"], text=c["text"],
                                 category=c["category"], sub_dimension=c["sub_dimension"],
                                 judge_method=c["judge_method"], criterion=c.get("criterion", ""))
                      for pos, c in enumerate(row["constraints"]))
        s.commit()
    engine.dispose()


def child(db: Path, repo: Path, concurrency: int) -> dict:
    """Create and execute the run in this process with `repo`'s code; the peaks above the level before it."""
    sys.path.insert(0, str(repo))
    import asyncio
    import gc
    import time
    import tracemalloc

    from sqlmodel import Session, func, select

    import core.generation.providers.openai_provider  # noqa: F401 - imports are one-offs, not per item
    from bench.bench_scoring import peak_rss_mb
    from core.generation.runner import execute_run
    from core.generation.runs import RunOptions, create_run
    from core.store.db import make_engine
    from core.store.models import Response

    engine = make_engine(f"sqlite:///{db}")
    run_id = create_run(engine, RunOptions(models=["gen"], name="memory", concurrency=concurrency))
    gc.collect()
    rss_before = peak_rss_mb()
    tracemalloc.start()
    started = time.perf_counter()
    progress = asyncio.run(execute_run(engine, run_id))
    wall = time.perf_counter() - started
    traced = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    rss = peak_rss_mb() - rss_before
    with Session(engine) as s:
        done = s.exec(select(func.count()).select_from(Response).where(Response.status == "done")).one()
    return {"traced_mb": traced, "rss_mb": rss, "done": done, "wall": wall, "status": progress.status}


def measure(size: int, code: Path, workdir: Path, base: str, concurrency: int) -> dict:
    """One child measurement at `size` items with the code at `code`."""
    db = workdir / f"run-{size}-{os.getpid()}-{len(list(workdir.iterdir()))}.db"
    seed(db, size)
    env = {**os.environ, "BENCH_GEN_URL": base + "/v1", "BENCH_GEN_KEY": "bench-not-a-real-key",
           "GAUNTLET_SECRETS_FILE": str(workdir / "none.toml")}
    command = [sys.executable, "-m", "bench.bench_run_memory", "--child", str(db), "--repo", str(code),
               "--concurrency", str(concurrency)]
    try:
        out = subprocess.run(command, env=env, capture_output=True, text=True, cwd=code)
        if out.returncode:
            raise RuntimeError(f"run of {size} items failed:\n{out.stderr[-3000:]}")
        figures = json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        db.unlink(missing_ok=True)
    if figures["done"] != size:
        raise RuntimeError(f"{figures['done']} of {size} items done ({figures['status']})")
    return figures


def growth(peaks: dict[int, float]) -> float:
    """KB per item between the smallest and the largest size."""
    small, large = min(peaks), max(peaks)
    return (peaks[large] - peaks[small]) * 1024 / (large - small)


def run(sizes: list[int], codes: dict[str, Path], concurrency: int = 8) -> dict[str, dict[str, dict[int, float]]]:
    """Peaks per code, measure ('traced_mb', 'rss_mb') and size; sizes interleaved across codes."""
    from bench.bench_scoring import start_server

    peaks: dict[str, dict[str, dict[int, float]]] = {c: {"traced_mb": {}, "rss_mb": {}} for c in codes}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        script = workdir / "script.json"
        script.write_text("[]")
        server, base = start_server(0, script)
        try:
            for size in sizes:
                for code, path in codes.items():
                    figures = measure(size, path, workdir, base, concurrency)
                    for key in ("traced_mb", "rss_mb"):
                        peaks[code][key][size] = figures[key]
                    print(f"{code:6s} {size:6d} items: traced peak +{figures['traced_mb']:7.1f} MB, RSS peak "
                          f"+{figures['rss_mb']:7.1f} MB, wall {figures['wall']:6.1f} s", flush=True)
        finally:
            server.terminate()
            server.wait()
    return peaks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="200,800,3200")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--before", type=Path, help="an earlier checkout to measure too")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--repo", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.repo, args.concurrency)))
        return
    codes = {"after": REPO, **({"before": args.before.resolve()} if args.before else {})}
    sizes = [int(n) for n in args.sizes.split(",")]
    peaks = run(sizes, codes, args.concurrency)
    for code, by in peaks.items():
        for key, values in by.items():
            per_item = growth(values)
            verdict = "met" if per_item <= TARGET_KB else "MISSED"
            print(f"growth {code:6s} {key:9s} {min(values)} -> {max(values)} items: {per_item:6.1f} KB/item "
                  f"(target <= {TARGET_KB:.0f}: {verdict})")


if __name__ == "__main__":
    main()
