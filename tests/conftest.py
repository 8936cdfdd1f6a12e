"""Shared fixtures: a migrated SQLite database per test (copied from one migrated template per session)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from core.store.db import make_engine, upgrade

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="session")
def migrated_template(tmp_path_factory) -> Path:
    """One database migrated to head per test session."""
    path = tmp_path_factory.mktemp("template") / "template.db"
    upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture
def db_url(tmp_path, migrated_template, monkeypatch) -> str:
    """A fresh migrated database for this test; GAUNTLET_DATABASE_URL points at it."""
    path = tmp_path / "gauntlet.db"
    shutil.copy(migrated_template, path)
    url = f"sqlite:///{path}"
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", url)
    return url


@pytest.fixture
def engine(db_url):
    """An engine on the per-test database."""
    eng = make_engine(db_url)
    yield eng
    eng.dispose()
