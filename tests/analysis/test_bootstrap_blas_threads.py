"""The bootstrap's float64 products (readmodel.bootstrap: the picker's paired tests and weaknesses, `gauntlet decide`)
run on one BLAS thread, so their replicates are bit-identical whatever thread count the process started with: the
same script in a process with OPENBLAS_NUM_THREADS=1 and one with 2 prints the same bytes. The bare product of the
same matrices is printed too: where two threads round it differently, the comparison shows what the pin removes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from core.analysis.readmodel import bootstrap

REPO = Path(__file__).resolve().parents[2]

# each case: (rows, columns, share of missing cells); what the script prints per case: hashes of the bare product,
# bootstrap_means, bootstrap_means with counts from bootstrap_counts (the picker's stacked path)
CASES = {
    "paper scale, gaps": (983, 14, 0.1),
    "paper scale, full columns": (983, 8, 0.0),
    "small pair": (36, 4, 0.2),
}
SCRIPT = """
import hashlib, json, sys
import numpy as np
from core.analysis.readmodel import bootstrap

def digest(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()

out = {}
for name, (n, k, missing) in json.loads(sys.argv[1]).items():
    rng = np.random.default_rng(n * 31 + k)
    values = rng.random((n, k))
    values[rng.random(values.shape) < missing] = np.nan
    weights = bootstrap.bootstrap_weights(n, 2000, 0)
    bare = weights @ np.where(np.isnan(values), 0.0, values)
    counts = bootstrap.bootstrap_counts(~np.isnan(values), 2000, 0)
    out[name] = {"bare": digest(bare), "means": digest(bootstrap.bootstrap_means(values, 2000, 0)),
                 "stacked": digest(bootstrap.bootstrap_means(values, 2000, 0, counts=counts))}
print(json.dumps(out))
"""


def _run(threads: int) -> dict[str, dict[str, str]]:
    """SCRIPT's digests in a fresh process whose OpenBLAS starts with `threads` threads."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    done = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(CASES)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def digests() -> dict[int, dict[str, dict[str, str]]]:
    return {threads: _run(threads) for threads in (1, 2)}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("path", ["means", "stacked"])
def test_replicates_identical_whatever_the_start_threads(digests, case: str, path: str) -> None:
    assert digests[1][case][path] == digests[2][case][path]


@pytest.mark.parametrize("case", list(CASES))
def test_replicates_do_not_depend_on_the_summation_order(case: str) -> None:
    """What makes the figures the same on every machine: BLAS kernels (chosen by CPU) sum a product in different
    orders; the same resamples summed in another order (rows permuted in both factors) give the same replicates to
    1e-12. The float32 products before gave bounds ~1e-9 apart between two machines of this kind; they fail here."""
    n, k, missing = CASES[case]
    rng = np.random.default_rng(n * 31 + k)
    values = rng.random((n, k))
    values[rng.random(values.shape) < missing] = np.nan
    weights = bootstrap.bootstrap_weights(n, 2000, 0)
    order = rng.permutation(n)
    counts = bootstrap.bootstrap_counts(~np.isnan(values), 2000, 0)
    in_order = bootstrap.bootstrap_means(values, 2000, 0, weights=weights, counts=counts)
    reordered = bootstrap.bootstrap_means(values[order], 2000, 0, weights=np.ascontiguousarray(weights[:, order]),
                                          counts=counts)
    assert np.nanmax(np.abs(in_order - reordered)) <= 1e-12
