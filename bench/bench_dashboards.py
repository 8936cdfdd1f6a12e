"""Time every page of the app (ui.navigation.PAGES) with AppTest on a paper-scale synthetic results set against a bare
Streamlit page running the minimal SQL for the same content (bench/bare_pages.py): the first render with cold caches,
and a filter change on each page that has filters; wall and CPU seconds, medians, and the product / reference ratio.

    .venv/bin/python -m bench.make_synthetic_results var/bench.db      # once
    .venv/bin/python -m bench.bench_dashboards var/bench.db [--repeat 3] [--pages leaderboard,domains]

Target (issue 30): every page within 2x the bare reference in CPU time, first render and filter change (a page passes
when both median CPU ratios are <= 2; 'load' marks a page within in CPU but over in wall time, i.e. slowed by other
processes). Rounds are interleaved (page 1..N, product then reference, then again) so a burst of load on the shared
machine spreads over both. CPU is this process's CPU time (the script runs in a thread of it), so it stays comparable
on a loaded machine. The component-manifest scan AppTest does once per AppTest object is done once up front, as a
server does it once at start, so it is charged to neither side.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import streamlit as st
from streamlit.testing.v1 import AppTest

from bench import bare_pages

REPO = Path(__file__).resolve().parents[1]
RATIO_TARGET = 2.0  # product CPU time at most twice the bare reference's (issue 30)


def _select(kind: str, key: str, value: Callable[[object], object]) -> Callable[[AppTest], None]:
    """Set widget `key` (of `kind`, e.g. 'selectbox') to value(widget)."""
    def change(at: AppTest) -> None:
        widget = getattr(at, kind)(key=key)
        widget.set_value(value(widget))
    return change


def _real_models(widget) -> list[str]:
    return [m for m in widget.options if not m.startswith("baseline:")][:2]


def _subset(value: str) -> Callable[[AppTest], None]:
    return _select("selectbox", "results_subset", lambda _: value)


@dataclass(frozen=True)
class Change:
    """A filter change on a page: what it does and how."""

    label: str
    apply: Callable[[AppTest], None]


# page -> the filter change timed on it (pages without filters have none)
CHANGES: dict[str, Change] = {
    "browse_benchmark": Change("mode -> gap", _select("multiselect", "browse_modes", lambda _: ["gap"])),
    "leaderboard": Change("subset -> noisy", _subset("noisy")),
    "domains": Change("subset -> conflict", _subset("conflict")),
    "constraint_errors": Change("subset -> gap", _subset("gap")),
    "robustness": Change("domains -> first domain", _select("multiselect", "results_domains", lambda w: w.options[:1])),
    "model_pairs": Change("metric -> faithfulness", _select("selectbox", "mp_metric", lambda _: "faithfulness")),
    "compare_responses": Change("instance -> second", _select("selectbox", "cmp_instance", lambda w: w.options[1])),
    "data_quality": Change("subset -> conflict", _subset("conflict")),
    # the protocol the synthetic set holds (the first option is an empty protocol: the first render shows its notice)
    "protocol_views": Change("protocol -> enterprise_rag", _select("selectbox", "pv_protocol",
                                                                  lambda _: "enterprise_rag")),
    "pick_generator": Change("rejection floor -> 30%", _select("slider", "pk_floor_rejection", lambda _: 30)),
    "run_evaluation": Change("models -> two real models", _select("multiselect", "run_models", _real_models)),
}
ROLES = ("analyst", "admin")  # the first of these that may open a page opens it (admin opens every page)


@dataclass
class Timing:
    """Wall and CPU seconds of one page's first render and filter change in one round."""

    first: float
    first_cpu: float
    change: float | None
    change_cpu: float | None
    note: str = ""


def _timed_run(at: AppTest, page: str, what: str) -> tuple[float, float]:
    # A full collection is due whenever enough objects have piled up, over the whole heap this process holds after
    # many pages: it landed on whichever page crossed the threshold (run_evaluation's filter change went 0.047 s ->
    # 0.278 s CPU in a full run, 3.4x -> 15.6x). Collect before each timed run, untimed, on both sides, as pyperf does,
    # then freeze what survived (run() froze the process's heap once), so each collection only walks the objects made
    # since the last: a full walk of a pytest worker's heap cost about 0.7 s each, 98 s per smoke run.
    gc.collect()
    gc.freeze()
    wall, cpu = time.perf_counter(), time.process_time()
    at.run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if at.exception:
        raise RuntimeError(f"{page} ({what}): {at.exception}")
    return wall, cpu


VARIANTS = ("product", "bare", "verdict")  # the app page; bare_pages.script; bare_pages.verdict_script


def time_page(page: str, role: str, components, variant: str = "product") -> Timing:
    """First render with cold caches, then the page's filter change (if it has one); `variant`: which of VARIANTS."""
    from core.review.auth import Principal, now_utc
    from ui.auth import SESSION_KEY

    st.cache_data.clear()
    if variant == "bare":
        at = AppTest.from_string(bare_pages.script(page), default_timeout=120)
    elif variant == "verdict":
        at = AppTest.from_string(bare_pages.verdict_script(page), default_timeout=120)
    else:
        at = AppTest.from_file(str(REPO / "pages" / f"{page}.py"), default_timeout=120)
    at._bidi_component_manager = components  # scanned once, as the server does at start
    now = now_utc()
    at.session_state[SESSION_KEY] = Principal(username="bench", role=role, domains=(), login_at=now, last_seen=now)
    first, first_cpu = _timed_run(at, page, "first render")
    change = CHANGES.get(page)
    if change is None:
        return Timing(first, first_cpu, None, None, "no filters")
    try:
        change.apply(at)
    except (KeyError, IndexError) as exc:
        return Timing(first, first_cpu, None, None, f"filter not drawn ({exc!r}): no such data in this set")
    wall, cpu = _timed_run(at, page, change.label)
    return Timing(first, first_cpu, wall, cpu, change.label)


def _median(values: list[float]) -> float:
    return statistics.median(values)


@dataclass(frozen=True)
class Stage:
    """Median CPU seconds of one stage (first render or filter change) of one page: product and both references."""

    cpu: float
    bare: float
    verdict: float
    wall: float
    bare_wall: float

    @property
    def ratio(self) -> float:
        """Product / bare page, CPU."""
        return self.cpu / self.bare if self.bare > 0 else float("inf")

    @property
    def verdict_ratio(self) -> float:
        """Product / one GROUP BY over the verdict table, CPU."""
        return self.cpu / self.verdict if self.verdict > 0 else float("inf")

    @property
    def wall_ratio(self) -> float:
        return self.wall / self.bare_wall if self.bare_wall > 0 else float("inf")

    def cells(self) -> str:
        return (f"{self.cpu:>6.3f} {self.bare:>6.3f} {self.verdict:>6.3f} {self.ratio:>6.2f} "
                f"{self.verdict_ratio:>6.2f}")


def _stage(runs: dict[str, list[Timing]], first: bool) -> Stage | None:
    """The medians of a stage over the rounds, or None when the page has no filter change."""
    pick = (lambda r: (r.first, r.first_cpu)) if first else (lambda r: (r.change, r.change_cpu))
    picked = {v: [pick(r) for r in runs[v] if pick(r)[0] is not None] for v in VARIANTS}
    if not all(picked.values()):
        return None
    cpu = {v: _median([c for _, c in picked[v]]) for v in VARIANTS}
    return Stage(cpu["product"], cpu["bare"], cpu["verdict"], _median([w for w, _ in picked["product"]]),
                 _median([w for w, _ in picked["bare"]]))


@dataclass(frozen=True)
class PageResult:
    """One page's stages and verdict: 'pass' (CPU <= RATIO_TARGET x the bare page on both stages), 'load' (within in
    CPU, over in wall time only) or 'FAIL'."""

    page: str
    first: Stage | None
    change: Stage | None
    note: str

    @property
    def verdict(self) -> str:
        stages = [s for s in (self.first, self.change) if s is not None]
        if not all(s.ratio <= RATIO_TARGET for s in stages):
            return "FAIL"
        return "pass" if all(s.wall_ratio <= RATIO_TARGET for s in stages) else "load"


def summarise(runs: dict[str, dict[str, list[Timing]]]) -> list[PageResult]:
    """Per page (runs: page -> variant -> timings per round), the medians and verdict."""
    return [PageResult(page, _stage(by, True), _stage(by, False), by["product"][-1].note) for page, by in runs.items()]


def report(results: list[PageResult]) -> None:
    """Print product CPU, both references' CPU and both ratios per page and stage."""
    stage = f"{'cpu':>6} {'bare':>6} {'verd':>6} {'xbare':>6} {'xverd':>6}"
    head = f"{'page':<20} | first render: {stage} | filter change: {stage} | result"
    print(head)
    print("-" * len(head))
    blank = f"{'-':>6} {'-':>6} {'-':>6} {'-':>6} {'-':>6}"
    for r in results:
        print(f"{r.page:<20} | {'':14}{r.first.cells() if r.first else blank} | {'':15}"
              f"{r.change.cells() if r.change else blank} | {r.verdict:<4} {r.note}")


def _md(stage: Stage | None) -> str:
    if stage is None:
        return "– | – | –"
    return f"{stage.cpu:.3f} s | {stage.ratio:.1f}× | {stage.verdict_ratio:.1f}×"


def markdown(results: list[PageResult], footer: str) -> str:
    """The README table: per page, product CPU and its ratio to each reference, first render and filter change."""
    lines = ["| page | first render CPU | × bare page | × GROUP BY over verdicts | filter change CPU | × bare page "
             "| × GROUP BY over verdicts | ≤ 2× bare |", "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r.page} | {_md(r.first)} | {_md(r.change)} | {r.verdict} |" for r in results]
    return "\n".join([*lines, "", footer])


README_BEGIN = "<!-- bench_dashboards: begin (regenerated by bench/bench_dashboards.py --readme) -->"
README_END = "<!-- bench_dashboards: end -->"


def readme_block(results: list[PageResult], footer: str, command: str) -> str:
    """The README's dashboard section: the command that produced it, then its markdown table and footer."""
    return (f"Every page against both references, from `{command}` (its output, unedited; CPU time is the comparable "
            f"figure on a shared machine):\n\n{markdown(results, footer)}")


def write_readme(path: Path, block: str) -> None:
    """Replace the text between README_BEGIN and README_END in `path` with `block` (both markers must be there)."""
    text = path.read_text(encoding="utf-8")
    start, end = text.find(README_BEGIN), text.find(README_END)
    if start < 0 or end < start:
        raise ValueError(f"{path} has no '{README_BEGIN}' ... '{README_END}' section to regenerate")
    path.write_text(text[: start + len(README_BEGIN)] + "\n" + block + "\n" + text[end:], encoding="utf-8")


def prepare(db: Path) -> object:
    """Point the app at `db` (upgraded, as `make app` does before serving), warm the imports a running server has,
    and scan the component manifests once; returns the component manager every AppTest shares."""
    os.environ["GAUNTLET_DATABASE_URL"] = f"sqlite:///{db.resolve()}"
    os.environ["GAUNTLET_FIRST_START"] = "0"
    from streamlit.components.v2.component_manager import BidiComponentManager

    from core.store.db import upgrade

    logging.disable(logging.WARNING)  # AppTest's bare-mode warnings on every run
    upgrade(os.environ["GAUNTLET_DATABASE_URL"])
    import plotly.graph_objects  # noqa: F401 - warm imports, as a running server has them

    import ui.charts  # noqa: F401
    import ui.drilldown  # noqa: F401
    import ui.results_view  # noqa: F401

    components = BidiComponentManager()
    components.discover_and_register_components(start_file_watching=False)
    return components


def pages_to_time(wanted: set[str]) -> list[tuple[str, str]]:
    """(page, role) of every page of ui.navigation.PAGES (or the `wanted` ones), each opened by the first of ROLES
    allowed to open it."""
    from core.permissions import page_roles
    from ui.navigation import PAGES

    return [(Path(p.path).stem, next(r for r in ROLES if r in page_roles(p.path))) for p in PAGES
            if not wanted or Path(p.path).stem in wanted]


def run(db: Path, repeat: int, wanted: set[str] = frozenset()) -> list[PageResult]:
    """Time every page against both references on `db`, rounds interleaved (page by page: product, bare page,
    GROUP BY over verdicts)."""
    components = prepare(db)
    pages = pages_to_time(set(wanted))
    runs: dict[str, dict[str, list[Timing]]] = {page: {v: [] for v in VARIANTS} for page, _ in pages}
    gc.collect()
    gc.freeze()  # the heap so far (imports, and a test process's earlier tests) is walked once, not before every run
    try:
        for _ in range(repeat):
            for page, role in pages:
                for variant in VARIANTS:
                    runs[page][variant].append(time_page(page, role, components, variant))
    finally:
        gc.unfreeze()  # a test process goes on collecting as before
    return summarise(runs)


def _scale(db: Path) -> str:
    """The data behind the timings: models, instances, responses, verdicts."""
    import sqlalchemy as sa

    engine = sa.create_engine(f"sqlite:///{db.resolve()}")
    with engine.connect() as conn:
        counts = {t: conn.execute(sa.text(f"SELECT COUNT(*) FROM {t}")).scalar_one()
                  for t in ("model", "instance", "response", "verdict")}
    engine.dispose()
    return ", ".join(f"{n:,} {t}s" for t, n in counts.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", type=Path, nargs="?", help="results database (default: a paper-scale synthetic set "
                        "built once into var/bench-paper.db: 15 models and 2 baselines x 983 instances)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds over the pages; medians are reported")
    parser.add_argument("--pages", default="", help="comma-separated page names (default: every page)")
    parser.add_argument("--markdown", action="store_true", help="also print the README table")
    parser.add_argument("--readme", type=Path, nargs="?", const=REPO / "README.md", default=None,
                        help="rewrite the dashboard table of this README (default README.md) from this run's output")
    args = parser.parse_args()
    if args.db is None:
        args.db = Path("var/bench-paper.db")
        if not args.db.exists():
            from bench.make_synthetic_results import make_results

            args.db.parent.mkdir(exist_ok=True)
            make_results(f"sqlite:///{args.db.resolve()}", n_models=15)
    load_before = os.getloadavg()[0]
    results = run(args.db, args.repeat, {p for p in args.pages.split(",") if p})
    report(results)
    failures = sum(r.verdict == "FAIL" for r in results)
    footer = (f"CPU seconds, medians of {args.repeat} interleaved rounds on {_scale(args.db)}: cpu = product page; bare "
              f"= a bare Streamlit page running the minimal SQL (bench/bare_pages.py); verd = the page's filter widget "
              f"and one GROUP BY over the raw verdict table; xbare, xverd = product / reference. Target: xbare <= "
              f"{RATIO_TARGET} on both stages ('load' = within in CPU, over in wall time only); {failures} page(s) "
              f"over; load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after on {os.cpu_count()} "
              f"cores")
    print(footer)
    if args.markdown:
        print()
        print(markdown(results, footer))
    if args.readme is not None:
        command = " ".join(["bench/bench_dashboards.py", *sys.argv[1:]])
        write_readme(args.readme, readme_block(results, footer, command))
        print(f"wrote the table into {args.readme}")


if __name__ == "__main__":
    main()
