"""The navigation table: which page scripts exist, their titles, icons and sections. The app's own pages are listed
here; each protocol's pages come from its declaration in the protocol registry (core.protocols), placed among the
results pages. Who may open each page is decided by the permission table in core (core.permissions)."""

from __future__ import annotations

from dataclasses import dataclass

from core.permissions import page_roles
from core.protocols import DEFAULT_PROTOCOL, PROTOCOLS


@dataclass(frozen=True)
class PageSpec:
    """One page of the app: its script, title, icon and navigation section; its roles come from core."""

    path: str
    title: str
    icon: str
    section: str
    default: bool = False

    @property
    def roles(self) -> frozenset[str]:
        return page_roles(self.path)


CORE_PAGES: list[PageSpec] = [
    PageSpec("pages/browse_benchmark.py", "Browse benchmark", ":material/dataset:", "Benchmark", default=True),
    PageSpec("pages/leaderboard.py", "Leaderboard", ":material/leaderboard:", "Results"),
    PageSpec("pages/compare_responses.py", "Compare responses", ":material/view_column:", "Results"),
    PageSpec("pages/protocol_views.py", "Protocol views", ":material/view_list:", "Results"),
    PageSpec("pages/pick_generator.py", "Pick a generator", ":material/task_alt:", "Results"),
    PageSpec("pages/verify_instances.py", "Verify instances", ":material/fact_check:", "Expert review"),
    PageSpec("pages/label_responses.py", "Label responses", ":material/label:", "Expert review"),
    PageSpec("pages/judge_alignment.py", "Judge alignment", ":material/balance:", "Analysis"),
    PageSpec("pages/run_evaluation.py", "Run evaluation", ":material/play_circle:", "Administration"),
    PageSpec("pages/build_benchmark.py", "Build benchmark", ":material/construction:", "Administration"),
    PageSpec("pages/adjudicate.py", "Gold labels & adjudication", ":material/gavel:", "Administration"),
    PageSpec("pages/users.py", "Users", ":material/group:", "Administration"),
]


PROTOCOL_PAGES_AFTER = "pages/leaderboard.py"  # the protocols' pages follow this one


def protocol_pages() -> list[PageSpec]:
    """The pages every registered protocol declares, in the Results section: the default protocol's in its declared
    order, then the others' by title."""
    own = list(PROTOCOLS.get(DEFAULT_PROTOCOL).declared_pages()) if DEFAULT_PROTOCOL in PROTOCOLS else []
    others = [page for name, p in PROTOCOLS.items() if name != DEFAULT_PROTOCOL for page in p.declared_pages()]
    return [PageSpec(d.path, d.title, d.icon, "Results") for d in [*own, *sorted(others, key=lambda d: d.title)]]


def all_pages() -> list[PageSpec]:
    """The app's pages with the protocols' pages (including packages registered since import) in their place."""
    cut = next(i for i, p in enumerate(CORE_PAGES) if p.path == PROTOCOL_PAGES_AFTER) + 1
    return [*CORE_PAGES[:cut], *protocol_pages(), *CORE_PAGES[cut:]]


PAGES: list[PageSpec] = all_pages()


def pages_for(role: str) -> list[PageSpec]:
    """Pages a user with `role` may see, in table order."""
    return [p for p in all_pages() if role in p.roles]


def sections_for(role: str) -> dict[str, list[PageSpec]]:
    """Pages for `role` grouped by navigation section, sections in first-seen order."""
    grouped: dict[str, list[PageSpec]] = {}
    for page in pages_for(role):
        grouped.setdefault(page.section, []).append(page)
    return grouped
