"""The PostgreSQL pass's per-test database cost: server CPU of one fixture cycle, on a throwaway cluster.

tests/backends.py PostgresDatabases gives each test `CREATE DATABASE ... TEMPLATE <migrated template>` (made ahead by
a background thread) and drops it after the test. This bench repeats that cycle in steady state (two copies made
ahead; per cycle: one copy made, the test's database opened and written once, then dropped; or kept, for the cost
of the drop) on a cluster started by core.testing.postgres with its settings, plus optional server settings per
variant (ALTER SYSTEM, then a restart), and reports per cycle: the server's CPU (postmaster and every backend, from
/proc), wall, and checkpoints requested (each DROP DATABASE forces one on PostgreSQL 15).

Run:  .venv/bin/python -m bench.bench_pg_test_databases [--cycles 30]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from core.store.db import forget_engine, upgrade
from core.testing.postgres import Cluster, start_cluster, stop_cluster, temporary_cluster, wait_ready

TEMPLATE = "bench_template"
VARIANTS = {  # name: (CREATE DATABASE strategy, drop after the cycle, extra server settings)
    "WAL_LOG, dropped (the fixtures)": ("WAL_LOG", True, {}),
    "FILE_COPY, dropped": ("FILE_COPY", True, {}),
    "WAL_LOG, kept": ("WAL_LOG", False, {}),
    "WAL_LOG, dropped, wal_level=minimal": ("WAL_LOG", True, {"wal_level": "minimal", "max_wal_senders": "0"}),
}


def server_cpu_seconds(cluster: Cluster) -> float:
    """CPU seconds of the cluster: the postmaster's own and reaped children's, plus its live children's."""
    postmaster = int((cluster.directory / "data" / "postmaster.pid").read_text().split()[0])
    tick = os.sysconf("SC_CLK_TCK")
    total = sum(int(x) for x in (_stat(postmaster) or [])[11:15])
    for entry in Path("/proc").iterdir():
        fields = _stat(int(entry.name)) if entry.name.isdigit() else None
        if fields and int(fields[1]) == postmaster:
            total += int(fields[11]) + int(fields[12])
    return total / tick


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()


def _connect(cluster: Cluster, database: str = "postgres") -> psycopg.Connection:
    return psycopg.connect(host="127.0.0.1", port=cluster.port, user="postgres", dbname=database, autocommit=True)


@contextmanager
def configured(cluster: Cluster, settings: dict[str, str]) -> Iterator[Cluster]:
    """The cluster restarted with `settings` (ALTER SYSTEM), reset and restarted again on exit."""
    if not settings:
        yield cluster
        return
    _restart_with(cluster, settings, "SET {name} = '{value}'")
    try:
        yield cluster
    finally:
        _restart_with(cluster, settings, "RESET {name}")


def _restart_with(cluster: Cluster, settings: dict[str, str], statement: str) -> None:
    with _connect(cluster) as admin:
        for name, value in settings.items():
            admin.execute(f"ALTER SYSTEM {statement.format(name=name, value=value)}")
    stop_cluster(cluster.directory)
    start_cluster(cluster.directory, cluster.port)
    wait_ready(cluster)


def cycle_costs(cluster: Cluster, strategy: str, drop: bool, cycles: int) -> dict[str, float]:
    """Per cycle in steady state: server CPU ms, wall ms, checkpoints requested."""
    names = [f"bench_{strategy.lower()}_{i}" for i in range(cycles + 2)]
    with _connect(cluster) as admin:
        for name in names[:2]:
            admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE}" STRATEGY {strategy}')
        checkpoints = _checkpoints(admin)
        cpu, wall = server_cpu_seconds(cluster), time.monotonic()
        for i in range(cycles):
            admin.execute(f'CREATE DATABASE "{names[i + 2]}" TEMPLATE "{TEMPLATE}" STRATEGY {strategy}')
            with _connect(cluster, names[i]) as test:
                test.execute("INSERT INTO alembic_version SELECT 'copy' || version_num FROM alembic_version")
            if drop:
                admin.execute(f'DROP DATABASE "{names[i]}"')
        costs = {"server CPU ms": (server_cpu_seconds(cluster) - cpu) * 1000 / cycles,
                 "wall ms": (time.monotonic() - wall) * 1000 / cycles,
                 "checkpoints": (_checkpoints(admin) - checkpoints) / cycles}
        for name in names:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
    return costs


def _checkpoints(admin: psycopg.Connection) -> int:
    row = admin.execute("SELECT checkpoints_req FROM pg_stat_bgwriter").fetchone()
    return int(row[0]) if row else 0


def main() -> None:
    """Print each variant's per-cycle costs."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--cycles", type=int, default=30)
    args = parser.parse_args()
    print(f"load {os.getloadavg()[0]:.1f}")
    with temporary_cluster() as cluster:
        wait_ready(cluster)
        with _connect(cluster) as admin:
            admin.execute(f'CREATE DATABASE "{TEMPLATE}"')
        upgrade(cluster.url(TEMPLATE))
        forget_engine(cluster.url(TEMPLATE))
        for variant, (strategy, drop, settings) in VARIANTS.items():
            with configured(cluster, settings):
                costs = cycle_costs(cluster, strategy, drop, args.cycles)
            print(f"{variant:40s} " + ", ".join(f"{k} {v:.1f}" for k, v in costs.items()))
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
