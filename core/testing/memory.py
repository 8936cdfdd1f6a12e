"""This process's own peak resident memory, for benchmarks and the tests that run them.

`getrusage(RUSAGE_SELF).ru_maxrss` is the wrong figure for a process started by another: at exec, Linux keeps the
old address space's high-water mark in the process's rusage, and Python's subprocess starts children with vfork, whose
old address space is the parent's. A benchmark run by a pytest-xdist worker then reports the worker's peak (every
test it ran before) whenever that is the larger. The kernel's VmHWM belongs to the address space the process got at
exec, so it counts this process's own pages only.
"""

from __future__ import annotations

import resource
from pathlib import Path

STATUS = Path("/proc/self/status")


def peak_rss_mb() -> float:
    """This process's own peak resident set so far, MB: VmHWM where /proc has it, else ru_maxrss."""
    if STATUS.exists():
        line = next(x for x in STATUS.read_text().splitlines() if x.startswith("VmHWM:"))
        return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
