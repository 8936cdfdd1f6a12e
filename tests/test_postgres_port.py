"""`make app-postgres PG_PORT=N` starts the local cluster on port N, and a running cluster is never silently reused on
another port."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from core.testing.postgres import free_port, main, stop_cluster

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.parametrize(("variables", "expected"), [
    pytest.param(["PG_PORT=55432"], "start .pg --port 55432 --database gauntlet", id="pg-port"),
    pytest.param([], "start .pg --database gauntlet", id="default"),
])
def test_app_postgres_passes_pg_port_to_the_cluster(variables, expected):
    plan = subprocess.run(["make", "-n", "-C", str(ROOT), "app-postgres", *variables], capture_output=True,
                          text=True, check=True).stdout
    assert expected in " ".join(plan.split()), plan


@pytest.fixture
def cluster_dir():
    """A fresh directory the server user can reach (pytest's tmp_path is private to root when tests run as root)."""
    directory = Path(tempfile.mkdtemp(prefix="gauntlet-pg-port-"))
    yield directory
    stop_cluster(directory)
    shutil.rmtree(directory, ignore_errors=True)


def test_start_uses_the_port_asked_and_refuses_another_while_running(cluster_dir, capsys):
    port, other = free_port(), free_port()
    assert main(["start", str(cluster_dir), "--port", str(port)]) == 0
    assert f"127.0.0.1:{port}/" in capsys.readouterr().out
    assert main(["start", str(cluster_dir)]) == 0
    assert f"127.0.0.1:{port}/" in capsys.readouterr().out
    assert main(["start", str(cluster_dir), "--port", str(other)]) == 2
    assert f"already running on port {port}, not {other}" in capsys.readouterr().err
