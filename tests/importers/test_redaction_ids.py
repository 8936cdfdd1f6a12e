"""`--redact` covers every stored text field, ids included: emails in trace ids, span ids, retrieved-document ids and
the file (hence service) name never reach the database; each becomes a stable pseudonym, so the two traces that
retrieved the same document still share its id, and the spans the instance names are its own."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select
from sqlmodel import Session, SQLModel
from typer.testing import CliRunner

from core.cli import app
from core.ingest.importers.redaction import Redactor
from core.ingest.sets import set_slug
from core.store.models import Document, Instance

PII = ("maria.keller@example.org", "bob.smith@example.com", "7946 0958")
DOC_ID = "kb/maria.keller@example.org/returns.md"


def _spans(trace_id: str, root: str, question: str) -> list[dict]:
    return [
        {"context": {"trace_id": trace_id, "span_id": root}, "span_kind": "CHAIN",
         "attributes": {"input.value": question, "output.value": "Within 30 days."}},
        {"context": {"trace_id": trace_id, "span_id": f"ret/{root}"}, "parent_id": root, "span_kind": "RETRIEVER",
         "attributes": {"retrieval.documents.0.document.content": "Returns are accepted within 30 days.",
                        "retrieval.documents.0.document.id": DOC_ID, "retrieval.documents.0.document.score": 0.9,
                        "retrieval.documents.1.document.content": "Call +44 20 7946 0958 for help.",
                        "retrieval.documents.1.document.id": "phone/+44 20 7946 0958", "retrieval.documents.1"
                        ".document.score": 0.5}},
    ]


@pytest.fixture
def export(tmp_path):
    path = tmp_path / "support:maria.keller@example.org.jsonl"
    spans = _spans("case:maria.keller@example.org", "root:bob.smith@example.com", "Can I return boots?") + \
        _spans("case:bob.smith@example.com", "root:2", "And sandals?")
    path.write_text("".join(json.dumps(s) + "\n" for s in spans), encoding="utf-8")
    return path


def _stored_texts(engine) -> str:
    """Every row of every table, as text."""
    rows = []
    with engine.connect() as conn:
        for table in SQLModel.metadata.sorted_tables:
            rows += [json.dumps([str(v) for v in row]) for row in conn.execute(select(table))]
    return "\n".join(rows)


@pytest.mark.parametrize(("flag", "stored"), [pytest.param(["--redact"], False, id="redacted"),
                                              pytest.param([], True, id="not-redacted")])
def test_no_identifier_keeps_personal_data_when_redacting(engine, export, flag, stored):
    result = CliRunner().invoke(app, ["import", "--format", "openinference", str(export), *flag])
    assert result.exit_code == 0, result.output
    dump = _stored_texts(engine)
    assert [p for p in PII if p in dump] == (list(PII) if stored else [])


def test_pseudonyms_keep_the_links_between_traces_spans_and_documents(engine, export, monkeypatch):
    monkeypatch.setenv("GAUNTLET_REDACTION_KEY", "test key")
    result = CliRunner().invoke(app, ["import", "--format", "openinference", str(export), "--redact"])
    assert result.exit_code == 0, result.output
    redactor = Redactor(b"test key")
    pseudonym, same = redactor.pseudonym, redactor.pseudonymous
    with Session(engine) as session:
        instances = {i.uid: i for i in session.exec(select(Instance)).scalars()}
        documents = session.exec(select(Document)).scalars().all()
    service = same("support:maria.keller@example.org")
    assert service == f"support:{pseudonym('email', 'maria.keller@example.org')}"
    first = f"trace/{set_slug(service)}/{same('case:maria.keller@example.org')}"
    second = f"trace/{set_slug(service)}/{same('case:bob.smith@example.com')}"
    assert sorted(instances) == sorted([first, second])
    trace = instances[first].meta["trace"]
    root = same("root:bob.smith@example.com")
    assert trace["spans"] == {"question": root, "answer": root, "documents": f"ret/{root}"}
    assert trace["trace_id"] == same("case:maria.keller@example.org") and trace["service"] == service
    assert trace["file"] == same("support:maria.keller@example.org.jsonl")
    shared = f"kb/{pseudonym('email', 'maria.keller@example.org')}/returns.md"
    by_source: dict[str, set[int]] = {}
    for doc in documents:
        by_source.setdefault(doc.source, set()).add(doc.instance_id)
    assert by_source[shared] == {instances[first].id, instances[second].id}  # one document, both traces
    assert f"phone/{pseudonym('phone', '+44 20 7946 0958')}" in by_source
    assert "redacted " in result.output


def test_a_pseudonym_is_stable_for_a_value_and_distinct_between_values():
    redactor = Redactor(b"k")
    same = redactor.pseudonymous("a/ana@example.org/1"), redactor.pseudonymous("b/ana@example.org/2")
    assert same[0].split("/")[1] == same[1].split("/")[1] == redactor.pseudonym("email", "ana@example.org")
    assert redactor.pseudonymous("x@example.org") != redactor.pseudonymous("y@example.org")
    assert Redactor(b"other").pseudonymous("x@example.org") != redactor.pseudonymous("x@example.org")
    assert redactor.counts["email"] == 5
