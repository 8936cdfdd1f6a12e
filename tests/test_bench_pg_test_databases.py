"""Smoke test of bench/bench_pg_test_databases.py (not timed): one cycle of every variant on a throwaway cluster
prints its server CPU, wall and checkpoints, so a change to the fixtures' cluster or the migrations that breaks the
benchmark fails here."""

from __future__ import annotations

import re
import sys

from bench import bench_pg_test_databases


def test_one_cycle_of_every_variant_reports_its_costs(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["bench_pg_test_databases", "--cycles", "1"])
    bench_pg_test_databases.main()
    lines = capsys.readouterr().out.splitlines()
    for variant in bench_pg_test_databases.VARIANTS:
        row = next(line for line in lines if line.startswith(variant))
        costs = dict(re.findall(r"(server CPU ms|wall ms|checkpoints) (-?[\d.]+)", row))
        assert set(costs) == {"server CPU ms", "wall ms", "checkpoints"}, row
        assert float(costs["server CPU ms"]) > 0 and float(costs["wall ms"]) > 0, row
