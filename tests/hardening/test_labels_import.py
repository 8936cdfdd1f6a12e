"""`gauntlet labels import` hardening: typed per-kind validation, all-or-nothing, `line N: field.path: message` and a
non-zero exit (never a traceback); export -> import is the identity for any Unicode; pages survive malformed rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import Session, func, select
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from core.cli import app as cli_app
from core.review.annotations import export_annotations
from core.review.gold import draw_gold_sample, record_gold_label
from core.review.label_import import import_annotations
from core.store.models import Annotation
from tests.hardening.labels_lines import (
    changed,
    gold_line,
    instance_adjudication_line,
    jsonl,
    valid_lines,
    verification_line,
)
from tests.workspace_factories import principal, seeded_db

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def seeded(tmp_path, monkeypatch):
    s = seeded_db(tmp_path)
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", s.url)
    return s


def _count(engine) -> int:
    with Session(engine) as s:
        return s.exec(select(func.count()).select_from(Annotation)).one()


BAD_LINES = [
    pytest.param(lambda s: changed(gold_line(s), "payload.constraints", "garbage"), "payload.constraints",
                 id="constraints-not-an-object"),
    pytest.param(lambda s: changed(gold_line(s), "payload.constraints.c1", "yes"), "payload.constraints.c1",
                 id="constraint-answer-not-binary"),
    pytest.param(lambda s: changed(gold_line(s), "payload.constraints", {"c1": True}), "payload.constraints",
                 id="gold-rules-missing-constraint"),
    pytest.param(lambda s: changed(gold_line(s), "payload.valid_refusal", 1), "payload.valid_refusal",
                 id="gold-rules-refusal-on-noisy"),
    pytest.param(lambda s: changed(gold_line(s), "payload", [1, 2]), "payload", id="payload-not-an-object"),
    pytest.param(lambda s: changed(gold_line(s), "payload.surprise", 1), "payload.surprise", id="unknown-payload-field"),
    pytest.param(lambda s: changed(gold_line(s), "target_ref", "x"), "target_ref", id="target-ref-not-an-object"),
    pytest.param(lambda s: changed(gold_line(s), "target_ref.model", "model-b"), "target_ref",
                 id="target-ref-names-another-response"),
    pytest.param(lambda s: changed(verification_line(s), "target_ref.instance_uid", ["E-gap"]),
                 "target_ref.instance_uid", id="target-ref-uid-not-text"),
    pytest.param(lambda s: changed(verification_line(s), "target_ref.instance_version", 7), "target_ref",
                 id="target-ref-unknown-version"),
    pytest.param(lambda s: changed(gold_line(s), "target_id", 2**70), "target_id", id="target-id-out-of-range"),
    pytest.param(lambda s: changed(gold_line(s), "target_id", True), "target_id", id="target-id-boolean"),
    pytest.param(lambda s: changed(gold_line(s), "target_id", 10_000), "target_id", id="target-id-unknown"),
    pytest.param(lambda s: json.dumps(gold_line(s)).replace('"alice"', '"al\\ud800ice"'), "author",
                 id="author-lone-surrogate"),
    pytest.param(lambda s: changed(gold_line(s), "author", "al\u0000ice"), "author", id="author-control-character"),
    pytest.param(lambda s: changed(gold_line(s), "author", "  "), "author", id="author-blank"),
    pytest.param(lambda s: changed(gold_line(s), "target_type", "instance"), "target_type",
                 id="gold-label-on-an-instance"),
    pytest.param(lambda s: changed(gold_line(s), "created_at", 12345), "created_at", id="created-at-number"),
    pytest.param(lambda s: changed(gold_line(s), "created_at", "soon"), "created_at", id="created-at-not-iso"),
    pytest.param(lambda s: changed(gold_line(s), "client_token", {}), "client_token", id="client-token-object"),
    pytest.param(lambda s: changed(gold_line(s), "surprise", 1), "surprise", id="unknown-top-level-field"),
    pytest.param(lambda s: changed(gold_line(s), "kind", "vote"), "kind", id="unknown-kind"),
    pytest.param(lambda s: changed(verification_line(s), "payload.decision", "maybe"), "payload.decision",
                 id="verification-decision"),
    pytest.param(lambda s: changed(verification_line(s), "payload.clashing_constraints", ["c9"]),
                 "payload.clashing_constraints", id="verification-rules-unknown-clash"),
    pytest.param(lambda s: changed(verification_line(s), "payload.role_corrections", {"E-gap-d1": "gold"}),
                 "payload.role_corrections.E-gap-d1", id="verification-unknown-role"),
    pytest.param(lambda s: changed(verification_line(s), "payload.role_corrections", {"nope": "noise"}),
                 "payload.role_corrections", id="verification-rules-unknown-document"),
    pytest.param(lambda s: changed(verification_line(s), "payload.constraint_edits", {"c1": "  "}),
                 "payload.constraint_edits.c1", id="verification-rules-empty-edit"),
    pytest.param(lambda s: changed(verification_line(s), "payload.instance_uid", "M-noisy"), "payload.instance_uid",
                 id="verification-payload-names-another-instance"),
    pytest.param(lambda s: changed(instance_adjudication_line(s), "payload.expert_decisions", {"alice": "maybe"}),
                 "payload.expert_decisions.alice", id="instance-adjudication-expert-decision"),
    pytest.param(lambda s: json.dumps(gold_line(s)).replace('"fine"', "NaN"), "(line)", id="nan-constant"),
    pytest.param(lambda s: "[" * 100_000, "(line)", id="deeply-nested"),
    pytest.param(lambda s: "[]", "(line)", id="not-an-object"),
    pytest.param(lambda s: "{oops", "(line)", id="not-json"),
]


@pytest.mark.parametrize("build, field", BAD_LINES)
def test_bad_line_imports_nothing_and_names_line_and_field(seeded, tmp_path, build, field):
    path = tmp_path / "in.jsonl"
    path.write_text(jsonl(verification_line(seeded, "fine-1"), build(seeded)), encoding="utf-8")
    report = import_annotations(seeded.engine, path, cli=True)
    assert [(e.line, e.field) for e in report.errors] == [(2, field)], [str(e) for e in report.errors]
    assert str(report.errors[0]).startswith(f"line 2: {field}: ")
    assert _count(seeded.engine) == 0


@pytest.mark.parametrize("build, field", BAD_LINES)
def test_cli_exits_non_zero_without_traceback(seeded, tmp_path, build, field):
    path = tmp_path / "in.jsonl"
    path.write_text(jsonl(gold_line(seeded, token="fine-2"), build(seeded)), encoding="utf-8")
    result = CliRunner().invoke(cli_app, ["labels", "import", str(path)])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output and result.stderr.startswith(f"{path}:2: {field}: "), result.stderr
    assert _count(seeded.engine) == 0


@pytest.mark.parametrize(
    "content, field",
    [
        pytest.param(b"\xff\xfe not utf-8", "(file)", id="not-utf-8"),
        pytest.param(None, "(file)", id="missing-file"),
    ],
)
def test_unreadable_file_is_an_error_not_a_traceback(seeded, tmp_path, content, field):
    path = tmp_path / "in.jsonl"
    if content is not None:
        path.write_bytes(content)
    result = CliRunner().invoke(cli_app, ["labels", "import", str(path)])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit) and "Traceback" not in result.output
    assert result.stderr.startswith(f"{path}:0: {field}: ")


def test_every_kind_imports_and_round_trips(seeded, tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text(jsonl(*valid_lines(seeded)), encoding="utf-8")
    report = import_annotations(seeded.engine, path, cli=True)
    assert report.ok and report.imported == 4, [str(e) for e in report.errors]
    out = tmp_path / "out.jsonl"
    export_annotations(seeded.engine, out)
    assert [json.loads(x) for x in out.read_text().split("\n") if x] == valid_lines(seeded)


NOTES = [
    pytest.param("line\u2028separator", id="U+2028"),
    pytest.param("para\u2029separator", id="U+2029"),
    pytest.param("next\x85line", id="U+0085"),
    pytest.param("file\x1cgroup\x1drecord\x1eseparators", id="U+001C-1E"),
    pytest.param("vertical\x0btab\x0cform feed", id="VT-FF"),
    pytest.param("carriage\rreturn", id="CR"),
    pytest.param("bidi \u202e override, emoji \U0001f9ea, BOM \ufeff", id="bidi-emoji-bom"),
]


@pytest.mark.parametrize("note", NOTES)
def test_export_import_is_the_identity_for_any_unicode(seeded, tmp_path, note):
    draw_gold_sample(seeded.engine, principal("admin"), seeded.run_id, n=8, experts=["alice", "bob"])
    rid = seeded.responses[("model-a", "E-noisy")]
    record_gold_label(seeded.engine, principal("alice"), rid, {"constraints": {"c1": True, "c2": False}, "note": note}, "t1")
    first = tmp_path / "first.jsonl"
    assert export_annotations(seeded.engine, first) == 1
    (tmp_path / "other").mkdir()
    other = seeded_db(tmp_path / "other")
    report = import_annotations(other.engine, first, cli=True)
    assert report.ok and report.imported == 1, [str(e) for e in report.errors]
    second = tmp_path / "second.jsonl"
    export_annotations(other.engine, second)
    assert second.read_bytes() == first.read_bytes()
    with Session(other.engine) as s:
        assert s.exec(select(Annotation)).one().payload["note"] == note


def _store_raw(engine, **fields) -> None:
    with Session(engine) as s:
        s.add(Annotation(**fields))
        s.commit()


@pytest.mark.parametrize("page", ["pages/adjudicate.py", "pages/judge_alignment.py"])
def test_pages_render_with_malformed_rows_in_the_database(seeded, page):
    draw_gold_sample(seeded.engine, principal("admin"), seeded.run_id, n=8, experts=["alice", "bob"])
    rid = seeded.responses[("model-a", "E-noisy")]
    record_gold_label(seeded.engine, principal("alice"), rid, {"constraints": {"c1": True, "c2": True}}, "a1")
    record_gold_label(seeded.engine, principal("bob"), rid, {"constraints": {"c1": True, "c2": False}}, "b1")
    other = seeded.responses[("model-b", "E-noisy")]
    _store_raw(seeded.engine, kind="gold_label", target_type="response", target_id=other, author="alice",
               payload={"constraints": "garbage"}, client_token="bad-1")
    _store_raw(seeded.engine, kind="gold_label", target_type="response", target_id=other, author="bob",
               payload={"constraints": {"c1": True, "c2": True}}, client_token="ok-bob")
    _store_raw(seeded.engine, kind="adjudication", target_type="response", target_id=other, author="admin",
               payload=["not", "an", "object"], client_token="bad-2")
    _store_raw(seeded.engine, kind="verification", target_type="instance", target_id=seeded.instances["E-gap"],
               author="alice", payload={"decision": "accept", "role_corrections": "x"}, client_token="bad-3")
    at = AppTest.from_file(str(ROOT / page), default_timeout=30)
    at.session_state["gauntlet_principal"] = principal("admin")
    at.session_state["adj_tab"] = "Disagreements"  # Adjudicate's tab with the disagreement count
    at.run()
    assert not at.exception, at.exception
    if page == "pages/adjudicate.py":  # the admin's page says what was skipped; every reader skips it
        assert any("3 stored labels are malformed" in w.value for w in at.warning), [w.value for w in at.warning]
        assert any("1 disagreements wait for a decision." in c.value for c in at.caption)
