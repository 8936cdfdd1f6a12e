"""build_benchmark end to end (offline), determinism, mode planning, and the bundled generated sample."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from conftest import REPO

from core.construction.build import build_benchmark, plan_modes
from core.scoring.checkers import kwargs_errors
from core.store.schema import InstanceSpec

GENERATED = REPO / "data/sample/enterprise_rag_built.jsonl"


def build_small(tmp_path, seed: int, name: str):
    out = tmp_path / f"{name}.jsonl"
    report = build_benchmark(REPO / "data/queries", REPO / "data/corpus", REPO / "data/libraries", out, seed,
                             embedder=None, index_dir=tmp_path / "index", domains=["legal", "web_search"],
                             max_queries_per_domain=8)
    return report, out


def assert_valid_lines(path):
    rows = [InstanceSpec.model_validate_json(line) for line in path.read_text().splitlines()]
    errors = [(i.id, c.id, e) for i in rows for c in i.constraints if c.checker_id
              for e in kwargs_errors(c.checker_id, c.checker_kwargs)]
    assert errors == []
    return rows


def test_offline_build_end_to_end_and_deterministic(tmp_path):
    report, out = build_small(tmp_path, 11, "a")
    _, again = build_small(tmp_path, 11, "b")
    _, other = build_small(tmp_path, 12, "c")
    rows = assert_valid_lines(out)
    assert report.instances == len(rows) > 0 and report.skipped == []
    assert set(report.by_domain) == {"Legal", "Web Search"}
    assert set(report.by_mode) == {"noisy", "gap", "conflict"}
    assert out.read_bytes() == again.read_bytes()
    assert out.read_bytes() != other.read_bytes()
    for row in rows:
        roles = Counter(d.role for d in row.documents)
        assert (row.mode == "gap") == (roles["supporting"] == 0)
        assert (row.mode == "conflict") == (roles["conflicting"] == 1)


@pytest.mark.parametrize(
    "name, n_answerable, n_unanswerable, expected",
    [
        ("paper ratios", 72, 72, {"noisy": 72, "gap": 37, "conflict": 50}),
        ("few unanswerable", 20, 2, {"noisy": 20, "gap": 10, "conflict": 14}),
        ("only unanswerable", 0, 5, {"gap": 5}),
    ],
)
def test_plan_modes_follows_ratios(name, n_answerable, n_unanswerable, expected):
    queries = [{"query_id": f"a{i}", "domain": "d", "answerable": True, "supporting_doc_ids": ["x"]}
               for i in range(n_answerable)]
    queries += [{"query_id": f"u{i}", "domain": "d", "answerable": False, "supporting_doc_ids": []}
                for i in range(n_unanswerable)]
    plan = plan_modes(queries, random.Random(0))
    assert dict(Counter(mode for _, mode in plan)) == expected
    assert all(q["answerable"] for q, mode in plan if mode != "gap")


def test_generated_sample_meets_targets():
    rows = assert_valid_lines(GENERATED)
    modes = Counter(r.mode for r in rows)
    assert len(rows) >= 120
    assert {(r.domain, r.mode) for r in rows} == {(d, m) for d in {r.domain for r in rows} for m in modes}
    assert len({r.domain for r in rows}) == 6
    shares = {m: modes[m] / len(rows) for m in modes}
    assert shares == pytest.approx({"noisy": 0.455, "gap": 0.231, "conflict": 0.314}, abs=0.04)
    assert 7 <= sum(len(r.constraints) for r in rows) / len(rows) <= 9
    assert len({r.id for r in rows}) == len(rows)
    assert Counter(r.origin for r in rows if r.mode == "conflict")["augmented"] > 0
