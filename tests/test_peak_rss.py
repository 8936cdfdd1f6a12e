"""core.testing.memory.peak_rss_mb counts a process's own pages only: started by a parent whose peak was 400 MB
(as a pytest-xdist worker's is after heavier tests), a small child reports its own few MB by VmHWM, while its
ru_maxrss carries the parent's 400 MB (the cause of the dense bench smoke test's 2,103.9 MB > 2,048 MB in CI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BALLAST_MB = 400
CHILD = ("import json, resource; from core.testing.memory import peak_rss_mb; "
         "print(json.dumps({'vmhwm': peak_rss_mb(), 'ru_maxrss': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss"
         " / 1024}))")
PARENT = f"""
import subprocess, sys
ballast = bytearray({BALLAST_MB} * 2**20)
for i in range(0, len(ballast), 4096):
    ballast[i] = 1
del ballast
print(subprocess.run([sys.executable, "-c", {CHILD!r}], capture_output=True, text=True, check=True).stdout)
"""


@pytest.fixture(scope="module")
def child_figures() -> dict[str, float]:
    """The child's two peak figures, MB, run from a parent that touched BALLAST_MB and freed it."""
    done = subprocess.run([sys.executable, "-c", PARENT], cwd=REPO, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, check=True)
    return json.loads(done.stdout)


@pytest.mark.parametrize(("figure", "inherits_parent_peak"), [
    pytest.param("vmhwm", False, id="peak_rss_mb-counts-own-pages"),
    pytest.param("ru_maxrss", True, id="ru_maxrss-carries-parent-peak"),
])
def test_child_peak(child_figures: dict[str, float], figure: str, inherits_parent_peak: bool) -> None:
    assert (child_figures[figure] >= BALLAST_MB) is inherits_parent_peak, child_figures
    assert child_figures[figure] > 0
