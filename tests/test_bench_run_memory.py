"""Smoke test of bench/bench_run_memory.py (not timed, no memory target): a run of a few items per size in a child
process against the fake server completes every item and reports its peaks, so a change that breaks the benchmark
fails here."""

from __future__ import annotations

import pytest

from bench import bench_run_memory


@pytest.mark.parametrize(("peaks", "expected"), [
    pytest.param({200: 10.0, 3200: 10.0}, 0.0, id="flat"),
    pytest.param({200: 1.0, 800: 5.0, 3200: 31.0}, 30 * 1024 / 3000, id="smallest-to-largest"),
])
def test_growth_per_item(peaks, expected):
    assert bench_run_memory.growth(peaks) == pytest.approx(expected)


def test_small_runs_complete_and_report_their_peaks():
    peaks = bench_run_memory.run([3, 9], {"after": bench_run_memory.REPO}, concurrency=2)
    for measure in ("traced_mb", "rss_mb"):
        assert set(peaks["after"][measure]) == {3, 9}
        assert all(value >= 0 for value in peaks["after"][measure].values())
