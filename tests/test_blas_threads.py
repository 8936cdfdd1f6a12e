"""Test processes run numpy's OpenBLAS on one thread (tests/conftest.py): each xdist worker has a core of its own, and
OpenBLAS's default of one thread per core made a worker's second thread spin on the other worker's core (the picker's
bootstrap tests took 3.4x the CPU)."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import numpy as np


def _numpy_openblas() -> ctypes.CDLL:
    """The OpenBLAS library numpy's wheel bundles (already loaded by numpy: the same handle)."""
    libs = sorted((Path(np.__file__).parent.parent / "numpy.libs").glob("libscipy_openblas*.so"))
    assert len(libs) == 1, libs
    return ctypes.CDLL(str(libs[0]))


def test_numpys_openblas_runs_one_thread_in_a_test_process() -> None:
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    assert _numpy_openblas().scipy_openblas_get_num_threads64_() == 1
