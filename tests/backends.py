"""Fresh migrated databases for the tests on SQLite (file copies) or PostgreSQL (`CREATE DATABASE ... TEMPLATE`).

tests/conftest.py makes the fixtures; `active()` gives the active backend's source to plain helpers that are not
fixtures (tests/workspace_factories.py).
"""

from __future__ import annotations

import dis
import importlib
import inspect
import itertools
import queue
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

from core.store.db import forget_engine, upgrade

TESTS_DIR = f"{Path(__file__).resolve().parent}/"


@dataclass(frozen=True)
class PostgresServer:
    """A PostgreSQL server reachable through its admin (maintenance database) URL."""

    admin_url: str
    disposable: bool = False  # the cluster is deleted after the session: its databases need no dropping

    def url(self, database: str) -> str:
        """SQLAlchemy URL of `database` on this server."""
        return make_url(self.admin_url).set(database=database).render_as_string(hide_password=False)

    def connect(self) -> psycopg.Connection:
        """An autocommit psycopg connection to the maintenance database."""
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

    def create(self, template: str | None = None) -> str:
        """A fresh migrated database's URL: a copy of the migrated template, or of the database at `template`."""
        path = self.folder / f"db{next(self._numbers)}" / "gauntlet.db"
        path.parent.mkdir()
        if template:
            forget_engine(template)
        shutil.copy(template.removeprefix("sqlite:///") if template else self.template, path)
        return f"sqlite:///{path}"

    def drop(self, url: str) -> None:
        """Forget the engine of `url` and delete its files."""
        forget_engine(url)
        shutil.rmtree(Path(url.removeprefix("sqlite:///")).parent, ignore_errors=True)

    def close(self) -> None:
        """Nothing to do: the folder is pytest's."""


class PostgresDatabases:
    """Fresh migrated PostgreSQL databases: `CREATE DATABASE ... TEMPLATE` of one migrated template.

    A background thread (its own admin connection) keeps AHEAD copies of the template ready and drops the databases
    given back, so a test waits for neither (CREATE DATABASE waits for a checkpoint: 50-300 ms under load)."""

    backend = "postgresql"
    AHEAD = 2
    STRATEGY = "WAL_LOG"  # FILE_COPY checkpoints twice per copy: ~170 ms server CPU per test database, not ~60 ms

    def __init__(self, server: PostgresServer, prefix: str) -> None:
        self.server = server
        self.prefix = prefix
        self._numbers = itertools.count()
        self._admin = server.connect()
        self._template: str | None = None
        self._live: set[str] = set()
        self._lock = threading.Lock()
        self._ready: queue.Queue[str | BaseException] = queue.Queue()
        self._tasks: queue.Queue[tuple[str, str] | None] = queue.Queue()
        self._worker: threading.Thread | None = None

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

    def _new_name(self) -> str:
        with self._lock:
            name = f"{self.prefix}{next(self._numbers)}"
            self._live.add(name)
        return name

    def _start_background(self) -> None:
        _ = self.template
        self._worker = threading.Thread(target=self._background, name="pg-databases", daemon=True)
        self._worker.start()
        for _ in range(self.AHEAD):
            self._tasks.put(("create", self._new_name()))

    def _background(self) -> None:
        with self.server.connect() as admin:
            while (task := self._tasks.get()) is not None:
                action, name = task
                try:
                    if action == "create":
                        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{self._template}" STRATEGY {self.STRATEGY}')
                        self._ready.put(name)
                    else:
                        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                except psycopg.Error as error:  # handed to the test waiting for a database
                    self._ready.put(error)

    def create(self, template: str | None = None) -> str:
        """A fresh migrated database's URL: a copy of the migrated template, or of the database at `template`
        (which must have no open connection: its process-wide engine is disposed of first)."""
        if template is None:
            if self._worker is None:
                self._start_background()
            self._tasks.put(("create", self._new_name()))
            ready = self._ready.get()
            if isinstance(ready, BaseException):
                raise ready
            return self.server.url(ready)
        forget_engine(template)
        name = self._new_name()
        with self._lock:
            self._admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{make_url(template).database}" STRATEGY {self.STRATEGY}')
        return self.server.url(name)

    def drop(self, url: str) -> None:
        """Forget the engine of `url` and drop its database (in the background), closing any connection still open."""
        forget_engine(url)
        name = make_url(url).database
        with self._lock:
            self._live.discard(name)
        self._tasks.put(("drop", name))

    def close(self) -> None:
        """Finish the background work, then drop every database still live and the template (on a disposable
        cluster, only stop: the cluster's deletion drops them, and hundreds of drops cost about 20 s at the end)."""
        if self.server.disposable:
            while True:
                try:
                    self._tasks.get_nowait()
                except queue.Empty:
                    break
        if self._worker is not None:
            self._tasks.put(None)
            self._worker.join()
        if self.server.disposable:
            self._admin.close()
            return
        for name in [*self._live, *([self._template] if self._template else [])]:
            self._admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self._admin.close()


class UrlFactory:
    """Callable: a fresh migrated URL per call, all dropped by `close()`."""

    def __init__(self, databases: SqliteDatabases | PostgresDatabases, guarded: bool = False) -> None:
        self.databases = databases
        self.guarded = guarded  # the active backend's factory: only tests marked `db` may call it
        self.backend = databases.backend
        self._urls: list[str] = []

    def __call__(self, template: str | None = None) -> str:
        if self.guarded:
            check_marked()
        url = self.databases.create(template)
        self._urls.append(url)
        return url

    def close(self) -> None:
        """Drop every database this factory made."""
        for url in self._urls:
            self.databases.drop(url)
        self._urls.clear()


_ACTIVE: list[SqliteDatabases | PostgresDatabases] = []
_UNMARKED: list[str] = []


def guard(nodeid: str | None) -> None:
    """While `nodeid` (a test not marked `db`) runs, `active()` and the active fixtures' factories raise."""
    _UNMARKED[:] = [nodeid] if nodeid else []


def check_marked() -> None:
    """Raise when the running test asks for a database on the active backend without being marked `db`."""
    if _UNMARKED:
        raise RuntimeError(
            f"{_UNMARKED[0]} asks for a database on the active backend but tests/conftest.py did not mark it `db`, so "
            "the PostgreSQL pass would skip it: request db_url, engine, backend_url_factory or session_url_factory "
            "(or call tests.backends.active() from a function under tests/ that the test or its fixtures name)")


def activate(databases: SqliteDatabases | PostgresDatabases) -> None:
    """Make `databases` the source `active()` returns for this session."""
    _ACTIVE[:] = [databases]


def active() -> SqliteDatabases | PostgresDatabases:
    """The active backend's fresh-database source (set by the session fixture `active_databases`)."""
    if not _ACTIVE:
        raise RuntimeError("no active database source: request the active_databases fixture first")
    check_marked()
    return _ACTIVE[0]


_REACHES: dict[object, bool] = {}
_REFERENCED: dict[tuple[object, int], tuple[object, ...]] = {}


def reaches_active(function: Callable, seen: set[int] | None = None) -> bool:
    """Whether `function`'s code (nested functions included) calls, directly or through functions defined under
    tests/, `tests.backends.active`. A complete answer (asked from the top) is remembered per function: collection
    asks it for every fixture of every test, and reading bytecode is what costs."""
    if seen is None:
        key = inspect.unwrap(function)
        if key not in _REACHES:
            _REACHES[key] = reaches_active(function, set())
        return _REACHES[key]
    function = inspect.unwrap(function)
    code = getattr(function, "__code__", None)
    if code is None or id(function) in seen:
        return False
    seen.add(id(function))
    globals_ = getattr(function, "__globals__", {})
    for target in _referenced_once(code, globals_):
        if target is active:
            return True
        inner = inspect.unwrap(target) if callable(target) else None
        if inspect.isfunction(inner) and inner.__code__.co_filename.startswith(TESTS_DIR) and reaches_active(inner, seen):
            return True
    return False


def _referenced_once(code, globals_: dict) -> tuple[object, ...]:
    """`_referenced`, read once per code object and module namespace."""
    key = (code, id(globals_))
    if key not in _REFERENCED:
        _REFERENCED[key] = tuple(_referenced(code, globals_))
    return _REFERENCED[key]


def _import_test_module(module: str) -> object:
    """A module under tests/ that a test imports inside its body, imported now: a subset run may not have loaded it
    yet, and the answer must not depend on which other modules were collected."""
    if not module.startswith("tests."):
        return None
    try:
        return importlib.import_module(module)
    except Exception:  # a module that fails to import fails its own tests; detection just cannot read it
        return None


def _referenced(code, globals_: dict) -> Iterator[object]:
    """The globals a code object names (and `module.name` for a module global), and the names it imports inside its
    body from modules already loaded."""
    module, previous = None, None
    for instruction in dis.get_instructions(code):
        if instruction.opname == "IMPORT_NAME":
            module = instruction.argval
        elif instruction.opname == "IMPORT_FROM" and module:
            loaded = sys.modules.get(module) or sys.modules.get(module.rpartition(".")[2]) or _import_test_module(module)
            yield getattr(loaded, instruction.argval, None)
        elif instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME") and instruction.argval in globals_:
            yield globals_[instruction.argval]
        elif instruction.opname in ("LOAD_ATTR", "LOAD_METHOD") and inspect.ismodule(previous):
            yield getattr(previous, instruction.argval, None)  # module.function
        previous = globals_.get(instruction.argval) if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME") else None
    for constant in code.co_consts:
        if inspect.iscode(constant):
            yield from _referenced(constant, globals_)
