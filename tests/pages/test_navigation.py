"""The page table and the pages agree: every page is listed, guarded, and shown only to its roles."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ui.navigation import PAGES, pages_for, roles_for

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
    assert roles_for(str(script)), f"{script.name} is not in ui.navigation.PAGES"


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
