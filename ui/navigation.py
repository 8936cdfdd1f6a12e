"""The page table: which page scripts exist, their titles, sections and the roles that may open them."""

from __future__ import annotations

from dataclasses import dataclass

ALL_ROLES: frozenset[str] = frozenset({"admin", "expert", "analyst", "viewer"})
EXPERT_ROLES: frozenset[str] = frozenset({"admin", "expert"})
ADMIN_ONLY: frozenset[str] = frozenset({"admin"})
RESULTS_ROLES: frozenset[str] = frozenset({"admin", "analyst", "viewer"})


@dataclass(frozen=True)
class PageSpec:
    """One page of the app: its script, title, icon, navigation section and allowed roles."""

    path: str
    title: str
    icon: str
    section: str
    roles: frozenset[str] = ALL_ROLES
    default: bool = False


PAGES: list[PageSpec] = [
    PageSpec("pages/browse_benchmark.py", "Browse benchmark", ":material/dataset:", "Benchmark", default=True),
    PageSpec("pages/leaderboard.py", "Leaderboard", ":material/leaderboard:", "Results", RESULTS_ROLES),
    PageSpec("pages/domains.py", "Domains", ":material/radar:", "Results", RESULTS_ROLES),
    PageSpec("pages/constraint_errors.py", "Constraint errors", ":material/rule:", "Results", RESULTS_ROLES),
    PageSpec("pages/robustness.py", "Robustness", ":material/shield:", "Results", RESULTS_ROLES),
    PageSpec("pages/model_pairs.py", "Model pairs", ":material/compare_arrows:", "Results", RESULTS_ROLES),
    PageSpec("pages/data_quality.py", "Data quality", ":material/verified:", "Results", RESULTS_ROLES),
    PageSpec("pages/pick_generator.py", "Pick a generator", ":material/task_alt:", "Results", RESULTS_ROLES),
    PageSpec("pages/verify_instances.py", "Verify instances", ":material/fact_check:", "Expert review", EXPERT_ROLES),
    PageSpec("pages/label_responses.py", "Label responses", ":material/label:", "Expert review", EXPERT_ROLES),
    PageSpec("pages/judge_alignment.py", "Judge alignment", ":material/balance:", "Analysis", frozenset({"admin", "analyst"})),
    PageSpec("pages/run_evaluation.py", "Run evaluation", ":material/play_circle:", "Administration", ADMIN_ONLY),
    PageSpec("pages/build_benchmark.py", "Build benchmark", ":material/construction:", "Administration", ADMIN_ONLY),
    PageSpec("pages/adjudicate.py", "Gold labels & adjudication", ":material/gavel:", "Administration", ADMIN_ONLY),
    PageSpec("pages/users.py", "Users", ":material/group:", "Administration", ADMIN_ONLY),
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


def roles_for(script: str) -> frozenset[str]:
    """Roles allowed on the page whose script file is `script` (a path or __file__); empty if it is not listed."""
    name = script.replace("\\", "/").rsplit("/", 1)[-1]
    for page in PAGES:
        if page.path.rsplit("/", 1)[-1] == name:
            return page.roles
    return frozenset()
