"""The `db` marker (tests/conftest.py): which code counts as asking for a database on the active backend, and the
guard that fails a test asking for one without the marker (so the PostgreSQL pass cannot silently skip it)."""

from __future__ import annotations

import pytest

from tests import backends
from tests.workspace_factories import seeded_db


def _calls_seeded_db(tmp_path):
    return seeded_db(tmp_path)


def _through_a_helper(tmp_path):
    return _calls_seeded_db(tmp_path)


def _imports_inside(tmp_path):
    from tests.workspace_factories import seeded_db as fresh

    return fresh(tmp_path)


def _in_a_nested_function(tmp_path):
    def inner():
        return backends.active().create()

    return inner


def _no_database(tmp_path):
    return sorted(str(tmp_path))


def _recursive(n):
    return _recursive(n - 1) if n else 0


CASES = {
    "calls-seeded_db": (_calls_seeded_db, True),
    "through-a-helper-in-tests": (_through_a_helper, True),
    "imports-seeded_db-in-its-body": (_imports_inside, True),
    "calls-active-in-a-nested-function": (_in_a_nested_function, True),
    "no-database": (_no_database, False),
    "recursion-ends": (_recursive, False),
}


@pytest.mark.parametrize(("function", "expected"), list(CASES.values()), ids=list(CASES))
def test_code_that_reaches_the_active_database_source(function, expected: bool) -> None:
    assert backends.reaches_active(function) is expected


def test_this_module_is_partitioned_by_what_each_test_uses(request) -> None:
    """A test with an active-database fixture is marked `db`; this one (no such fixture, no such call) is not."""
    assert request.node.get_closest_marker("db") is None


def test_a_test_with_a_database_fixture_is_marked(request, db_url) -> None:
    assert request.node.get_closest_marker("db") is not None


def test_an_unmarked_test_asking_for_a_database_fails_loudly(request) -> None:
    source = vars(backends)["active"]  # looked up at run time: what the collection-time check cannot see
    with pytest.raises(RuntimeError, match="did not mark it `db`"):
        source()
    with pytest.raises(RuntimeError, match="did not mark it `db`"):
        request.getfixturevalue("backend_url_factory")()
