"""Production traces end to end on the active backend: `gauntlet import --format otel|openinference|langfuse|phoenix`
makes a set plus a run as deployed, `gauntlet score` scores it, and the items reach the experts' verification and
labelling queues (`gauntlet traces sample`), with redaction counts shown. The published files and their sources are
listed in tests/importers/test_traces.py and tests/fixtures/traces/README.md.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from sqlmodel import Session, col, select
from typer.testing import CliRunner

from core.cli import app
from core.review.auth import Principal, create_user
from core.review.gold import gold_queue
from core.review.verification import verification_queue
from core.store.models import Assignment, BenchmarkSet, Document, Instance, Model, Response, Run, Verdict
from tests.conftest import FIXTURES

runner = CliRunner()
TRACES = FIXTURES / "traces"
SERVICE = "support-bot"
STATES = {"ok", "not_applicable", "error"}


def _expert(engine, name: str) -> Principal:
    create_user(engine, name, "expert", password=f"{name}-pass-123", domains=[SERVICE])
    now = datetime.now(UTC)
    return Principal(name, "expert", (SERVICE,), now, now)


def _import(fmt: str, name: str, *extra: str):
    return runner.invoke(app, ["import", "--format", fmt, str(TRACES / name), "--service", SERVICE,
                               "--set", f"prod {name}", *extra])


@pytest.mark.parametrize(
    ("fmt", "name", "traces", "documents", "redacted"),
    [
        pytest.param("phoenix", "phoenix_llama_index_rag_spans.jsonl", 1, 2, "redacted 0 email(s), 0 phone number(s), "
                     "0 name(s)", id="phoenix-published"),
        pytest.param("langfuse", "langfuse_llamaindex-2025-06-05.json", 1, 0, "redacted 0 email(s), 0 phone number(s), "
                     "0 name(s)", id="langfuse-published"),
        pytest.param("openinference", "openinference_spec_traces.jsonl", 1, 0, "redacted 0 email(s), 0 phone "
                     "number(s), 0 name(s)", id="openinference-published"),
        pytest.param("otel", "otel_langwatch_openai_requests.jsonl", 2, 0, "redacted 0 email(s), 0 phone number(s), "
                     "0 name(s)", id="otel-published-langwatch"),
        pytest.param("otel", "otel_rag_export.json", 3, 6, "redacted 1 email(s), 1 phone number(s), 1 name(s)",
                     id="otel-paired"),
        pytest.param("langfuse", "langfuse_rag_traces.jsonl", 2, 3, "redacted 1 email(s), 1 phone number(s), 1 name(s)",
                     id="langfuse-paired"),
        pytest.param("openinference", "openinference_rag_spans.jsonl", 2, 4, "redacted 1 email(s), 0 phone number(s), "
                     "1 name(s)", id="openinference-paired"),
    ],
)
def test_a_trace_export_imports_scores_and_reaches_the_experts(engine, fmt, name, traces, documents, redacted) -> None:
    imported = _import(fmt, name, "--redact")
    assert imported.exit_code == 0, imported.output
    assert f"{traces} traces, {documents} retrieved documents" in imported.output and redacted in imported.output
    with Session(engine) as session:
        run = session.exec(select(Run)).one()
        responses = session.exec(select(Response).where(Response.run_id == run.id)).all()
        model = session.get(Model, responses[0].model_id)
        ranks = [d.variant["rank"] for d in session.exec(select(Document).order_by(Document.instance_id, Document.position))]
    assert (run.status, model.name, len(responses)) == ("done", f"deployed:{SERVICE}", traces)
    assert all(r.status == "done" and r.text for r in responses)
    assert len(ranks) == documents and all(rank >= 1 for rank in ranks)

    scored = runner.invoke(app, ["score", str(run.id), "--judge", "heuristic"])
    assert scored.exit_code == 0, scored.output
    with Session(engine) as session:
        verdicts = session.exec(select(Verdict.metric, Verdict.status).where(Verdict.run_id == run.id)).all()
    assert sorted({m for m, _ in verdicts}) == ["coverage", "faithfulness"] and {s for _, s in verdicts} <= STATES
    assert len(verdicts) == 2 * traces
    assert not documents or ("faithfulness", "ok") in verdicts  # judged against the documents, no reference needed
    shown = runner.invoke(app, ["report", str(run.id), "--judge", "heuristic", "--format", "json"])
    cells = {(r["model"], r["metric"]): r for r in json.loads(shown.stdout)["production_metrics"]}
    for metric in ("faithfulness", "coverage"):
        cell = cells[(f"deployed:{SERVICE}", metric)]
        assert (cell["n"], cell["n_not_applicable"]) == (verdicts.count((metric, "ok")),
                                                         verdicts.count((metric, "not_applicable")))
        assert cell["n"] == 0 or 0 <= cell["ci_low"] <= cell["value"] <= cell["ci_high"] <= 1

    alice, _ = _expert(engine, "alice"), _expert(engine, "bob")
    create_user(engine, "admin", "admin", password="admin-pass-123")
    with Session(engine) as session:
        instance_ids = {r.instance_id for r in responses}
    assert instance_ids <= set(verification_queue(engine, alice, overlap=0.0).instance_ids)
    sampled = runner.invoke(app, ["traces", "sample", str(run.id), "--n", "1", "--seed", "3"])
    assert sampled.exit_code == 0, sampled.output
    labelling = gold_queue(engine, alice).instance_ids  # response ids waiting for alice's label
    with Session(engine) as session:
        kinds = session.exec(select(Assignment.kind, Assignment.probability).where(
            Assignment.assignee == "alice")).all()
    assert len(labelling) == 1 and labelling[0] in {r.id for r in responses}
    assert sorted(k for k, _ in kinds) == ["gold_label", "verification"]
    (probability,) = {p for _, p in kinds}  # the verification and the label carry the item's one probability
    assert 0 < probability <= 1


def test_the_published_otel_example_is_refused_with_file_line_and_field(db_url) -> None:
    result = runner.invoke(app, ["import", "--format", "otel", str(TRACES / "otel_example_trace.json")])
    assert result.exit_code == 1
    assert "otel_example_trace.json:31: input.value: trace 5B8EFFF798038103D269B633813FC60C: no user question" in result.output
    assert "nothing imported; the database is unchanged" in result.output


def test_one_bad_trace_imports_nothing(engine, tmp_path) -> None:
    good = (TRACES / "openinference_rag_spans.jsonl").read_text(encoding="utf-8")
    bad = '{"context": {"trace_id": "t-bad", "span_id": "s"}, "attributes": {"input.value": "Where?"}}\n'
    path = tmp_path / "mixed.jsonl"
    path.write_text(good + bad, encoding="utf-8")
    result = runner.invoke(app, ["import", "--format", "openinference", str(path)])
    assert result.exit_code == 1 and "mixed.jsonl:6: output.value: trace t-bad: no generated answer" in result.output
    with Session(engine) as session:
        assert session.exec(select(Instance)).all() == [] and session.exec(select(Run)).all() == []
        assert session.exec(select(BenchmarkSet)).all() == []


@pytest.mark.parametrize(("flag", "stored"), [pytest.param(["--redact"], False, id="redacted"),
                                              pytest.param([], True, id="not-redacted")])
def test_redaction_runs_before_anything_is_stored(engine, flag, stored) -> None:
    result = _import("otel", "otel_rag_export.json", *flag)
    assert result.exit_code == 0, result.output
    with Session(engine) as session:
        texts = [i.query for i in session.exec(select(Instance))] + \
                [r.text for r in session.exec(select(Response))] + [d.text for d in session.exec(select(Document))]
        meta = session.exec(select(Instance.meta).where(col(Instance.uid).contains("4700"))).one()
    found = any("maria.keller@example.org" in t or "7946 0958" in t or "Maria Keller" in t for t in texts)
    assert found is stored
    assert ("redactions" in meta) is not stored


def test_a_deployed_model_cannot_be_run_again(engine) -> None:
    from core.generation.runs import RunOptions, create_run

    assert _import("otel", "otel_rag_export.json").exit_code == 0
    with pytest.raises(ValueError, match="deployed:support-bot holds a deployed system's imported answers"):
        create_run(engine, RunOptions(models=[f"deployed:{SERVICE}"]))


@pytest.mark.parametrize(
    ("name", "flag", "code", "shown"),
    [
        pytest.param("mixed", [], 1, "mixed.jsonl:6: output.value: trace t-bad: no generated answer", id="atomic-by-default"),
        pytest.param("mixed", ["--skip-incomplete"], 0, "left out: ", id="incomplete-left-out-and-listed"),
        pytest.param("published-otel", ["--skip-incomplete"], 1, "no trace has a question and an answer (2 problem(s) of incomplete traces)",
                     id="nothing-left-imports-nothing"),
    ],
)
def test_incomplete_traces_can_be_left_out_on_request(engine, tmp_path, name, flag, code, shown) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_text((TRACES / "openinference_rag_spans.jsonl").read_text(encoding="utf-8") +
                    '{"context": {"trace_id": "t-bad", "span_id": "s"}, "attributes": {"input.value": "Where?"}}\n',
                    encoding="utf-8")
    target = (path, "openinference") if name == "mixed" else (TRACES / "otel_example_trace.json", "otel")
    result = runner.invoke(app, ["import", "--format", target[1], str(target[0]), *flag])
    assert result.exit_code == code and shown in result.output
    with Session(engine) as session:
        assert len(session.exec(select(Instance)).all()) == (2 if code == 0 else 0)
