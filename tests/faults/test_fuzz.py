"""Property tests: the benchmark importer (validate + atomic import) and the judge-output parser never raise on
any input and never write part of a file; table-driven hostile inputs the issue found (100,000-deep nesting, a
10^30 version, NaN / Infinity, NUL characters, over-long ids) are readable line errors."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from sqlalchemy import func
from sqlmodel import Session, select

from core.config import REPO_ROOT
from core.ingest.io import import_specs, validate_lines
from core.scoring.judges.parsing import extract_json_object, looks_like_judge_refusal, parse_reply
from core.store.db import make_engine
from core.store.models import Constraint, Document, Domain, Instance

SAMPLE = (REPO_ROOT / "data" / "sample" / "enterprise_rag_sample.jsonl").read_text(encoding="utf-8").splitlines()
ERROR = re.compile(r"^line \d+: .+", re.DOTALL)
SETTINGS = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])
LEAF = st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80) | st.floats() | st.text()
JSON = st.recursive(LEAF, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                        max_size=4), max_leaves=16)
PATHS = ["id", "domain", "query", "mode", "version", "protocol", "status", "language", "metadata", "metadata.x",
         "constraints", "constraints.0", "constraints.0.checker_kwargs", "constraints.0.text", "documents",
         "documents.0", "documents.0.text", "documents.0.doc_id", "reference", "attributes", "attributes.history"]


@pytest.fixture(scope="module")
def engine(session_url_factory):
    eng = make_engine(session_url_factory())
    yield eng
    eng.dispose()


def rows(engine) -> tuple[int, ...]:
    with Session(engine) as session:
        return tuple(session.exec(select(func.count()).select_from(table)).one()
                     for table in (Instance, Constraint, Document, Domain))


def mutate(record: dict, path: str, value: object) -> dict:
    """`record` with the value at a dotted path (list indexes as numbers) replaced, parents created as needed."""
    record = json.loads(json.dumps(record))
    *parents, last = path.split(".")
    node = record
    for part in parents:
        key = int(part) if isinstance(node, list) else part
        if isinstance(node, list) and not (0 <= key < len(node)):
            return record
        if isinstance(node, dict) and not isinstance(node.get(key), dict | list):
            node[key] = {}
        node = node[key]
    if isinstance(node, list):
        if last.isdigit() and int(last) < len(node):
            node[int(last)] = value
    else:
        node[last] = value
    return record


def import_bytes(engine, data: bytes, uid_prefix: str) -> None:
    """Validate and import `data`: never raises, errors are line errors, and a failed import writes nothing."""
    before = rows(engine)
    report = validate_lines(data)
    for error in report.errors:
        assert ERROR.match(str(error)), str(error)
    if not report.ok:
        return
    specs = [(n, s.model_copy(update={"id": f"{uid_prefix}-{s.id}"[:256]})) for n, s in report.instances]
    result = import_specs(engine, specs)
    after = rows(engine)
    if result.errors:
        assert after == before, "a failed import wrote rows"
    else:
        assert after[0] == before[0] + len(result.created)


@SETTINGS
@given(st.sampled_from(SAMPLE), st.sampled_from(PATHS), JSON, st.integers(0, 10**9))
def test_importer_survives_any_field_value(engine, line, path, value, salt):
    record = mutate(json.loads(line), path, value)
    import_bytes(engine, (json.dumps(record, allow_nan=True) + "\n").encode("utf-8", "surrogatepass"), f"f{salt}")


@SETTINGS
@given(st.binary(max_size=400) | st.text(max_size=400).map(lambda t: t.encode("utf-8", "surrogatepass")),
       st.integers(0, 10**9))
def test_importer_survives_any_bytes(engine, data, salt):
    import_bytes(engine, data, f"b{salt}")


@pytest.mark.parametrize("line, field, message", [
    pytest.param("[" * 100_000 + "]" * 100_000, "", "nested too deeply", id="100000-deep-array"),
    pytest.param(json.dumps(mutate(json.loads(SAMPLE[0]), "metadata.deep", json.loads("[" * 150 + "]" * 150))),
                 "metadata.deep", "nested deeper than 100 levels", id="150-deep-metadata"),
    pytest.param(json.dumps(mutate(json.loads(SAMPLE[0]), "version", 10**30)), "version", "", id="version-10^30"),
    pytest.param(SAMPLE[0].replace('"version": 1', '"version": 1, "metadata": {"x": NaN}'), "", "NaN is not valid",
                 id="nan"),
    pytest.param(SAMPLE[0].replace('"version": 1', '"version": 1, "metadata": {"x": 1e999}'), "",
                 "out of range", id="infinity-by-overflow"),
    pytest.param(json.dumps(mutate(json.loads(SAMPLE[0]), "query", "a\u0000b")), "query", "NUL character",
                 id="nul-in-query"),
    pytest.param(json.dumps(mutate(json.loads(SAMPLE[0]), "id", "x" * 300)), "id", "at most 256", id="long-id"),
    pytest.param(json.dumps(mutate(json.loads(SAMPLE[0]), "metadata.s", "\ud800")), "metadata.s",
                 "unpaired surrogate", id="lone-surrogate"),
    pytest.param(json.dumps(mutate(json.loads(SAMPLE[0]), "metadata.n", 2**70)), "metadata.n", "64 bits",
                 id="integer-beyond-64-bits"),
])
def test_hostile_lines_are_readable_errors(engine, line, field, message):
    before = rows(engine)
    report = validate_lines((line + "\n").encode("utf-8", "surrogatepass"))
    assert not report.ok and rows(engine) == before
    assert any(e.field.startswith(field) and message in e.message for e in report.errors), [str(e) for e in report.errors]


class Verdict(BaseModel):
    verdict: bool
    reason: str = ""


REPLIES = (st.text(max_size=300)
           | JSON.map(lambda v: json.dumps(v, allow_nan=True))
           | st.builds(lambda pre, obj, post: f"{pre}```json\n{json.dumps(obj)}\n```{post}",
                       st.text(max_size=20), JSON, st.text(max_size=20))
           | st.integers(1, 5000).map(lambda n: "{" * n + '"a": [' * n))


@SETTINGS
@given(REPLIES)
def test_judge_output_parser_never_raises(reply):
    obj = extract_json_object(reply)
    assert obj is None or isinstance(obj, dict)
    value, problem = parse_reply(reply, Verdict)
    assert (value is None) == bool(problem)
    assert isinstance(looks_like_judge_refusal(reply), bool)


@pytest.mark.parametrize("reply, expected", [
    pytest.param("[" * 100_000, None, id="100000-deep"),
    pytest.param('{"verdict": ' + "1" * 5000 + "}", None, id="5000-digit-number"),
    pytest.param('noise {"verdict": true, "reason": "ok"} tail', {"verdict": True, "reason": "ok"}, id="embedded"),
])
def test_judge_output_parser_hostile_replies(reply, expected):
    assert extract_json_object(reply) == expected
