"""The page table and the pages agree: every page is listed, guarded, shown only to its roles, and refuses others."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.permissions import PAGE_ROLES, may_open, page_roles
from tests.pages.signin import sign_in
from ui.navigation import PAGES, pages_for

REPO = Path(__file__).resolve().parents[2]
PAGE_SCRIPTS = sorted(p for p in (REPO / "pages").glob("*.py") if p.name != "login.py")
GUARDS = {"require_page", "require_role"}


def guard_comes_first(path: Path) -> bool:
    """True when a guard call happens in a top-level statement before any top-level `st.` call."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)):
            continue
        calls = [c.func for c in ast.walk(node) if isinstance(c, ast.Call)]
        names = {f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "") for f in calls}
        if names & GUARDS:
            return True
        if any(isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "st" for f in calls):
            return False
    return False


@pytest.mark.parametrize("script", PAGE_SCRIPTS, ids=lambda p: p.stem)
def test_every_page_is_listed_with_roles(script: Path) -> None:
    assert page_roles(str(script)), f"{script.name} is not in ui.navigation.PAGES"


@pytest.mark.parametrize("script", PAGE_SCRIPTS, ids=lambda p: p.stem)
def test_every_page_guards_before_rendering(script: Path) -> None:
    assert guard_comes_first(script), f"{script.name} must call require_page/require_role before rendering"


def test_every_listed_page_exists() -> None:
    assert all((REPO / p.path).is_file() for p in PAGES)


@pytest.mark.parametrize(
    ("role", "must_have", "must_not_have"),
    [
        pytest.param("admin", {"Run evaluation", "Users", "Leaderboard", "Verify instances"}, set(), id="admin-everything"),
        pytest.param("expert", {"Verify instances", "Label responses"}, {"Run evaluation", "Users", "Leaderboard"}, id="expert-queues"),
        pytest.param("analyst", {"Leaderboard", "Judge alignment"}, {"Run evaluation", "Verify instances"}, id="analyst-dashboards"),
        pytest.param("viewer", {"Browse benchmark"}, {"Users", "Label responses", "Judge alignment"}, id="viewer-read-only"),
    ],
)
def test_page_list_depends_on_role(role: str, must_have: set[str], must_not_have: set[str]) -> None:
    titles = {p.title for p in pages_for(role)}
    assert must_have <= titles and not (must_not_have & titles)


ALL = {"admin", "expert", "analyst", "viewer"}
RESULTS = {"admin", "analyst", "viewer"}
EXPECTED_PAGE_ROLES = {
    "browse_benchmark": ALL,
    **{page: RESULTS for page in ("leaderboard", "domains", "constraint_errors", "robustness", "model_pairs",
                                  "data_quality", "pick_generator")},
    "rag_abilities": RESULTS,
    "domain_abilities": RESULTS,
    "misleading_evidence": RESULTS,
    "compare_responses": RESULTS,
    "stress_tests": RESULTS,
    "protocol_views": RESULTS,
    "verify_instances": {"admin", "expert"},
    "label_responses": {"admin", "expert"},
    "judge_alignment": {"admin", "analyst"},
    **{page: {"admin"} for page in ("run_evaluation", "build_benchmark", "adjudicate", "users")},
}
ROLE_PAGE_CASES = [pytest.param(role, page, id=f"{role}-{page}") for page in EXPECTED_PAGE_ROLES for role in sorted(ALL)]


def test_navigation_and_permission_tables_list_the_same_pages() -> None:
    assert sorted(p.path for p in PAGES) == sorted(PAGE_ROLES)
    assert {Path(p).stem for p in PAGE_ROLES} == set(EXPECTED_PAGE_ROLES)


@pytest.mark.parametrize(("role", "page"), ROLE_PAGE_CASES)
def test_role_page_matrix(role: str, page: str) -> None:
    allowed = role in EXPECTED_PAGE_ROLES[page]
    assert may_open(role, f"pages/{page}.py") is allowed
    assert (page in {Path(p.path).stem for p in pages_for(role)}) is allowed


REFUSED_CASES = [pytest.param(role, page, id=f"{role}-{page}") for page, roles in EXPECTED_PAGE_ROLES.items()
                 for role in sorted(ALL - roles)]


@pytest.mark.parametrize(("role", "page"), REFUSED_CASES)
def test_page_refuses_roles_outside_the_table(db_url, role: str, page: str) -> None:
    at = sign_in(AppTest.from_file(str(REPO / "pages" / f"{page}.py"), default_timeout=60), role).run()
    assert not at.exception, at.exception
    assert [e.value for e in at.error] == [f"Your role ({role}) may not open this page."]
    assert not at.title and not at.dataframe and not at.button
