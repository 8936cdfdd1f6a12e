"""The Ray executor against the local runner on 2,000 fake-server calls: the same seeded SQLite database twice,
MODELS x (N instances + N twins with the same prompts), one run local and one on a local Ray instance (2 CPUs).
Prints whether the response tables are byte-identical (canonical dump without ids, timestamps and latencies), the
cache hits, provider calls, wall and CPU time of each, and Ray's start-up time.

    .venv/bin/python bench/bench_ray_executor.py [--instances 1000]    # 2 x 1000 = 2,000 paid calls
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from core.store.db import upgrade
from tests.generation.test_ray_executor import MODELS, compare_executors
from tests.ray_runtime import running


def cpu_seconds() -> float:
    """CPU time of this process and its reaped children (user + system)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    """Run the comparison and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=1000, help="instances per twin set (calls = 2 x this)")
    parser.add_argument("--warm", type=int, default=0, help="instances answered by gpt-a beforehand")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        counter = itertools.count()

        def make_url() -> str:
            url = f"sqlite:///{folder}/bench-{next(counter)}.db"
            upgrade(url)
            return url

        with running(Path(folder)) as server:
            started = time.process_time()
            result = compare_executors(make_url, server, args.instances, args.warm)
            cpu = time.process_time() - started
    local, ray = result["local"], result["ray"]
    items = 2 * args.instances * len(MODELS)
    print(f"items {items}: provider calls local {local['provider_calls']} / ray {ray['provider_calls']}; cache hits "
          f"local {local['cache_hits']} / ray {ray['cache_hits']}; re-bought {local['rebought']} / {ray['rebought']}")
    for name, row in (("local", local), ("ray", ray)):
        print(f"{name}: {row['seconds']:.2f} s wall, status {row['status']}, spent ${row['spent_usd']:.6f}, "
              f"sha256 {hashlib.sha256(row['dump']).hexdigest()}")
    print(f"response tables byte-identical: {local['dump'] == ray['dump']} ({len(local['dump'])} bytes)")
    print(f"driver CPU (this process) for both runs incl. seeding: {cpu:.2f} s; with reaped children "
          f"{cpu_seconds():.2f} s; pid {os.getpid()}")


if __name__ == "__main__":
    main()
