"""One local Ray runtime (2 CPUs, no dashboard, usage statistics off, loopback only) and the loopback fake server its
workers call, shared by the tests that ask for the `ray_runtime` fixture (tests/conftest.py).

Starting Ray (GCS, raylet, two workers importing the product) is the dearest part of a Ray test, so the runtime is
started once for a run of consecutive tests of the xdist group "ray" (every test asking for the fixture is put in
it, so `--dist loadgroup` runs them on one worker, one after the other) and shut down as soon as the next test is
outside that group, or at the end of the session. A test that killed a worker leaves Ray running (Ray replaces the
worker); a test that needs a fresh Ray, or kills the driver or the raylet, must not ask for this fixture.

The workers inherit the driver's environment when Ray starts: the fake server's endpoint and a planted key, so it
starts before Ray, with the script every Ray test relies on (SCRIPT)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType

import pytest

from core.testing.fake_server import FakeLLMServer, ScriptRule
from tests.providers.conftest import PLANTED_KEY

GROUP = "ray"  # the xdist group of every test that uses the runtime
PAUSE_MARKS = ("PAUSE-ONE", "PAUSE-TWO", "PAUSE-THREE")  # one per test: prompts answered first with a 429
PAUSE_S = 3.0  # the 429's Retry-After: the worker that got it sleeps with nothing in flight
SCRIPT = [ScriptRule(match=mark, fault="429", retry_after=PAUSE_S, times=1) for mark in PAUSE_MARKS]


@dataclass
class RayRuntime:
    """A running local Ray and the fake server (SCRIPT, 2 ms latency) its workers call."""

    ray: ModuleType
    server: FakeLLMServer
    patch: pytest.MonkeyPatch


_RUNNING: list[RayRuntime] = []


def descendants_cpu_s() -> float:
    """User + system CPU seconds of this process's live descendants and the children they reaped (from /proc)."""
    stats = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        stats[int(entry)] = (int(fields[1]), sum(int(v) for v in fields[11:15]))  # ppid; utime stime cutime cstime
    mine, grew = {os.getpid()}, True
    while grew:
        grown = mine | {pid for pid, (ppid, _) in stats.items() if ppid in mine}
        grew, mine = grown != mine, grown
    return sum(stats[pid][1] for pid in mine - {os.getpid()}) / os.sysconf("SC_CLK_TCK")


def start(secrets_dir) -> RayRuntime:
    """The running runtime, started now if none is (its start-up time printed)."""
    if _RUNNING:
        return _RUNNING[0]
    from core.generation import ray_executor

    patch, server = pytest.MonkeyPatch(), FakeLLMServer(SCRIPT, latency_ms=2).start()
    patch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    patch.setenv("OPENAI_BASE_URL", server.base_url + "/v1")
    patch.setenv("OPENAI_API_KEY", PLANTED_KEY)
    patch.setenv("GAUNTLET_SECRETS_FILE", str(secrets_dir / "none.toml"))
    started = time.perf_counter()
    try:
        ray = ray_executor.connect(None, num_cpus=2)
    except BaseException:
        server.stop()
        patch.undo()
        raise
    print(f"\nFIGURE ray start-up {time.perf_counter() - started:.2f} s")
    _RUNNING.append(RayRuntime(ray, server, patch))
    assert {node["NodeManagerAddress"] for node in ray.nodes()} == {"127.0.0.1"}, "Ray's node is not on loopback"
    return _RUNNING[0]


def stop() -> None:
    """Shut the running runtime down (nothing when none runs); prints the CPU its processes used."""
    if not _RUNNING:
        return
    runtime = _RUNNING.pop()
    print(f"\nFIGURE CPU of Ray's processes (GCS, raylet, workers, incl. reaped children): {descendants_cpu_s():.1f} s")
    try:
        runtime.ray.shutdown()
    finally:
        runtime.server.stop()
        runtime.patch.undo()


@contextmanager
def running(secrets_dir) -> Iterator[FakeLLMServer]:
    """The runtime for the span of a with-block (bench/bench_ray_executor.py): its fake server."""
    try:
        yield start(secrets_dir).server
    finally:
        stop()


def in_group(item) -> bool:
    """True when a collected test is in the runtime's xdist group."""
    return any((m.args[0] if m.args else m.kwargs.get("name")) == GROUP for m in item.iter_markers("xdist_group"))


def stop_unless_next_in_group(nextitem) -> bool:
    """After a test: shut the runtime down unless the next test (None: none) is in its group; whether it stopped one."""
    if not _RUNNING or (nextitem is not None and in_group(nextitem)):
        return False
    stop()
    return True
