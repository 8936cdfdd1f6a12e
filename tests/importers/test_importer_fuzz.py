"""Every importer on odd files: a truncated or trailing-garbage JSON array, 100,000-deep nesting and odd records fail
with their line (and column) and write nothing, in every format; property tests per importer: any record shape is
either imported or a list of `line N: field: message` errors with nothing written, never another exception."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from core.cli import app
from core.config import REPO_ROOT
from core.ingest.importers import get_importer, import_source
from core.ingest.io import LineError
from core.store.db import make_engine
from tests.importers.conftest import FIXTURES, shared, table_counts, write_records

SOURCES: dict[str, Callable[[], Path]] = {
    "jsonl": lambda: REPO_ROOT / "data" / "sample" / "enterprise_rag_sample.jsonl",
    "lit-ragbench": lambda: shared("datasets/lit-ragbench/en.jsonl"),
    "hotpotqa": lambda: shared("datasets/hotpotqa-dev-distractor/hotpotqa_dev_distractor_500.jsonl"),
    "mmlu": lambda: shared("datasets/mmlu/ragstress_eval700_stratified_seed42.jsonl"),
    "mmlu-csv": lambda: shared("datasets/mmlu/test/anatomy_test.csv"),
    "medqa": lambda: shared("datasets/medqa-usmle-4opt/medqa_us_4opt_test_first500.jsonl"),
    "domainrag": lambda: shared("datasets/domainrag/faithful_qa.jsonl"),
    "rgb": lambda: FIXTURES / "rgb_en_fact.json",
    "ramdocs": lambda: FIXTURES / "ramdocs.jsonl",
    "crag": lambda: FIXTURES / "crag.jsonl",
    "followrag": lambda: FIXTURES / "followrag.json",
    "ifeval": lambda: shared("ifeval/input_data.jsonl"),
}
TEN = [name for name in SOURCES if name not in ("jsonl", "mmlu-csv")]
LINE_ERROR = re.compile(r"^line [1-9]\d*: (\S[^:]*: )?\S.*", re.DOTALL)
HOLE = "\u2063hole\u2063"  # a placeholder string replaced by raw JSON text after dumping
SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _fmt(case: str) -> str:
    return case.removesuffix("-csv")


@cache
def seeds(case: str) -> tuple[str, ...]:
    """Two valid records of the case's source, as JSON text (CSV rows as JSON lists)."""
    records, errors = get_importer(_fmt(case)).read(SOURCES[case]())
    assert not errors
    return tuple(json.dumps(raw, ensure_ascii=False) for _, raw in records[:2])


def write(folder: Path, case: str, records: list[Any], layout: str) -> Path:
    """Records written in `layout` to a file named like the source (MMLU reads the subject from a CSV's name)."""
    folder.mkdir(exist_ok=True)
    source = SOURCES[case]()
    if case == "mmlu-csv":
        shutil.copy(source.parent.parent / "subject_categories.json", folder / "subject_categories.json")
    path = folder / (source.stem + (".csv" if layout == "csv" else ".json"))
    write_records(path, records, layout)
    return path


def check_import(engine, path: Path, fmt: str) -> list[LineError]:
    """Import `path`: never raises; on errors every one is a line error and nothing was written."""
    before = table_counts(engine)
    report = import_source(engine, path, fmt=fmt, on_existing="new_version")
    for error in report.errors:
        assert isinstance(error, LineError) and LINE_ERROR.match(str(error)), str(error)
    if report.errors:
        assert table_counts(engine) == before, "a failed import wrote rows"
    return report.errors


@pytest.fixture(scope="module")
def engine(session_url_factory):
    eng = make_engine(session_url_factory())
    yield eng
    eng.dispose()


def _array(case: str) -> str:
    return "[\n" + ",\n".join(seeds(case)) + "\n]\n"


SHAPES = [
    pytest.param(lambda c: _array(c).rstrip().removesuffix("]"), 4, "the array is not closed", id="no-closing-bracket"),
    pytest.param(lambda c: _array(c).rstrip().removesuffix("]").rstrip() + ",\n", 4, "the array is not closed",
                 id="ends-after-a-comma"),
    pytest.param(lambda c: _array(c) + '{"more": 1}\n', 5, "text after the array's closing ']'",
                 id="trailing-garbage"),
    pytest.param(lambda c: _array(c).replace("\n]", ",\n]"), 4, "trailing comma", id="trailing-comma"),
    pytest.param(lambda c: "[\n" + seeds(c)[0] + ",\n" + "[" * 100_000 + "]" * 100_000 + "\n]", 3,
                 "nested too deeply (more than 100 levels) (column 101)", id="100000-deep"),
]


@pytest.mark.parametrize("make, line, message", SHAPES)
@pytest.mark.parametrize("case", TEN)
def test_a_broken_json_array_fails_with_its_position_and_writes_nothing(engine, tmp_path, case, make, line, message):
    path = tmp_path / "broken.json"
    path.write_text(make(case), encoding="utf-8")
    errors = check_import(engine, path, _fmt(case))
    assert any(message in e.message and e.line == line for e in errors), [str(e) for e in errors]


@pytest.mark.parametrize("case", [name for name in SOURCES if name != "mmlu-csv"])
def test_deep_nesting_in_json_lines_names_line_and_column(engine, tmp_path, case):
    path = tmp_path / "deep.jsonl"
    path.write_text(seeds(case)[0] + "\n" + '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}\n", encoding="utf-8")
    errors = check_import(engine, path, _fmt(case))
    assert [(e.line, e.message) for e in errors] == [
        (2, "malformed JSON: nested too deeply (more than 100 levels at column 106)")], [str(e) for e in errors]


def test_a_truncated_array_exits_1_on_the_command_line(db_url, tmp_path):
    path = tmp_path / "crag.json"
    path.write_text(_array("crag").rstrip().removesuffix("]").rstrip() + ",\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["import", "--format", "crag", str(path)])
    assert result.exit_code == 1, result.output
    assert f"{path}:4: malformed JSON: the array is not closed" in result.output and "nothing imported" in result.output


def _with(seed: str, path: tuple, value: Any) -> Any:
    record = json.loads(seed)
    node = record
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return record


ODD_RECORDS = [
    pytest.param("mmlu", lambda s: _with(s, ("choices",), [f"c{i}" for i in range(27)]), "choices",
                 "27 choices: at most 26", id="mmlu-27-choices"),
    pytest.param("mmlu", lambda s: _with(s, ("answer",), ""), "answer", "is not one of the choice letters",
                 id="mmlu-empty-answer"),
    pytest.param("mmlu", lambda s: _with(s, ("answer",), "AB"), "answer", "is not one of the choice letters",
                 id="mmlu-two-letter-answer"),
    pytest.param("crag", lambda s: _with(s, ("extra",), json.loads("[" * 150 + "]" * 150)), "extra",
                 "nested deeper than 100 levels", id="crag-150-deep-extra-field"),
    pytest.param("medqa", lambda s: _with(s, ("extra",), 10**400), "extra", "64 bits", id="medqa-400-digit-number"),
]


@pytest.mark.parametrize("case, change, field, message", ODD_RECORDS)
@pytest.mark.parametrize("layout", ["jsonl", "json"])
def test_odd_records_are_line_field_errors(engine, tmp_path, layout, case, change, field, message):
    path = write(tmp_path / "in", case, [json.loads(seeds(case)[0]), change(seeds(case)[1])], layout)
    errors = check_import(engine, path, _fmt(case))
    assert [(e.field.startswith(field), message in e.message) for e in errors] == [(True, True)], [str(e) for e in errors]


# --------------------------------------------------------------------------- property tests

RAW = st.sampled_from(["1" * 400, "-" + "9" * 400, "1e999", "-1e400", "NaN", "Infinity", "1.5e-400", "0.0", "-0",
                       '"\\u0000"', '"\\ud800"', "{}", "[]", "null", "true"]) \
    | st.integers(1, 3000).map(lambda n: "[" * n + "]" * n) \
    | st.integers(1, 3000).map(lambda n: '{"a":' * n + "1" + "}" * n)
LEAF = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=30)
VALUES = st.recursive(LEAF, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)


def paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside `value` (dict keys and list indexes), the record itself first."""
    found = [prefix]
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        found += paths(child, (*prefix, key))
    return found


@st.composite
def odd_record(draw, case: str) -> str:
    """One seed record with a value replaced, a field dropped or added, as JSON text (raw text for odd numbers)."""
    record = json.loads(draw(st.sampled_from(seeds(case))))
    path = draw(st.sampled_from(paths(record)))
    operation = draw(st.sampled_from(["replace", "raw", "drop", "add"]))
    if not path:
        return draw(RAW) if operation == "raw" else json.dumps(draw(VALUES))
    parent = record
    for step in path[:-1]:
        parent = parent[step]
    if operation == "drop" and isinstance(parent, dict):
        del parent[path[-1]]
    elif operation == "add" and isinstance(parent, dict):
        parent[draw(st.text(max_size=8))] = draw(VALUES)
    else:
        parent[path[-1]] = HOLE if operation == "raw" else draw(VALUES)
    return json.dumps(record, ensure_ascii=False).replace(json.dumps(HOLE, ensure_ascii=False), draw(RAW))


def file_text(records: list[str], layout: str) -> str:
    if layout == "json":
        return "[\n" + ",\n".join(records) + "\n]\n"
    return "".join(r + "\n" for r in records)


@st.composite
def odd_row(draw) -> list[str]:
    """A seed MMLU CSV row with cells replaced, dropped or added."""
    row = json.loads(draw(st.sampled_from(seeds("mmlu-csv"))))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(row)))
        operation = draw(st.sampled_from(["replace", "drop", "add"]))
        cell = draw(st.text(max_size=30) | RAW)
        if operation == "add" or at == len(row):
            row.insert(at, cell)
        elif operation == "drop":
            del row[at]
        else:
            row[at] = cell
    return row


@SETTINGS
@given(st.lists(odd_row(), min_size=1, max_size=3))
def test_any_mmlu_csv_row_is_imported_or_line_errors(engine, tmp_path_factory, rows):
    path = write(tmp_path_factory.mktemp("fuzz"), "mmlu-csv", rows, "csv")
    check_import(engine, path, "mmlu")


@pytest.mark.parametrize("case", [name for name in SOURCES if name != "mmlu-csv"])
def test_any_record_shape_is_imported_or_line_errors(engine, tmp_path_factory, case):
    layouts = ["jsonl"] if case == "jsonl" else ["json", "jsonl"]

    @SETTINGS
    @given(st.lists(odd_record(case), min_size=1, max_size=3), st.sampled_from(layouts))
    def run(records, layout):
        path = tmp_path_factory.mktemp("fuzz") / (SOURCES[case]().stem + ".json")
        path.write_text(file_text(records, layout), encoding="utf-8", errors="surrogatepass")
        check_import(engine, path, _fmt(case))

    run()


@pytest.mark.parametrize("case", TEN)
def test_any_cut_or_tail_of_a_json_array_fails_with_a_position(engine, tmp_path_factory, case):
    text = _array(case)

    @SETTINGS
    @given(st.integers(1, len(text.rstrip()) - 1), st.text(min_size=1, max_size=20).filter(lambda t: t.strip()),
           st.booleans())
    def run(cut, tail, truncate):
        broken = text[:cut] if truncate else text + tail
        path = tmp_path_factory.mktemp("cut") / "data.json"
        path.write_text(broken, encoding="utf-8", errors="surrogatepass")
        assert check_import(engine, path, _fmt(case)), f"imported a broken file: {broken[-80:]!r}"

    run()
