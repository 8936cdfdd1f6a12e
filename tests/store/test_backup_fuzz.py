"""Restoring odd backups: a row of any shape in any table (a 400-digit number in a float column, a list as a key, a
time out of range, a line that is not an object) is refused as `file:line: field: message` with nothing written, or
restored; never another exception. One property test per backed-up table, with its checksum resealed so the rows
are read."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlmodel import Session, func, select

from bench.make_synthetic_results import make_results
from core.review.auth import create_user
from core.store.backup import MANIFEST, BackupError, backup_tables, export_all, import_all
from core.store.db import make_engine
from core.store.jsonl import shown_field
from core.store.models import (
    Annotation,
    Assignment,
    BenchmarkSet,
    BenchmarkSetMember,
    ContextClaims,
    JudgeCheck,
    LLMCall,
)

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
TABLES = [t.name for t in backup_tables()]
HOLE = "\u2063hole\u2063"
RAW = st.sampled_from(["1" * 400, "-" + "9" * 400, "1e999", "1.5e-400", "2147483648", "9223372036854775808", "-0",
                       '"0001-01-01T00:00:00+05:00"', '"9999-12-31T23:59:59-05:00"', '"2025-01-01T00:00:00"',
                       '"2025-13-01T00:00:00+00:00"', '"x\\u0000y"', '"\\ud800"', "{}", "[]", "null", "true",
                       '"' + "x" * 3000 + '"']) \
    | st.integers(1, 3000).map(lambda n: "[" * n + "]" * n)
LEAF = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=20)
VALUES = st.recursive(LEAF, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=8)


@pytest.fixture(scope="module")
def dump(tmp_path_factory) -> Path:
    """A small backup with rows in every table (password hashes included)."""
    folder = tmp_path_factory.mktemp("source")
    url = f"sqlite:///{folder / 'source.db'}"
    make_results(url, n_models=1, n_instances=2, seed=3)
    engine = make_engine(url)
    create_user(engine, "admin", "admin", "admin-pass-123")
    with Session(engine) as session:
        session.add_all([Annotation(kind="gold_label", target_type="response", target_id=1, author="admin",
                                    payload={"a": [1.5]}, client_token="t1"),
                         Assignment(kind="gold_label", target_id=1, assignee="admin", probability=0.5),
                         BenchmarkSet(name="set"), LLMCall(key="k", provider="openai", model_name="m", text="ok"),
                         ContextClaims(instance_id=1, judge="llm:j", core=["c"]),
                         JudgeCheck(kind="suite", judge="heuristic", judge_model="heuristic", prompt_hash="0" * 12,
                                    suite="ragchecker-meta", n=2, figures={"overall": {"pearson": 0.5}})])
        session.flush()
        session.add(BenchmarkSetMember(set_id=1, instance_id=1))
        session.commit()
    export_all(engine, folder / "dump", password_hashes=True)
    engine.dispose()
    rows = json.loads((folder / "dump" / MANIFEST).read_text())["tables"]
    assert all(rows[name]["rows"] for name in TABLES), {n: rows[n]["rows"] for n in TABLES}
    return folder / "dump"


@pytest.fixture(scope="module")
def engine(session_url_factory):
    eng = make_engine(session_url_factory())
    yield eng
    eng.dispose()


def counts(engine) -> list[int]:
    with Session(engine) as session:
        return [session.exec(select(func.count()).select_from(t)).one() for t in backup_tables()]


def resealed(source: Path, target: Path, table: str, lines: list[str]) -> Path:
    """A copy of the backup with `table`'s file replaced by `lines` and the manifest updated to match."""
    shutil.copytree(source, target)
    data = "".join(line + "\n" for line in lines).encode("utf-8", "surrogatepass")
    (target / f"{table}.jsonl").write_bytes(data)
    manifest = json.loads((target / MANIFEST).read_text())
    manifest["tables"][table] |= {"sha256": hashlib.sha256(data).hexdigest(), "rows": len(lines), "bytes": len(data)}
    (target / MANIFEST).write_text(json.dumps(manifest))
    return target


@st.composite
def odd_lines(draw, first: str) -> list[str]:
    """The table's first row with a column replaced, dropped or added, the line replaced, or the row repeated (the
    table's other rows follow)."""
    row = json.loads(first)
    column = draw(st.sampled_from(sorted(row)))
    operation = draw(st.sampled_from(["raw", "value", "drop", "add", "line", "repeat"]))
    if operation == "line":
        return [draw(RAW | VALUES.map(json.dumps))]
    if operation == "repeat":
        return [first, first]
    if operation == "drop":
        del row[column]
    elif operation == "add":
        row[draw(st.text(max_size=8))] = draw(VALUES)
    else:
        row[column] = HOLE if operation == "raw" else draw(VALUES)
    return [json.dumps(row, ensure_ascii=False).replace(json.dumps(HOLE, ensure_ascii=False), draw(RAW))]


def check_restore(engine, directory: Path) -> None:
    """Restore never raises anything but BackupError; its problems name file, line and field; a refusal writes
    nothing."""
    before = counts(engine)
    try:
        import_all(engine, directory, replace=True, with_accounts=True)
    except BackupError as exc:
        for problem in exc.problems:
            assert re.match(r"^[\w.]+(:\d+)?: \S", str(problem)), str(problem)
        assert counts(engine) == before, "a refused restore wrote rows"


@pytest.mark.parametrize("table", TABLES)
def test_any_row_shape_is_restored_or_named_by_file_line_and_field(dump, engine, tmp_path_factory, table):
    first, *rest = (dump / f"{table}.jsonl").read_text(encoding="utf-8").splitlines()

    @SETTINGS
    @given(odd_lines(first))
    def run(lines):
        check_restore(engine, resealed(dump, tmp_path_factory.mktemp("odd") / "dump", table, lines + rest))

    run()


@pytest.mark.parametrize(("table", "column", "raw", "message"), [
    pytest.param("verdict", "cost_usd", "1" * 400, "must be a finite number, got a 400-digit integer",
                 id="400-digit-number-in-a-float-column"),
    pytest.param("verdict", "id", "[1, 2]", "must be an integer, got [1, 2]", id="list-as-primary-key"),
    pytest.param("llmcall", "key", '{"a": 1}', "must be text, got {'a': 1}", id="object-as-text-key"),
    pytest.param("run", "created_at", '"0001-01-01T00:00:00+05:00"', "out of range in UTC",
                 id="time-before-year-1-in-utc"),
    pytest.param("verdict", "judge", '"' + "j" * 3000 + '"', "3000 bytes: an indexed column holds at most 2000",
                 id="long-text-in-an-indexed-column"),
    pytest.param("domain", " ", "null", "unknown field", id="blank-field-name"),
])
def test_odd_values_are_file_line_field_errors(dump, engine, tmp_path, table, column, raw, message):
    row = json.loads((dump / f"{table}.jsonl").read_text(encoding="utf-8").splitlines()[0])
    line = json.dumps(row | {column: HOLE}).replace(json.dumps(HOLE), raw)
    before = counts(engine)
    with pytest.raises(BackupError) as caught:
        import_all(engine, resealed(dump, tmp_path / "dump", table, [line]), replace=True, with_accounts=True)
    shown = [str(p) for p in caught.value.problems]
    assert any(s.startswith(f"{table}.jsonl:1: {shown_field(column)}: ") and message in s for s in shown), shown
    assert counts(engine) == before
