"""Shared fixtures: a fresh migrated database per test on the active backend (SQLite by default, or PostgreSQL).

GAUNTLET_TEST_BACKEND=sqlite (default) | postgresql picks the backend of the pass. SQLite databases are file copies of
one migrated template per session. On PostgreSQL each xdist worker starts a temporary cluster on loopback (or uses
the admin URL in GAUNTLET_TEST_POSTGRES_URL), migrates one template database, and each fresh database is
`CREATE DATABASE ... TEMPLATE` of it, dropped `WITH (FORCE)` when its scope ends.

Fixtures for any test:
- `backend` (session): "sqlite" or "postgresql", the active backend.
- `db_url`: a fresh migrated database on the active backend; GAUNTLET_DATABASE_URL points at it. `engine`: on it.
- `backend_url_factory`: `backend_url_factory()` returns another fresh migrated URL on the active backend, and
  `backend_url_factory(template=url)` a copy of the database at `url` (dropped after the test).
  `session_url_factory` (session): the same for module- or session-scoped fixtures.
- `postgres_cluster` (session): a `PostgresServer` (`.admin_url`, `.url(name)`) in either pass; fails with an
  install hint when the PostgreSQL server binaries are absent (`make test` installs them). `postgres_url_factory` / `sqlite_url_factory`: fresh
  migrated URLs on that backend whatever the pass (e.g. copying between backends).
Helpers that are not fixtures call `tests.backends.active().create(template=None)` (tests/workspace_factories.py).
Browser tests (marker `browser`) of one module run on one xdist worker (group `browser:<module>`): a module starts
one app server (a module-scoped fixture) and shares it between its tests.
Marker `sqlite_only`: the test is about SQLite itself (WAL, files, sqlite3 locks) and is skipped on the PostgreSQL pass.
Marker `db`, set at collection (never by hand): the test gets a database on the active backend, through one of
ACTIVE_FIXTURES anywhere in its fixture closure, or through a helper that reaches `tests.backends.active()` (the test's
or a fixture's code, followed through the functions it calls in tests/). The PostgreSQL pass of CI runs
`-m "db and not browser"` only: the rest gives the same result on either backend. A test that is not marked `db` and
still asks for a database on the active backend fails loudly (tests/backends.py `guard`), so the marker cannot rot.
"""

from __future__ import annotations

import os
import sys

# One thread per BLAS / OpenMP pool in every test process, set before numpy, scipy or faiss load (the xdist workers and
# the app servers the browser tests start inherit it): `make test` runs one xdist worker per core, and a second
# OpenBLAS thread per worker only spins on a busy core. tests/test_picker.py -n 0 at load 12 on 2 cores: 34.5 s user
# CPU and 285 s wall with OpenBLAS's default threads, 10.1 s and 105 s with one (same 33 passed).
for _pool in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_pool, "1")

from collections.abc import Callable, Iterator  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from _pytest.nodeid import NodeId  # noqa: E402

from core.store.db import make_engine  # noqa: E402
from tests import backends  # noqa: E402
from tests.backends import PostgresDatabases, PostgresServer, SqliteDatabases, UrlFactory, activate
from tests.component_scan import reuse_component_scan  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
BACKEND = os.environ.get("GAUNTLET_TEST_BACKEND", "sqlite")
BACKENDS = ("sqlite", "postgresql")
if BACKEND not in BACKENDS:
    raise pytest.UsageError(f"GAUNTLET_TEST_BACKEND={BACKEND!r}: expected one of {', '.join(BACKENDS)}")


# The fixtures (defined below) that hand a test a database on the active backend, or tell it which backend is active.
ACTIVE_FIXTURES = frozenset({"db_url", "engine", "backend_url_factory", "session_url_factory", "backend"})


def pytest_configure(config) -> None:
    """Register the sqlite_only and db markers."""
    config.addinivalue_line("markers", "sqlite_only: about SQLite itself; skipped on the PostgreSQL pass")
    config.addinivalue_line("markers", "db: set at collection: the test uses a database on the active backend "
                                       "(the PostgreSQL pass runs these only)")


def pytest_itemcollected(item) -> None:
    """Keep each browser-test module on one xdist worker (`--dist loadgroup`), so its module-scoped app server starts
    once: group `browser:<module>`; and every test using the shared Ray runtime in group "ray", so Ray starts once
    for all of them. Set as each item is collected (before any collection_modifyitems hook, xdist's included, reads
    the groups)."""
    if item.get_closest_marker("xdist_group"):
        return
    if "ray_runtime" in getattr(item, "fixturenames", ()):
        item.add_marker(pytest.mark.xdist_group("ray"))
    elif item.get_closest_marker("browser"):
        item.add_marker(pytest.mark.xdist_group(f"browser:{item.module.__name__}"))


def pytest_collection_modifyitems(config, items) -> None:
    """Mark `db` every test that gets a database on the active backend; skip sqlite_only tests on PostgreSQL."""
    skip = pytest.mark.skipif(BACKEND != "sqlite", reason="sqlite_only: about SQLite itself (GAUNTLET_TEST_BACKEND=postgresql)")
    for item in items:
        if uses_active_database(item):
            item.add_marker(pytest.mark.db)
        if "sqlite_only" in item.keywords:
            item.add_marker(skip)
    if config.getoption("loadgroup", False):  # set on xdist workers under --dist loadgroup
        _apply_xdist_groups(items)


def _apply_xdist_groups(items) -> None:
    """Suffix each grouped item's node id with `@<group>`, as xdist's worker does for `--dist loadgroup`: xdist 3.8
    writes `item._nodeid`, which pytest 9 no longer reads (its node id lives in `item._id`), so without this every
    group was ignored and a group's tests (a browser module and its app server, a module's expensive fixture) ran
    on both workers."""
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        if names and "@" not in item.nodeid and hasattr(item, "_id"):
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(names)}")


def uses_active_database(item) -> bool:
    """True when one of ACTIVE_FIXTURES (this file's, not a same-named override or parameter) is in the item's
    fixture closure, or when the test's or a closure fixture's code reaches `tests.backends.active()`."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    functions: list[Callable] = [getattr(item, "function", None)]
    for name in item.fixturenames:
        definitions = info.name2fixturedefs.get(name) or ()
        if any(d.argname in ACTIVE_FIXTURES and getattr(d.func, "__module__", None) == __name__ for d in definitions):
            return True
        functions += [d.func for d in definitions if getattr(d.func, "__module__", None) != __name__]
    return any(backends.reaches_active(f) for f in functions if f is not None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """While a test that is not marked `db` runs, asking for a database on the active backend fails loudly. Each test
    also reuses the process's scan for Streamlit components once an AppTest has made it (tests/component_scan.py)."""
    reuse_component_scan()
    backends.guard(None if item.get_closest_marker("db") else item.nodeid)
    try:
        yield
    finally:
        backends.guard(None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After a test's fixtures are torn down, shut the shared Ray runtime down when the next test is outside its
    xdist group "ray" (under `--dist loadgroup` the group's tests run back to back on one worker: Ray starts once)."""
    try:
        return (yield)
    finally:
        runtime = sys.modules.get("tests.ray_runtime")
        if runtime is not None:
            runtime.stop_unless_next_in_group(nextitem)


def pytest_sessionfinish(session, exitstatus) -> None:
    """Shut the shared Ray runtime down if a test left it running (an interrupted session)."""
    runtime = sys.modules.get("tests.ray_runtime")
    if runtime is not None:
        runtime.stop()


@pytest.fixture
def ray_runtime(tmp_path_factory):
    """The shared local Ray runtime (tests/ray_runtime.py): Ray on 2 CPUs whose workers call the fake server
    (`.server`, script tests.ray_runtime.SCRIPT), started by the first test of a run of group "ray" that needs it."""
    from tests import ray_runtime

    return ray_runtime.start(tmp_path_factory.mktemp("ray"))


def _worker_prefix() -> str:
    return f"gt_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}_{os.getpid()}_"


@pytest.fixture(scope="session")
def backend() -> str:
    """The active backend of this pass: "sqlite" or "postgresql"."""
    return BACKEND


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresServer]:
    """A PostgreSQL server: GAUNTLET_TEST_POSTGRES_URL, else a temporary cluster for this worker (fails if absent)."""
    given = os.environ.get("GAUNTLET_TEST_POSTGRES_URL")
    if given:  # GAUNTLET_TEST_POSTGRES_DISPOSABLE=1: the caller deletes that cluster afterwards (.ci/run)
        yield PostgresServer(given, disposable=os.environ.get("GAUNTLET_TEST_POSTGRES_DISPOSABLE") == "1")
        return
    from core.testing.postgres import server_bin_dir, temporary_cluster, wait_ready

    try:
        server_bin_dir()
    except RuntimeError as exc:
        pytest.fail(f"{exc} (make test installs it when run as root)")
    with temporary_cluster() as cluster:
        wait_ready(cluster)
        yield PostgresServer(cluster.admin_url, disposable=True)


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


@pytest.fixture(scope="session", autouse=True)
def active_databases(request) -> SqliteDatabases | PostgresDatabases:
    """The fresh-database source of the active backend (also what tests.backends.active() returns)."""
    databases = request.getfixturevalue("postgres_databases" if BACKEND == "postgresql" else "sqlite_databases")
    activate(databases)
    return databases


@pytest.fixture(scope="session")
def migrated_template(sqlite_databases) -> Path:
    """The migrated SQLite template file (SQLite-only tests copy it)."""
    return sqlite_databases.template


def _factory(databases, guarded: bool = False) -> Iterator[UrlFactory]:
    factory = UrlFactory(databases, guarded)
    yield factory
    factory.close()


@pytest.fixture(scope="session")
def session_url_factory(active_databases) -> Iterator[UrlFactory]:
    """Fresh migrated URLs on the active backend for module/session fixtures (dropped at the end of the session)."""
    yield from _factory(active_databases, guarded=True)


@pytest.fixture(scope="session")
def paper_scale_results(session_url_factory) -> str:
    """The paper-scale synthetic results (bench.make_synthetic_results seed 0: 13 models and 2 baselines x 983
    instances, one scored run) on the active backend, built once per session (about 15 s): a template that no test
    opens; copy it with backend_url_factory(template=...) or session_url_factory(template=...). The modules using it
    share the xdist group "paper-scale", so one worker builds it once per pass."""
    from bench.make_synthetic_results import make_results

    url = session_url_factory()
    make_results(url, seed=0)
    return url


@pytest.fixture
def backend_url_factory(active_databases) -> Iterator[UrlFactory]:
    """Fresh migrated URLs on the active backend, dropped after the test."""
    yield from _factory(active_databases, guarded=True)


@pytest.fixture
def postgres_url_factory(postgres_databases) -> Iterator[UrlFactory]:
    """Fresh migrated PostgreSQL URLs whatever the pass (the server binaries are required: make test installs them)."""
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
