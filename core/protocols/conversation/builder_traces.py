"""Conversations from the team's production traces: the trace formats `gauntlet import` reads (otel, openinference,
langfuse, phoenix; core.ingest.importers.traces), each trace assembled into its question, retrieved documents and
deployed answer by the product's one assembler, then grouped into conversations by session id and ordered by start
time. Each trace becomes one turn whose history is the session's earlier questions with the answers the deployed
system gave. The session id is read from `session.id` (OpenInference), `gen_ai.conversation.id` (OpenTelemetry GenAI),
`langfuse.session.id` on any span of the trace, or a Langfuse trace's `sessionId`; a trace without one is a
conversation of its own. Every stored text passes the redaction pass and ids become pseudonyms
(core.ingest.importers.redaction), since production conversations hold personal data. A production turn has no
reference answer (answer quality: not applicable until an expert writes one) and is taken as answerable, the
retriever's claim."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.ingest.importers.redaction import Redactor, redaction_text
from core.ingest.importers.traces import (
    TRACE_FORMATS,
    Span,
    Trace,
    assemble,
    read_records,
    trace_formats,
)
from core.protocols.progress import Progress, counted

from . import NAME
from .builder_turns import turn_instance

SESSION_KEYS = ("session.id", "gen_ai.conversation.id", "langfuse.session.id")
FORMATS = tuple(trace_formats())


@dataclass(frozen=True)
class Turn:
    """One production trace as a turn: its session, when it started, and the assembled trace."""

    session: str
    start: str
    trace: Trace


def session_of(spans: list[Span], sessions: dict[str, str]) -> str:
    """The trace's session id: a session attribute on any of its spans, else the format's own field (`sessions`,
    by trace id), else ''."""
    for span in spans:
        for key in SESSION_KEYS:
            if (value := span.attributes.get(key)) not in (None, ""):
                return str(value)
    return sessions.get(spans[0].trace_id, "") if spans else ""


def langfuse_sessions(path: Path) -> dict[str, str]:
    """trace id -> sessionId of a Langfuse export (one {trace, observations}, a list, one per line, or {data: [...]})."""
    records, _ = read_records(path)
    values = [r for _, r in records]
    if len(values) == 1 and isinstance(values[0], dict) and isinstance(values[0].get("data"), list):
        values = values[0]["data"]
    out = {}
    for record in values:
        trace = record.get("trace", record) if isinstance(record, dict) else None
        if isinstance(trace, dict) and trace.get("id") and trace.get("sessionId"):
            out[str(trace["id"])] = str(trace["sessionId"])
    return out


def read_turns(path: Path, fmt: str) -> tuple[list[Turn], list[str]]:
    """Every assembled trace of the file as a turn, and why each trace that could not be assembled was left out."""
    spans, errors = TRACE_FORMATS.get(fmt)(Path(path))
    sessions = langfuse_sessions(path) if fmt == "langfuse" else {}
    by_trace: dict[str, list[Span]] = {}
    for span in sorted(spans, key=lambda s: s.line):
        by_trace.setdefault(span.trace_id, []).append(span)
    turns, skipped = [], [f"{path.name}:{e.line}: {e.field}: {e.message}" for e in errors]
    for group in by_trace.values():
        trace, problems = assemble(group)
        skipped += [f"{path.name}:{e.line}: {e.field}: {e.message}" for e in problems]
        if trace is not None:
            turns.append(Turn(session_of(group, sessions), min(s.start for s in group), trace))
    return turns, skipped


def conversations(turns: list[Turn]) -> list[list[Turn]]:
    """Turns grouped by session (a trace without one alone), each ordered by start time then file line; the
    conversations in the order their first turn appears in the file."""
    groups: dict[str, list[Turn]] = {}
    for turn in sorted(turns, key=lambda t: t.trace.line):
        groups.setdefault(turn.session or f"trace:{turn.trace.trace_id}", []).append(turn)
    return [sorted(group, key=lambda t: (t.start, t.trace.line)) for group in groups.values()]


def conversation_id(redactor: Redactor, service: str, session: str) -> str:
    """An id of a session that does not show it: 'session-<first 10 hex of HMAC-SHA256>' under the redaction key
    (GAUNTLET_REDACTION_KEY; unset, a random key per build, so ids then link within one build only)."""
    return redactor.pseudonym("session", f"{service}\n{session}")


def turn_records(conversation: list[Turn], fmt: str, source: str, redactor: Redactor) -> list[dict[str, Any]]:
    """One instance per turn of a production conversation: its question, the earlier turns with the deployed answers
    as history, its retrieved documents in retrieval order; the trace's provenance and deployed answer in metadata."""
    first = conversation[0]
    service = redactor.pseudonymous(first.trace.service or Path(source).stem)
    cid = conversation_id(redactor, service, first.session or first.trace.trace_id)
    records, history = [], list[dict[str, str]]()
    for number, turn in enumerate(conversation, start=1):
        trace = turn.trace
        question, answer = redactor(trace.question), redactor(trace.answer)
        docs = [{"doc_id": f"{cid}-t{number}-r{d.rank}", "title": "", "text": redactor(d.text)} for d in trace.documents]
        record = turn_instance(f"{NAME}/traces/{cid}/t{number}", f"{service} conversations", question, list(history),
                               docs, "ANSWERABLE", number, "unknown", [], "", ["source:traces"])
        record["metadata"] = {"trace": {"format": fmt, "trace_id": redactor.pseudonymous(trace.trace_id),
                                        "service": service, "file": Path(source).name, "conversation": cid,
                                        "deployed_answer": answer}}
        records.append(record)
        history += [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]
    return records


def trace_records(source: Path, fmt: str, limit: int | None, progress: Progress | None) -> tuple[list, list[str], str]:
    """Instances from a production trace export, one per turn; (records, skipped with why, a summary line)."""
    turns, skipped = read_turns(Path(source), fmt)
    redactor = Redactor()
    grouped = conversations(turns)
    records = [r for conv in counted(grouped, progress) for r in turn_records(conv, fmt, str(source), redactor)]
    multi = sum(len(c) > 1 for c in grouped)
    summary = (f"{len(grouped)} conversations from {len(turns)} traces ({multi} of more than one turn, longest "
               f"{max((len(c) for c in grouped), default=0)}); {redaction_text(redactor.summary())}")
    return records[:limit], skipped, summary

