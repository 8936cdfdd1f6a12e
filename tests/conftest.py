"""Shared fixtures: a fresh migrated database per test on the active backend (SQLite by default, or PostgreSQL).

GAUNTLET_TEST_BACKEND=sqlite (default) | postgresql picks the backend of the pass. SQLite databases are file copies of
one migrated template per session. On PostgreSQL each xdist worker starts a temporary cluster on loopback (or uses
the admin URL in GAUNTLET_TEST_POSTGRES_URL), migrates one template database, and each fresh database is
`CREATE DATABASE ... TEMPLATE` of it, dropped `WITH (FORCE)` when its scope ends.

Fixtures for any test:
- `backend` (session): "sqlite" or "postgresql", the active backend.
- `db_url`: a fresh migrated database on the active backend; GAUNTLET_DATABASE_URL points at it. `engine`: on it.
- `backend_url_factory`: `backend_url_factory()` returns another fresh migrated URL on the active backend
  (dropped after the test). `session_url_factory` (session): the same for module- or session-scoped fixtures.
- `postgres_cluster` (session): a `PostgresServer` (`.admin_url`, `.url(name)`) in either pass; skipped with the
  reason when the PostgreSQL server binaries are absent. `postgres_url_factory` / `sqlite_url_factory`: fresh
  migrated URLs on that backend whatever the pass (e.g. copying between backends).
Marker `sqlite_only`: the test is about SQLite itself (WAL, files, sqlite3 locks) and is skipped on the PostgreSQL pass.
"""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from core.store.db import forget_engine, make_engine, upgrade

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
BACKEND = os.environ.get("GAUNTLET_TEST_BACKEND", "sqlite")
BACKENDS = ("sqlite", "postgresql")
if BACKEND not in BACKENDS:
    raise pytest.UsageError(f"GAUNTLET_TEST_BACKEND={BACKEND!r}: expected one of {', '.join(BACKENDS)}")


def pytest_configure(config) -> None:
    """Register the sqlite_only marker."""
    config.addinivalue_line("markers", "sqlite_only: about SQLite itself; skipped on the PostgreSQL pass")


def pytest_collection_modifyitems(config, items) -> None:
    """Skip sqlite_only tests on the PostgreSQL pass."""
    if BACKEND == "sqlite":
        return
    skip = pytest.mark.skip(reason="sqlite_only: about SQLite itself (GAUNTLET_TEST_BACKEND=postgresql)")
    for item in items:
        if "sqlite_only" in item.keywords:
            item.add_marker(skip)


@dataclass(frozen=True)
class PostgresServer:
    """A PostgreSQL server reachable through its admin (maintenance database) URL."""

    admin_url: str

    def url(self, database: str) -> str:
        """SQLAlchemy URL of `database` on this server."""
        return make_url(self.admin_url).set(database=database).render_as_string(hide_password=False)

    def connect(self):
        """An autocommit psycopg connection to the maintenance database."""
        import psycopg

        url = make_url(self.admin_url)
        return psycopg.connect(host=url.host, port=url.port, user=url.username, password=url.password,
                               dbname=url.database, autocommit=True)


class SqliteDatabases:
    """Fresh migrated SQLite databases: copies of one migrated file in `folder`."""

    backend = "sqlite"

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._numbers = itertools.count()
        self._template: Path | None = None

    @property
    def template(self) -> Path:
        """The migrated template file (migrated on first use)."""
        if self._template is None:
            self._template = self.folder / "template.db"
            upgrade(f"sqlite:///{self._template}")
        return self._template

    def create(self) -> str:
        """A fresh migrated database's URL."""
        path = self.folder / f"db{next(self._numbers)}" / "gauntlet.db"
        path.parent.mkdir()
        shutil.copy(self.template, path)
        return f"sqlite:///{path}"

    def drop(self, url: str) -> None:
        """Forget the engine of `url` and delete its files."""
        forget_engine(url)
        shutil.rmtree(Path(url.removeprefix("sqlite:///")).parent, ignore_errors=True)

    def close(self) -> None:
        """Nothing to do: the folder is pytest's."""


class PostgresDatabases:
    """Fresh migrated PostgreSQL databases: `CREATE DATABASE ... TEMPLATE` of one migrated template."""

    backend = "postgresql"

    def __init__(self, server: PostgresServer, prefix: str) -> None:
        self.server = server
        self.prefix = prefix
        self._numbers = itertools.count()
        self._admin = server.connect()
        self._template: str | None = None
        self._live: set[str] = set()

    @property
    def template(self) -> str:
        """The migrated template database's name (migrated on first use)."""
        if self._template is None:
            name = f"{self.prefix}template"
            self._admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            self._admin.execute(f'CREATE DATABASE "{name}"')
            url = self.server.url(name)
            upgrade(url)
            forget_engine(url)
            self._template = name
        return self._template

    def create(self) -> str:
        """A fresh migrated database's URL."""
        name = f"{self.prefix}{next(self._numbers)}"
        self._admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{self.template}" STRATEGY FILE_COPY')
        self._live.add(name)
        return self.server.url(name)

    def drop(self, url: str) -> None:
        """Forget the engine of `url` and drop its database, closing any connection still open."""
        forget_engine(url)
        name = make_url(url).database
        self._admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self._live.discard(name)

    def close(self) -> None:
        """Drop every database still live and the template."""
        for name in [*self._live, *([self._template] if self._template else [])]:
            self._admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self._admin.close()


class UrlFactory:
    """Callable: a fresh migrated URL per call, all dropped by `close()`."""

    def __init__(self, databases: SqliteDatabases | PostgresDatabases) -> None:
        self.databases = databases
        self.backend = databases.backend
        self._urls: list[str] = []

    def __call__(self) -> str:
        url = self.databases.create()
        self._urls.append(url)
        return url

    def close(self) -> None:
        """Drop every database this factory made."""
        for url in self._urls:
            self.databases.drop(url)
        self._urls.clear()


def _worker_prefix() -> str:
    return f"gt_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}_{os.getpid()}_"


@pytest.fixture(scope="session")
def backend() -> str:
    """The active backend of this pass: "sqlite" or "postgresql"."""
    return BACKEND


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresServer]:
    """A PostgreSQL server: GAUNTLET_TEST_POSTGRES_URL, else a temporary cluster for this worker (skip if absent)."""
    given = os.environ.get("GAUNTLET_TEST_POSTGRES_URL")
    if given:
        yield PostgresServer(given)
        return
    from core.testing.postgres import server_bin_dir, temporary_cluster, wait_ready

    try:
        server_bin_dir()
    except RuntimeError as exc:
        if BACKEND == "postgresql":
            raise
        pytest.skip(f"PostgreSQL unavailable: {exc}")
    with temporary_cluster() as cluster:
        wait_ready(cluster)
        yield PostgresServer(cluster.admin_url)


@pytest.fixture(scope="session")
def sqlite_databases(tmp_path_factory) -> SqliteDatabases:
    """Fresh SQLite databases for this session."""
    return SqliteDatabases(tmp_path_factory.mktemp("databases"))


@pytest.fixture(scope="session")
def postgres_databases(postgres_cluster) -> Iterator[PostgresDatabases]:
    """Fresh PostgreSQL databases for this worker, dropped at the end of the session."""
    databases = PostgresDatabases(postgres_cluster, _worker_prefix())
    yield databases
    databases.close()


@pytest.fixture(scope="session")
def active_databases(request) -> SqliteDatabases | PostgresDatabases:
    """The fresh-database source of the active backend."""
    return request.getfixturevalue("postgres_databases" if BACKEND == "postgresql" else "sqlite_databases")


@pytest.fixture(scope="session")
def migrated_template(sqlite_databases) -> Path:
    """The migrated SQLite template file (SQLite-only tests copy it)."""
    return sqlite_databases.template


def _factory(databases) -> Iterator[UrlFactory]:
    factory = UrlFactory(databases)
    yield factory
    factory.close()


@pytest.fixture(scope="session")
def session_url_factory(active_databases) -> Iterator[UrlFactory]:
    """Fresh migrated URLs on the active backend for module/session fixtures (dropped at the end of the session)."""
    yield from _factory(active_databases)


@pytest.fixture
def backend_url_factory(active_databases) -> Iterator[UrlFactory]:
    """Fresh migrated URLs on the active backend, dropped after the test."""
    yield from _factory(active_databases)


@pytest.fixture
def postgres_url_factory(postgres_databases) -> Iterator[UrlFactory]:
    """Fresh migrated PostgreSQL URLs whatever the pass (skipped when PostgreSQL is unavailable)."""
    yield from _factory(postgres_databases)


@pytest.fixture
def sqlite_url_factory(sqlite_databases) -> Iterator[UrlFactory]:
    """Fresh migrated SQLite URLs whatever the pass."""
    yield from _factory(sqlite_databases)


@pytest.fixture
def db_url(backend_url_factory, monkeypatch) -> str:
    """A fresh migrated database for this test; GAUNTLET_DATABASE_URL points at it."""
    url = backend_url_factory()
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", url)
    return url


@pytest.fixture
def engine(db_url):
    """An engine on the per-test database."""
    eng = make_engine(db_url)
    yield eng
    eng.dispose()
