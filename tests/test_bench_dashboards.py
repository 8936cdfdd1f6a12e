"""Smoke test of bench/bench_dashboards.py (not timed): on a small synthetic results set, every page of the app, its
bare reference page (bench/bare_pages.py) and its one-GROUP-BY-over-verdicts reference render without an exception,
first render and filter change, so a schema change that breaks the benchmark fails here."""

from __future__ import annotations

import logging
import math
import re

import pytest

from bench import bare_pages, bench_dashboards
from bench.make_synthetic_results import make_results


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    db = tmp_path_factory.mktemp("bench") / "small.db"
    make_results(f"sqlite:///{db}", n_models=2, n_instances=40, seed=3)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GAUNTLET_DATABASE_URL", f"sqlite:///{db}")  # restored after: prepare() points the app at db
        patch.setenv("GAUNTLET_FIRST_START", "0")
        try:
            yield {r.page: r for r in bench_dashboards.run(db, repeat=1)}
        finally:
            logging.disable(logging.NOTSET)


@pytest.mark.parametrize("page", sorted(p for p, body in bare_pages.BODIES.items() if "i.protocol IN" in body))
def test_protocol_references_read_a_registered_protocol(page):
    """A reference that names no registered protocol reads nothing whatever the data (misleading_evidence read
    'rag_stress' and stress_tests 'ragstress' before issue 42)."""
    from core.protocols import PROTOCOLS

    named = [n.strip(" '") for group in re.findall(r"i\.protocol IN \(([^)]*)\)", bare_pages.BODIES[page])
             for n in group.split(",")]
    assert named and set(named) <= set(PROTOCOLS.names()), named


def test_every_page_has_both_references():
    pages = {page for page, _ in bench_dashboards.pages_to_time(set())}
    assert pages - set(bare_pages.BODIES) == set()
    assert set(bench_dashboards.CHANGES) <= pages


def test_every_page_renders_with_both_references(results):
    assert set(results) == {page for page, _ in bench_dashboards.pages_to_time(set())}
    for page, result in results.items():
        assert result.first is not None, page
        assert all(math.isfinite(x) and x >= 0 for x in (result.first.cpu, result.first.bare, result.first.verdict))


@pytest.mark.parametrize("page", sorted(bench_dashboards.CHANGES))
def test_filter_change_applies_on_all_three(results, page):
    result = results[page]
    assert result.change is not None, f"{page}: {result.note}"
    assert result.note == bench_dashboards.CHANGES[page].label


def test_markdown_table_has_a_row_per_page(results):
    table = bench_dashboards.markdown(list(results.values()), "footer")
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| page")]
    assert [row.split(" | ")[0].strip("| ") for row in rows] == list(results)


@pytest.mark.parametrize(("text", "ok"), [
    pytest.param(f"head\n{bench_dashboards.README_BEGIN}\nold table\n{bench_dashboards.README_END}\ntail\n", True,
                 id="markers"),
    pytest.param("head\nold table\ntail\n", False, id="no-markers"),
])
def test_readme_table_is_regenerated_between_its_markers(tmp_path, text: str, ok: bool):
    readme = tmp_path / "README.md"
    readme.write_text(text, encoding="utf-8")
    if not ok:
        with pytest.raises(ValueError, match="no"):
            bench_dashboards.write_readme(readme, "new table")
        return
    bench_dashboards.write_readme(readme, "new table")
    assert readme.read_text(encoding="utf-8") == (f"head\n{bench_dashboards.README_BEGIN}\nnew table\n"
                                                  f"{bench_dashboards.README_END}\ntail\n")


def test_the_readme_carries_the_regenerated_section():
    text = (bench_dashboards.REPO / "README.md").read_text(encoding="utf-8")
    assert text.count(bench_dashboards.README_BEGIN) == 1 and text.count(bench_dashboards.README_END) == 1
