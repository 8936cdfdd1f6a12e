"""ui.live.refresh_on_new_data: the full run reads the data version once (the fragment's inline first pass does not
read it again); each later pass of the fragment (its timer) reads it and reruns the page when it changed."""

from __future__ import annotations

import pytest

from ui import live


class FragmentDouble:
    """Stands in for st.fragment and st.rerun: runs the fragment inline once (as a full run does) and keeps it, so a
    test can run its timer passes."""

    def __init__(self) -> None:
        self.body = None
        self.reruns = 0

    def fragment(self, run_every=None):
        def wrap(fn):
            self.body = fn
            return fn
        return wrap

    def rerun(self, scope="app"):
        self.reruns += 1


@pytest.mark.parametrize(
    ("versions", "timer_passes", "reads", "reruns"),
    [
        pytest.param([], 0, 0, 0, id="full-run-reads-nothing-more"),
        pytest.param([("v1",)], 1, 1, 0, id="timer-pass-unchanged"),
        pytest.param([("v2",)], 1, 1, 1, id="timer-pass-new-data-reruns"),
        pytest.param([("v1",), ("v1",), ("v3",)], 3, 3, 1, id="three-passes-one-change"),
    ],
)
def test_version_read_once_per_full_run_and_once_per_timer_pass(monkeypatch, versions, timer_passes, reads, reruns):
    double = FragmentDouble()
    monkeypatch.setattr(live.st, "fragment", double.fragment)
    monkeypatch.setattr(live.st, "rerun", double.rerun)
    monkeypatch.setattr(live.st, "caption", lambda *a, **k: None)
    monkeypatch.setattr(live, "active_runs", lambda engine: [])
    monkeypatch.setattr(live, "engine", lambda: None)
    pending = list(versions)
    read = []

    def current() -> tuple:
        read.append(1)
        return pending.pop(0)

    live.refresh_on_new_data(("v1",), current)  # the full run: the fragment's inline pass
    assert read == [] and double.reruns == 0
    for _ in range(timer_passes):
        double.body()
    assert (len(read), double.reruns) == (reads, reruns)
