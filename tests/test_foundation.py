"""Package-wide guarantees: core is UI-free, migrations match the models, the schema file is current, SQLite pragmas."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import text
from sqlmodel import SQLModel

import core.store.models  # noqa: F401
from core.commands.data import SCHEMA_FILE, instance_json_schema
from core.registry import Registry, UnknownNameError

CORE = Path(__file__).resolve().parents[1] / "core"


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", sorted(CORE.rglob("*.py")), ids=lambda p: str(p.relative_to(CORE)))
def test_core_never_imports_streamlit(path: Path) -> None:
    assert not any(m == "streamlit" or m.startswith("streamlit.") for m in imported_modules(path))


def test_migrations_match_the_models(engine) -> None:
    with engine.connect() as connection:
        diff = compare_metadata(MigrationContext.configure(connection), SQLModel.metadata)
    assert diff == [], f"models and migrations disagree; add an Alembic revision: {diff}"


@pytest.mark.sqlite_only
def test_sqlite_runs_with_wal_and_busy_timeout(engine) -> None:
    with engine.connect() as connection:
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert connection.execute(text("PRAGMA busy_timeout")).scalar() >= 5000


def test_json_schema_file_is_current() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == instance_json_schema(), "run: gauntlet schema"


REGISTRY_CASES = [
    pytest.param("duplicate", id="duplicate-name-raises"),
    pytest.param("unknown", id="unknown-name-lists-known"),
]


@pytest.mark.parametrize("case", REGISTRY_CASES)
def test_registry_rules(case: str) -> None:
    registry: Registry[int] = Registry("widget")
    registry.add("a", 1)
    registry.add("b", 2)
    if case == "duplicate":
        with pytest.raises(ValueError, match="duplicate widget name 'a'"):
            registry.add("a", 3)
    else:
        with pytest.raises(UnknownNameError, match="known: a, b"):
            registry.get("c")
