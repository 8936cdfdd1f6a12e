"""The navigation table: which page scripts exist, their titles, icons and sections. Who may open each page is
decided by the permission table in core (core.review.permissions.PAGE_ROLES)."""

from __future__ import annotations

from dataclasses import dataclass

from core.review.permissions import page_roles


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


PAGES: list[PageSpec] = [
    PageSpec("pages/browse_benchmark.py", "Browse benchmark", ":material/dataset:", "Benchmark", default=True),
    PageSpec("pages/leaderboard.py", "Leaderboard", ":material/leaderboard:", "Results"),
    PageSpec("pages/domains.py", "Domains", ":material/radar:", "Results"),
    PageSpec("pages/constraint_errors.py", "Constraint errors", ":material/rule:", "Results"),
    PageSpec("pages/robustness.py", "Robustness", ":material/shield:", "Results"),
    PageSpec("pages/rag_abilities.py", "RAG abilities", ":material/psychology:", "Results"),
    PageSpec("pages/domain_abilities.py", "Domain abilities", ":material/school:", "Results"),
    PageSpec("pages/model_pairs.py", "Model pairs", ":material/compare_arrows:", "Results"),
    PageSpec("pages/compare_responses.py", "Compare responses", ":material/view_column:", "Results"),
    PageSpec("pages/misleading_evidence.py", "Misleading evidence", ":material/report:", "Results"),
    PageSpec("pages/stress_tests.py", "Stress tests", ":material/storm:", "Results"),
    PageSpec("pages/data_quality.py", "Data quality", ":material/verified:", "Results"),
    PageSpec("pages/pick_generator.py", "Pick a generator", ":material/task_alt:", "Results"),
    PageSpec("pages/verify_instances.py", "Verify instances", ":material/fact_check:", "Expert review"),
    PageSpec("pages/label_responses.py", "Label responses", ":material/label:", "Expert review"),
    PageSpec("pages/judge_alignment.py", "Judge alignment", ":material/balance:", "Analysis"),
    PageSpec("pages/run_evaluation.py", "Run evaluation", ":material/play_circle:", "Administration"),
    PageSpec("pages/build_benchmark.py", "Build benchmark", ":material/construction:", "Administration"),
    PageSpec("pages/adjudicate.py", "Gold labels & adjudication", ":material/gavel:", "Administration"),
    PageSpec("pages/users.py", "Users", ":material/group:", "Administration"),
]


def pages_for(role: str) -> list[PageSpec]:
    """Pages a user with `role` may see, in table order."""
    return [p for p in PAGES if role in p.roles]


def sections_for(role: str) -> dict[str, list[PageSpec]]:
    """Pages for `role` grouped by navigation section, sections in first-seen order."""
    grouped: dict[str, list[PageSpec]] = {}
    for page in pages_for(role):
        grouped.setdefault(page.section, []).append(page)
    return grouped
