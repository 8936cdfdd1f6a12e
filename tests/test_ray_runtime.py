"""The shared Ray runtime's lifetime (tests/ray_runtime.py): after a test it is shut down exactly when the next test
is outside the xdist group "ray" or there is none, and it is then stopped whole (Ray, fake server, environment).
Checked with a stand-in for Ray, so no Ray starts here; the Ray tests themselves use the real one."""

from __future__ import annotations

import os

import pytest

from core.testing.fake_server import FakeLLMServer
from tests import ray_runtime


class Item:
    """A collected test as the hook sees it: its xdist_group markers."""

    def __init__(self, *groups: str) -> None:
        self.markers = [pytest.mark.xdist_group(g).mark for g in groups]

    def iter_markers(self, name: str):
        """Its markers named `name`."""
        return [m for m in self.markers if m.name == name]


class StandInRay:
    """Records shutdown() instead of stopping a Ray."""

    def __init__(self) -> None:
        self.shutdowns = 0

    def shutdown(self) -> None:
        """Count one shutdown."""
        self.shutdowns += 1


@pytest.mark.parametrize(("nextitem", "stops"), [
    (Item("ray"), False),
    (Item("browser:tests.test_x", "ray"), False),
    (Item(), True),
    (Item("paper-scale"), True),
    (None, True),
], ids=["next-in-group", "next-in-group-among-others", "next-ungrouped", "next-in-another-group", "last-test"])
def test_the_runtime_stops_after_the_last_test_of_its_group(monkeypatch, nextitem, stops):
    ray, patch = StandInRay(), pytest.MonkeyPatch()
    patch.setenv("GAUNTLET_RAY_RUNTIME_PROBE", "set")
    server = FakeLLMServer().start()
    monkeypatch.setattr(ray_runtime, "_RUNNING", [ray_runtime.RayRuntime(ray, server, patch)])  # type: ignore[arg-type]
    try:
        assert ray_runtime.stop_unless_next_in_group(nextitem) is stops
        assert (ray.shutdowns, len(ray_runtime._RUNNING)) == ((1, 0) if stops else (0, 1))
        assert ("GAUNTLET_RAY_RUNTIME_PROBE" in os.environ) is not stops  # the workers' environment undone with it
    finally:
        server.stop()
        patch.undo()


def test_nothing_to_stop_when_no_runtime_runs(monkeypatch):
    monkeypatch.setattr(ray_runtime, "_RUNNING", [])
    assert ray_runtime.stop_unless_next_in_group(None) is False
