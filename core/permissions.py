"""Who may do what: the one table of the pages each role may open and of the write actions each role may perform.

The app's navigation and page guards read PAGE_ROLES; every write function in core re-checks its action through
`require` (via `core.review.auth.authorize`, which also refreshes the role from the database).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, TypeVar

ROLES: tuple[str, ...] = ("admin", "expert", "analyst", "viewer")
EVERYONE: frozenset[str] = frozenset(ROLES)
ADMINS: frozenset[str] = frozenset({"admin"})
REVIEWERS: frozenset[str] = frozenset({"admin", "expert"})
RESULTS_READERS: frozenset[str] = frozenset({"admin", "analyst", "viewer"})
ANALYSTS: frozenset[str] = frozenset({"admin", "analyst"})

# Who may open a protocol's page, by the audience its declaration names (core.protocols.base.ProtocolPage).
AUDIENCES: dict[str, frozenset[str]] = {"everyone": EVERYONE, "results": RESULTS_READERS, "reviewers": REVIEWERS,
                                        "analysts": ANALYSTS, "admins": ADMINS}

# The app's own pages; each protocol's pages join when the protocol registers (add_page, from core.protocols).
PAGE_ROLES: dict[str, frozenset[str]] = {
    "pages/browse_benchmark.py": EVERYONE,
    "pages/leaderboard.py": RESULTS_READERS,
    "pages/compare_responses.py": RESULTS_READERS,
    "pages/protocol_views.py": RESULTS_READERS,
    "pages/pick_generator.py": RESULTS_READERS,
    "pages/verify_instances.py": REVIEWERS,
    "pages/label_responses.py": REVIEWERS,
    "pages/judge_alignment.py": ANALYSTS,
    "pages/run_evaluation.py": ADMINS,
    "pages/build_benchmark.py": ADMINS,
    "pages/adjudicate.py": ADMINS,
    "pages/users.py": ADMINS,
}


def add_page(path: str, audience: str) -> None:
    """Add a protocol's page to the permission table; a page listed already or an unknown audience raises."""
    if path in PAGE_ROLES:
        raise ValueError(f"page {path!r} is in the permission table already")
    if audience not in AUDIENCES:
        raise ValueError(f"unknown page audience {audience!r}; known: {', '.join(AUDIENCES)}")
    PAGE_ROLES[path] = AUDIENCES[audience]


def remove_page(path: str) -> None:
    """Take a protocol's page out of the permission table again."""
    del PAGE_ROLES[path]


@dataclass(frozen=True)
class Action:
    """A write action: the roles allowed to perform it and how a refusal names it ("may not <what>")."""

    roles: frozenset[str]
    what: str


ACTIONS: dict[str, Action] = {
    "verify_instance": Action(REVIEWERS, "verify benchmark instances"),
    "review_all_domains": Action(ADMINS, "review instances outside their assigned domains"),
    "label_response": Action(REVIEWERS, "label responses"),
    "adjudicate": Action(ADMINS, "adjudicate disagreements"),
    "draw_gold_sample": Action(ADMINS, "draw a gold-label sample"),
    "set_sample_blinding": Action(ADMINS, "turn blind labelling on or off for a sample"),
    "export_labels": Action(ADMINS, "export labels"),
    "import_labels": Action(ADMINS, "import labels"),
    "register_models": Action(ADMINS, "register models"),
    "launch_run": Action(ADMINS, "launch an evaluation run"),
    "cancel_run": Action(ADMINS, "cancel an evaluation run"),
    "hide_run": Action(ADMINS, "hide or show an evaluation run"),
    "delete_run": Action(ADMINS, "delete an evaluation run"),
    "manage_users": Action(ADMINS, "manage user accounts"),
    "build_benchmark": Action(ADMINS, "build a benchmark"),
    "import_benchmark": Action(ADMINS, "import benchmark instances"),
}


class NotPermitted(PermissionError):
    """The user's role does not allow this action; the message is safe to show."""


class HasRole(Protocol):
    @property
    def role(self) -> str: ...


P = TypeVar("P", bound=HasRole)


def allowed(role: str, action: str) -> bool:
    """Whether `role` may perform the write `action` (a key of ACTIONS)."""
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}; known: {', '.join(ACTIONS)}")
    return role in ACTIONS[action].roles


def require(principal: P | None, action: str) -> P:
    """The principal when their role may perform `action`; NotPermitted with a readable reason otherwise."""
    if principal is None:
        raise NotPermitted("Sign in first.")
    if not allowed(principal.role, action):
        rule = ACTIONS[action]
        raise NotPermitted(f"Your role ({principal.role}) may not {rule.what}; allowed: {', '.join(sorted(rule.roles))}.")
    return principal


def page_roles(script: str) -> frozenset[str]:
    """Roles that may open the page whose script is `script` (a path or __file__); empty if it is not listed."""
    name = script.replace("\\", "/").rsplit("/", 1)[-1]
    return next((roles for path, roles in PAGE_ROLES.items() if path.rsplit("/", 1)[-1] == name), frozenset())


def may_open(role: str, script: str) -> bool:
    """Whether `role` may open the page `script`."""
    return role in page_roles(script)
