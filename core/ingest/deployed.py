"""Production traces into the benchmark: a named set of instances plus a run "as deployed" holding the answers the
production system gave, so `gauntlet score RUN` scores them like any run and candidate models can be run on the
same set.

One transaction: the set, its instances, the `deployed:<service>` model, the run and its done responses commit
together or not at all. The optional redaction pass runs before anything is built, so no personal data it catches
reaches the database; its counts are kept on the run's config and each instance's metadata.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from core.ingest.importers.redaction import Redactor
from core.ingest.importers.traces import Trace, read_trace_parts
from core.ingest.io import LineError, validate_lines
from core.ingest.sets import SetImportReport, import_set, set_slug
from core.store.db import saved_id
from core.store.models import Model, Response, Run, utc_now
from core.store.schema import InstanceSpec

PROTOCOL = "production_rag"
DEPLOYED_PREFIX = "deployed:"
DEPLOYED_PROVIDER = "deployed"


@dataclass
class TraceImportReport:
    """What importing a trace export did: the set, the deployed run, the traces, redaction counts, or the errors."""

    set_report: SetImportReport | None = None
    run_id: int | None = None
    model: str = ""
    traces: int = 0
    documents: int = 0
    redactions: dict[str, int] | None = None  # None: no redaction pass was asked for
    left_out: list[LineError] = field(default_factory=list)  # incomplete traces skipped on request, with why
    errors: list[LineError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def deployed_model_name(service: str) -> str:
    """The model a deployed service's answers are recorded under: 'deployed:<service>'."""
    return f"{DEPLOYED_PREFIX}{service}"


def _same(text: str) -> str:
    return text


def trace_payload(trace: Trace, fmt: str, service: str, source: str, clean, clean_id=_same) -> dict[str, Any]:
    """The instance payload of one trace: question, documents in retrieval order (rank and score kept), provenance.
    `clean` is applied to every stored text and `clean_id` to every id taken from the trace (the redaction pass and
    its stable pseudonyms, or identity); `service` and `source` come cleaned."""
    trace_id = clean_id(trace.trace_id)
    iid = f"trace/{set_slug(service)}/{trace_id}"
    documents = [
        {"doc_id": f"{iid}#retrieval[{d.rank - 1}]", "text": clean(d.text), "source": clean_id(d.source_id),
         "role": "supporting", "variant": {"kind": "retrieved", "rank": d.rank, "score": d.score}}
        for d in trace.documents
    ]
    return {
        "id": iid, "domain": service, "query": clean(trace.question), "protocol": PROTOCOL, "documents": documents,
        "metadata": {"trace": {"format": fmt, "trace_id": trace_id, "service": service, "file": source,
                               "spans": {role: clean_id(span) for role, span in trace.spans.items()}}},
    }


def trace_specs(traces: list[Trace], fmt: str, service: str, source: str, redactor: Redactor | None
                ) -> tuple[list[tuple[int, InstanceSpec]], dict[str, str], list[LineError]]:
    """Validated instances of the traces (line = the trace's first line), their answers by instance id, errors."""
    before: dict[str, int] = {}

    def clean(text: str) -> str:
        return redactor(text) if redactor is not None else text

    payloads, answers, lines = [], {}, []
    for trace in traces:
        if redactor is not None:
            before = dict(redactor.counts)
        payload = trace_payload(trace, fmt, service, source, clean,
                                redactor.pseudonymous if redactor is not None else _same)
        answers[payload["id"]] = clean(trace.answer)
        if redactor is not None:
            payload["metadata"]["redactions"] = {k: redactor.counts[k] - before.get(k, 0) for k in redactor.summary()}
        payloads.append(payload)
        lines.append(trace.line)
    checked = validate_lines("".join(json.dumps(p) + "\n" for p in payloads).encode())
    errors = [LineError(lines[e.line - 1], e.field, e.message) for e in checked.errors]
    return [(lines[n - 1], spec) for n, spec in checked.instances], answers, errors


def _deployed_model(session: Session, service: str) -> Model:
    name = deployed_model_name(service)
    model = session.exec(select(Model).where(Model.name == name)).first()
    if model is None:
        model = Model(name=name, provider=DEPLOYED_PROVIDER, model_name=service, is_baseline=True, temperature=None,
                      settings={"deployed": True})
        session.add(model)
        session.flush()
    return model


def record_deployed_run(session: Session, member_of: dict[str, int], answers: dict[str, str], service: str,
                        config: dict[str, Any], prompt_meta: dict[str, dict[str, Any]] | None = None) -> int:
    """The run 'as deployed': one done response per instance, holding the answer the system gave (no model was
    called), under the model 'deployed:<service>'; `prompt_meta` adds to a response's prompt_meta by instance id.
    `config` names the run ('name'), the source ('file', 'format') and is kept on the run."""
    from core.generation.runs import RunOptions, code_version

    model = _deployed_model(session, service)
    now = utc_now()
    options = RunOptions(models=[model.name], name=config["name"], concurrency=1)
    run = Run(name=config["name"], status="done", config=asdict(options) | {"deployed": config},
              code_version=code_version(), started_at=now, finished_at=now,
              message=config.get("message") or f"production answers of {service} imported from {config['file']}")
    session.add(run)
    session.flush()
    session.add_all(Response(run_id=saved_id(run), model_id=saved_id(model), instance_id=instance_id, condition="",
                             status="done", text=answers[uid],
                             prompt_meta={"deployed": True, "format": config["format"],
                                          **(prompt_meta or {}).get(uid, {})}, finished_at=now)
                    for uid, instance_id in member_of.items())
    return saved_id(run)


def import_traces(engine: Engine, path: Path, fmt: str, *, set_name: str = "", service: str = "", redact: bool = False,
                  author: str = "", skip_incomplete: bool = False) -> TraceImportReport:
    """Read a trace export, (optionally) redact it, and import its traces as a new set plus a deployed run, in one
    transaction; any bad trace imports nothing, unless `skip_incomplete` leaves out (and lists) the traces that lack
    a question, an answer or a document's text. A malformed record always imports nothing."""
    path = Path(path)
    traces, errors, incomplete = read_trace_parts(path, fmt)
    left_out = incomplete if skip_incomplete else []
    errors = sorted(errors + ([] if skip_incomplete else incomplete), key=lambda e: e.line)
    if not errors and not traces:
        errors = [LineError(1, "", f"no trace has a question and an answer ({len(left_out)} problem(s) of incomplete traces)")]
    if errors:
        return TraceImportReport(left_out=left_out, errors=errors)
    service = service.strip() or next((t.service for t in traces if t.service), "") or path.stem
    redactor = Redactor() if redact else None
    service, source = (redactor.pseudonymous(service), redactor.pseudonymous(path.name)) if redactor else \
        (service, path.name)
    specs, answers, errors = trace_specs(traces, fmt, service, source, redactor)
    report = TraceImportReport(model=deployed_model_name(service), traces=len(traces),
                               documents=sum(len(t.documents) for t in traces),
                               redactions=redactor.summary() if redactor else None, left_out=left_out,
                               errors=errors)
    if errors:
        return report
    name = set_name.strip() or f"{service} traces ({source})"
    config = {"format": fmt, "file": source, "set": name, "service": service, "traces": len(traces),
              "left_out": [redactor.pseudonymous(str(e)) if redactor else str(e) for e in left_out],
              "redactions": report.redactions, "name": f"deployed {service} ({source})"}

    def record(session: Session, member_of: dict[str, int]) -> None:
        report.run_id = record_deployed_run(session, member_of, answers, service, config)

    report.set_report = import_set(engine, specs, name, on_changed="rename", origin="traces", source=source,
                                   author=author, on_members=record)
    report.errors = report.set_report.errors
    if not report.ok:
        report.run_id = None
    return report
