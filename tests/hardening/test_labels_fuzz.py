"""Property tests of the labels importer: for arbitrary JSON lines and arbitrary Unicode it never raises, never writes
part of a file, reports every problem as `line N: field: message`, and export -> import is the identity."""

from __future__ import annotations

import json
import re
from pathlib import Path
from tempfile import TemporaryDirectory

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlmodel import Session, func, select

from core.review.annotations import export_annotations
from core.review.label_import import import_annotations
from core.store.models import Annotation
from tests.hardening.labels_lines import changed, gold_line, valid_lines
from tests.workspace_factories import seeded_db

ERROR = re.compile(r"^line \d+: \S.*: .+", re.DOTALL)
SETTINGS = settings(max_examples=120, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
FIELDS = ["kind", "target_type", "target_id", "target_ref", "target_ref.model", "author", "payload",
          "payload.constraints", "payload.constraints.c1", "payload.note", "payload.valid_refusal",
          "guidelines_version", "client_token", "created_at"]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    return seeded_db(tmp_path_factory.mktemp("fuzz"))


def _count(engine) -> int:
    with Session(engine) as s:
        return s.exec(select(func.count()).select_from(Annotation)).one()


def _import(seeded, text: str):
    with TemporaryDirectory() as folder:
        path = Path(folder) / "in.jsonl"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        before = _count(seeded.engine)
        report = import_annotations(seeded.engine, path, cli=True)
        after = _count(seeded.engine)
    for error in report.errors:
        assert ERROR.match(str(error)), str(error)
    if report.errors:
        assert after == before, "a file with errors wrote rows"
    else:
        assert after == before + report.imported
    return report


@SETTINGS
@given(lines=st.lists(JSON.map(json.dumps) | st.text(), max_size=4))
def test_arbitrary_lines_never_raise_nor_write_partially(seeded, lines):
    _import(seeded, "\n".join(lines))


@SETTINGS
@given(field=st.sampled_from(FIELDS), value=JSON, token=st.uuids())
def test_mutated_valid_lines_never_raise_nor_write_partially(seeded, field, value, token):
    good = changed(gold_line(seeded), "client_token", f"fuzz-ok-{token}")
    mutated = changed(changed(gold_line(seeded), "client_token", f"fuzz-{token}"), field, value)
    _import(seeded, json.dumps(good) + "\n" + json.dumps(mutated) + "\n")


@pytest.mark.db  # the database is reached inside the hypothesis-wrapped body, which collection cannot read
@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(note=st.text(), author=st.text(min_size=1).filter(lambda a: a.strip() and a.isprintable()))
def test_export_import_round_trip_is_the_identity(tmp_path_factory, note, author):
    folder = tmp_path_factory.mktemp("rt")
    (folder / "a").mkdir()
    (folder / "b").mkdir()
    first, second = seeded_db(folder / "a"), seeded_db(folder / "b")
    rows = [changed(changed(line, "author", author), "payload.note", note) if line["kind"] != "verification"
            else changed(line, "author", author) for line in valid_lines(first)]
    source = folder / "source.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert import_annotations(first.engine, source, cli=True).ok
    out1, out2 = folder / "one.jsonl", folder / "two.jsonl"
    export_annotations(first.engine, out1)
    report = import_annotations(second.engine, out1, cli=True)
    assert report.ok and report.imported == len(rows), [str(e) for e in report.errors]
    export_annotations(second.engine, out2)
    assert out1.read_bytes() == out2.read_bytes()
    with Session(first.engine) as s1, Session(second.engine) as s2:
        fields = lambda a: (a.kind, a.target_type, a.target_id, a.author, a.payload, a.guidelines_version,  # noqa: E731
                            a.client_token, a.created_at)
        assert [fields(a) for a in s1.exec(select(Annotation).order_by(Annotation.id))] == \
               [fields(a) for a in s2.exec(select(Annotation).order_by(Annotation.id))]
