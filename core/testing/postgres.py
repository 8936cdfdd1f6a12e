"""A throwaway PostgreSQL cluster on a loopback port, for tests, CI and `make app-postgres`.

It uses the distribution's server binaries (Debian: /usr/lib/postgresql/<version>/bin). As root, the cluster is
initialised and run as the `postgres` user; otherwise as the current user. Authentication is `trust` on
127.0.0.1 only, so no password is ever written anywhere.

    python -m core.testing.postgres start DIR [--port N]   # prints the admin URL, leaves the server running
    python -m core.testing.postgres stop DIR
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SERVER_USER = "postgres"


def server_bin_dir() -> Path:
    """The directory holding initdb and pg_ctl (newest installed version first), or raise with an install hint."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True)
    for found in [*candidates, str(Path(shutil.which("pg_ctl") or "/nonexistent").parent)]:
        if (Path(found) / "initdb").exists() and (Path(found) / "pg_ctl").exists():
            return Path(found)
    raise RuntimeError("PostgreSQL server binaries not found: apt-get install postgresql")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _as_server_user(argv: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", SERVER_USER, "--", *argv]
    return argv


def _run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(_as_server_user(argv), check=True, capture_output=True, text=True, **kwargs)


@dataclass(frozen=True)
class Cluster:
    """A running cluster: its data directory and port."""

    directory: Path
    port: int

    @property
    def admin_url(self) -> str:
        """SQLAlchemy URL of the `postgres` maintenance database."""
        return self.url("postgres")

    def url(self, database: str) -> str:
        """SQLAlchemy URL (psycopg 3) of `database` on this cluster."""
        return f"postgresql+psycopg://{SERVER_USER}@127.0.0.1:{self.port}/{database}"


def start_cluster(directory: Path, port: int | None = None) -> Cluster:
    """Initialise (if new) and start a cluster in `directory` on 127.0.0.1:`port`."""
    directory = Path(directory).resolve()
    data = directory / "data"
    bindir = server_bin_dir()
    directory.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        shutil.chown(directory, SERVER_USER)
        directory.chmod(0o700)
    if not (data / "PG_VERSION").exists():
        _run([str(bindir / "initdb"), "-D", str(data), "-U", SERVER_USER, "--auth=trust", "-E", "UTF8",
              "--locale=C.UTF-8", "--no-sync"])
    if _is_running(bindir, data):
        running = int((directory / "port").read_text())
        if port not in (None, running):
            raise ValueError(f"the cluster in {directory} is already running on port {running}, not {port}: stop it "
                             "first (make stop-postgres)")
        return Cluster(directory, running)
    port = port or free_port()
    # Per test database (CREATE DATABASE ... TEMPLATE, one write, DROP) these settings cost about 60 ms of server CPU;
    # wal_level=minimal costs about 4x that (bench/bench_pg_test_databases.py, load 18-23).
    options = (f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={directory} "
               "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=1000 "
               "-c shared_buffers=64MB")
    _run([str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(directory / "server.log"), "-w",
          "-t", "60", "start"])
    (directory / "port").write_text(str(port))
    return Cluster(directory, port)


def _is_running(bindir: Path, data: Path) -> bool:
    if not (data / "postmaster.pid").exists():
        return False
    status = subprocess.run(_as_server_user([str(bindir / "pg_ctl"), "-D", str(data), "status"]), capture_output=True)
    return status.returncode == 0


def stop_cluster(directory: Path) -> None:
    """Stop the cluster in `directory` (fast shutdown); silent if it is not running."""
    data = Path(directory).resolve() / "data"
    if (data / "postmaster.pid").exists():
        _run([str(server_bin_dir() / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"])


@contextmanager
def temporary_cluster() -> Iterator[Cluster]:
    """A cluster in a fresh temporary directory, stopped and removed on exit."""
    directory = Path(tempfile.mkdtemp(prefix="gauntlet-pg-"))
    try:
        yield start_cluster(directory)
    finally:
        stop_cluster(directory)
        shutil.rmtree(directory, ignore_errors=True)


def wait_ready(cluster: Cluster, timeout: float = 30) -> None:
    """Wait until the cluster accepts connections."""
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            psycopg.connect(host="127.0.0.1", port=cluster.port, user=SERVER_USER, dbname="postgres").close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def create_database(cluster: Cluster, name: str, template: str | None = None) -> str:
    """Create database `name` (optionally from `template`) and return its URL."""
    import psycopg

    with psycopg.connect(host="127.0.0.1", port=cluster.port, user=SERVER_USER, dbname="postgres",
                         autocommit=True) as conn:
        suffix = f' TEMPLATE "{template}"' if template else ""
        conn.execute(f'CREATE DATABASE "{name}"{suffix}')
    return cluster.url(name)


def main(argv: list[str] | None = None) -> int:
    """`start DIR [--port N]` prints the admin URL; `stop DIR` stops the cluster."""
    parser = argparse.ArgumentParser(prog="python -m core.testing.postgres")
    parser.add_argument("action", choices=["start", "stop"])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--port", type=int)
    parser.add_argument("--database", help="also create this database (if missing) and print its URL")
    args = parser.parse_args(argv)
    if args.action == "stop":
        stop_cluster(args.directory)
        return 0
    port_file = args.directory / "port"
    port = args.port or (int(port_file.read_text()) if port_file.exists() else None)
    try:
        cluster = start_cluster(args.directory, port)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    wait_ready(cluster)
    if not args.database:
        print(cluster.admin_url)
        return 0
    import psycopg

    with psycopg.connect(host="127.0.0.1", port=cluster.port, user=SERVER_USER, dbname="postgres") as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (args.database,)).fetchone()
    print(cluster.url(args.database) if exists else create_database(cluster, args.database))
    return 0


if __name__ == "__main__":
    sys.exit(main())
