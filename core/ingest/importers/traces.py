"""Production traces in: OpenTelemetry (OTLP JSON), OpenInference span JSON, Langfuse trace exports and Phoenix span
exports, each read into spans, then one trace -> one question, its retrieved documents (in retrieval order, with
scores) and the answer the deployed system gave.

Every format is normalised to `Span` (trace id, span id, parent, OpenInference span kind, flat dotted attributes), and
one assembler (`assemble`) reads the OpenInference semantic conventions (`input.value`, `output.value`,
`retrieval.documents.N.document.content|score|id`, `reranker.output_documents.N...`, `llm.output_messages.N...`) and
the OpenTelemetry GenAI ones (`gen_ai.prompt`, `gen_ai.completion`, `gen_ai.input.messages`, ...). docs/traces.md
maps each format's fields.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.ingest.importers.base import _bad_bytes, _line_error, read_json_array, read_jsonl
from core.ingest.io import LineError
from core.registry import Registry
from core.store.jsonl import first_overflow
from core.store.schema import MAX_NESTING

DOC_PREFIXES = ("reranker.output_documents", "retrieval.documents")  # the final context wins: reranked, else retrieved
DOC_FIELD = re.compile(r"^(?P<prefix>retrieval\.documents|reranker\.output_documents)\.(?P<i>\d+)\.document\.(?P<f>content|score|id)$")
LLM_KINDS = ("LLM",)
RETRIEVAL_KINDS = ("RETRIEVER", "RERANKER")
GENAI_KIND = {"chat": "LLM", "text_completion": "LLM", "generate_content": "LLM", "retrieval": "RETRIEVER",
              "embeddings": "EMBEDDING", "execute_tool": "TOOL", "invoke_agent": "AGENT"}
LANGFUSE_KIND = {"GENERATION": "LLM", "SPAN": "CHAIN", "EVENT": "CHAIN", "AGENT": "AGENT", "TOOL": "TOOL",
                 "CHAIN": "CHAIN", "RETRIEVER": "RETRIEVER", "EMBEDDING": "EMBEDDING", "GUARDRAIL": "GUARDRAIL",
                 "EVALUATOR": "EVALUATOR"}
TEXT_KEYS = ("text", "content", "answer", "output", "query", "question", "input", "value")


@dataclass
class Span:
    """One span of any format, normalised: ids, OpenInference kind, flat dotted attributes, where it starts."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: str
    attributes: dict[str, Any]
    line: int
    start: str = ""
    service: str = ""


@dataclass(frozen=True)
class RetrievedDocument:
    """A document as the deployed retriever returned it: its position, text, score and id (if the span had them)."""

    rank: int
    text: str
    score: float | None
    source_id: str


@dataclass
class Trace:
    """What one production trace holds for evaluation: the question, the documents in retrieval order, the answer."""

    trace_id: str
    service: str
    question: str
    answer: str
    documents: list[RetrievedDocument]
    line: int
    spans: dict[str, str] = field(default_factory=dict)  # role ('question', 'answer', 'documents') -> span id


# ------------------------------------------------------------------ attribute values


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested attribute objects as flat dotted keys ({'input': {'value': 'x'}} -> {'input.value': 'x'}); lists of
    objects are indexed ('retrieval.documents.0.document.content'); lists of scalars stay lists."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, child in value.items():
            out.update(flatten(child, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        out = {}
        for index, item in enumerate(value):
            out.update(flatten(item, f"{prefix}.{index}"))
        return out
    return {prefix: value} if prefix else {}


def otlp_value(value: dict[str, Any]) -> Any:
    """The Python value of an OTLP JSON AnyValue ({'stringValue': 'x'}, {'intValue': '3'}, arrays, key-value lists)."""
    if not isinstance(value, dict):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "arrayValue" in value:
        return [otlp_value(v) for v in value["arrayValue"].get("values", [])]
    if "kvlistValue" in value:
        return {kv["key"]: otlp_value(kv.get("value", {})) for kv in value["kvlistValue"].get("values", [])}
    return None


def otlp_id(value: Any) -> str:
    """A trace or span id as OTLP/JSON writes it (hex); an id in protobuf's JSON mapping (base64 of 16 or 8 bytes,
    as exporters that serialise with `MessageToJson` write it: 'A8suuE3VKsm8FJapnHM4gA==') is turned into that hex."""
    text = str(value or "")
    if (len(text), text[-2:].count("=")) in ((24, 2), (12, 1)):
        try:
            return base64.b64decode(text, validate=True).hex()
        except (binascii.Error, ValueError):
            return text
    return text


def otlp_attributes(items: list[dict[str, Any]] | None) -> dict[str, Any]:
    """OTLP `attributes` ([{key, value: AnyValue}]) as a dict."""
    return {item["key"]: otlp_value(item.get("value", {})) for item in items or [] if isinstance(item, dict) and "key" in item}


def _object_at(raw: dict[str, Any], key: str) -> dict[str, Any]:
    """The JSON object under `key` ({} when absent or not an object)."""
    value = raw.get(key)
    return value if isinstance(value, dict) else {}


JSON_TYPES = ((bool, "true/false"), (dict, "an object"), (list, "a list"), (str, "a string"), (int, "a number"),
              (float, "a number"))


def json_type(value: Any) -> str:
    """What a JSON value is, for a message: 'an object', 'a list', 'a string', 'a number', 'true/false', 'null'."""
    return next((name for kind, name in JSON_TYPES if isinstance(value, kind)), "null")


def misshapen(value: Any, expected: type | tuple[type, ...], line: int, where: str,
              required: bool = False) -> LineError | None:
    """The problem when `value` (absent or null allowed unless `required`) is not of the `expected` JSON type."""
    if value is None and not required:
        return None
    if isinstance(value, expected) and not isinstance(value, bool) or expected is bool and isinstance(value, bool):
        return None
    wanted = " or ".join(dict.fromkeys(name for kind, name in JSON_TYPES
                                       if kind in (expected if isinstance(expected, tuple) else (expected,))))
    return LineError(line, where, f"must be {wanted}, not {json_type(value)}")


def _decoded(value: Any) -> Any:
    """A JSON-encoded attribute value decoded (Langfuse stores '"What is X?"'); anything else as it is."""
    if isinstance(value, str) and value[:1] in ('"', "{", "[") and first_overflow(value) is None:
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value  # not JSON, or nested deeper than MAX_NESTING: kept as the text it is


def text_of(value: Any) -> str:
    """The text an input or output value carries: a string, a JSON string, {'args': ['q']}, {'text': ...}, a chat
    message list (the last user / assistant message), or GenAI message parts; '' when it carries none."""
    value = _decoded(value)
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        texts = [text_of(item) for item in value]
        users = [text_of(item) for item in value if isinstance(item, dict) and item.get("role") == "user"]
        picked = users or [t for t in texts if t]
        return picked[-1] if picked else ""
    if isinstance(value, dict):
        if "parts" in value:
            return " ".join(text_of(p.get("content")) for p in value["parts"] if isinstance(p, dict)
                            and p.get("type", "text") == "text").strip()
        if "args" in value and isinstance(value["args"], list) and value["args"]:
            return text_of(value["args"][0])
        if "messages" in value:
            return text_of(value["messages"])
        for key in TEXT_KEYS:
            if key in value and (found := text_of(value[key])):
                return found
    return ""


# ------------------------------------------------------------------ assembling a trace


def _span_order(span: Span) -> tuple[str, int]:
    return (span.start, span.line)


def documents_of(span: Span) -> list[RetrievedDocument]:
    """The documents a retriever / reranker span returned, in its index order (reranked output first)."""
    for prefix in DOC_PREFIXES:
        found: dict[int, dict[str, Any]] = {}
        for key, value in span.attributes.items():
            match = DOC_FIELD.match(key)
            if match and match["prefix"] == prefix:
                found.setdefault(int(match["i"]), {})[match["f"]] = value
        if found:
            return [RetrievedDocument(rank, str(doc.get("content") or "").strip(), _score(doc.get("score")),
                                      str(doc.get("id") or ""))
                    for rank, (_, doc) in enumerate(sorted(found.items()), start=1)]
    return []


def _score(value: Any) -> float | None:
    try:
        return None if value is None or isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        return None


def _root(spans: list[Span]) -> Span:
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if not s.parent_id or s.parent_id not in ids]
    return min(roots or spans, key=_span_order)


def _first(spans: list[Span], read: Callable[[Span], str]) -> tuple[str, str]:
    for span in spans:
        if text := read(span):
            return text, span.span_id
    return "", ""


def indexed_messages(attributes: dict[str, Any], pattern: str) -> list[tuple[str, str]]:
    """(role, text) of indexed message attributes in index order: pattern 'llm.output_messages.{}.message' reads
    '...N.message.role' / '...N.message.content'; 'gen_ai.prompt.{}' reads 'gen_ai.prompt.N.role' / '.content'."""
    head, _, tail = pattern.partition("{}")
    found = re.compile(re.escape(head) + r"(\d+)" + re.escape(tail) + r"\.content$")
    indices = sorted(int(m[1]) for k in attributes if (m := found.match(k)))
    return [(str(attributes.get(f"{head}{i}{tail}.role") or ""), text_of(attributes.get(f"{head}{i}{tail}.content")))
            for i in indices]


def _last(messages: list[tuple[str, str]], role: str = "") -> str:
    texts = [text for who, text in messages if text and (not role or who in (role, ""))]
    return texts[-1] if texts else ""


def _llm_output(span: Span) -> str:
    a = span.attributes
    return _last(indexed_messages(a, "llm.output_messages.{}.message")) or text_of(a.get("output.value")) or \
        text_of(a.get("gen_ai.completion")) or text_of(a.get("gen_ai.output.messages")) or \
        _last(indexed_messages(a, "gen_ai.completion.{}"))


def _question(span: Span) -> str:
    a = span.attributes
    return text_of(a.get("input.value")) or text_of(a.get("gen_ai.prompt")) or \
        text_of(a.get("gen_ai.input.messages")) or _last(indexed_messages(a, "gen_ai.prompt.{}"), "user") or \
        text_of(a.get("gen_ai.retrieval.query.text"))


def assemble(spans: list[Span]) -> tuple[Trace | None, list[LineError]]:
    """One trace's question (root span's input, else a retriever's, else an LLM's), answer (root output, else the
    last LLM span's) and documents (the last retriever / reranker span's); errors name what is missing."""
    ordered = sorted(spans, key=_span_order)
    root = _root(ordered)
    retrievers = [s for s in ordered if s.kind in RETRIEVAL_KINDS or documents_of(s)]
    llms = [s for s in ordered if s.kind in LLM_KINDS]
    question, q_span = _first([root, *retrievers, *llms], _question)
    answer, a_span = _first([root, *reversed(llms)], lambda s: _llm_output(s) if s is not root else
                            text_of(s.attributes.get("output.value")) or _llm_output(s))
    with_docs = [s for s in retrievers if documents_of(s)]
    documents = documents_of(with_docs[-1]) if with_docs else []
    errors = []
    where = f"trace {root.trace_id}"
    if not question:
        errors.append(LineError(root.line, "input.value", f"{where}: no user question (no input.value, gen_ai.prompt "
                                "or gen_ai.input.messages on the root, retriever or LLM spans)"))
    if not answer:
        errors.append(LineError(root.line, "output.value", f"{where}: no generated answer (no output.value on the root "
                                "span and no LLM span output)"))
    empty = [d.rank for d in documents if not d.text]
    if empty:
        errors.append(LineError(with_docs[-1].line, "retrieval.documents", f"{where}: document(s) at rank "
                                f"{', '.join(map(str, empty))} have no content"))
    if errors:
        return None, errors
    spans_used = {"question": q_span, "answer": a_span} | ({"documents": with_docs[-1].span_id} if with_docs else {})
    return Trace(root.trace_id, root.service, question, answer, documents, root.line, spans_used), []


def assemble_all(spans: list[Span]) -> tuple[list[Trace], list[LineError]]:
    """Every trace of a list of spans, in the order their first span appears."""
    by_trace: dict[str, list[Span]] = {}
    for span in sorted(spans, key=lambda s: s.line):
        by_trace.setdefault(span.trace_id, []).append(span)
    traces, errors = [], []
    for group in by_trace.values():
        trace, problems = assemble(group)
        errors += problems
        if trace is not None:
            traces.append(trace)
    return traces, errors


# ------------------------------------------------------------------ formats


def _line_of(text: str, needle: str, default: int = 1) -> int:
    at = text.find(needle)
    return text.count("\n", 0, at) + 1 if at >= 0 else default


def read_records(path: Path) -> tuple[list[tuple[int, Any]], list[LineError]]:
    """The JSON values of a file with the line each starts on: one JSON document (an array gives its elements), or
    JSON Lines (one value per line)."""
    data = Path(path).read_bytes()
    if (bad := _bad_bytes(data)) is not None:
        return [], [bad]
    text = data.decode("utf-8")
    if (deep := first_overflow(text)) is not None:
        return [], [_line_error(text, deep, f"nested too deeply (more than {MAX_NESTING} levels)")]
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        records, errors = read_jsonl(data)
        if records:
            return records, errors
        return [], [LineError(exc.lineno, "", f"malformed JSON: {exc.msg} (column {exc.colno})")]
    if isinstance(value, list):
        return read_json_array(text)
    return [(text[: len(text) - len(text.lstrip())].count("\n") + 1, value)], []


def _oi_kind(attributes: dict[str, Any], given: Any = "") -> str:
    kind = attributes.get("openinference.span.kind") or given or \
        GENAI_KIND.get(str(attributes.get("gen_ai.operation.name", "")), "")
    return str(kind).upper()


def read_otel(path: Path) -> tuple[list[Span], list[LineError]]:
    """OTLP JSON (the collector's file exporter or `ExportTraceServiceRequest` as JSON): resourceSpans -> scopeSpans
    -> spans; one request per file, or one per line (JSON Lines, as the file exporter writes)."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    records, errors = read_records(path)
    spans: list[Span] = []
    for line, request in records:
        if not isinstance(request, dict) or not isinstance(request.get("resourceSpans"), list):
            errors.append(LineError(line, "resourceSpans", "missing: an OTLP JSON trace export has resourceSpans"))
            continue
        for r, resource_spans in enumerate(request["resourceSpans"]):
            if (shape := _otel_resource_shape(resource_spans, line, f"resourceSpans[{r}]")) is not None:
                errors.append(shape)
                continue
            resource = otlp_attributes((resource_spans.get("resource") or {}).get("attributes"))
            service = str(resource.get("service.name", ""))
            for s, scope_spans in enumerate(resource_spans.get("scopeSpans") or resource_spans.get("instrumentationLibrarySpans") or []):
                if (shape := _otel_scope_shape(scope_spans, line, f"resourceSpans[{r}].scopeSpans[{s}]")) is not None:
                    errors.append(shape)
                    continue
                for k, raw in enumerate(scope_spans.get("spans") or []):
                    where = f"resourceSpans[{r}].scopeSpans[{s}].spans[{k}]"
                    if (shape := _otel_span_shape(raw, line, where)) is not None:
                        errors.append(shape)
                        continue
                    missing = [f for f in ("traceId", "spanId") if not raw.get(f)]
                    span_line = _line_of(text, f'"{raw.get("spanId")}"', line) if raw.get("spanId") else line
                    if missing:
                        errors.append(LineError(span_line, f"{where}.{missing[0]}", "missing"))
                        continue
                    attributes = otlp_attributes(raw.get("attributes"))
                    parent = otlp_id(raw.get("parentSpanId")) or None
                    spans.append(Span(otlp_id(raw["traceId"]), otlp_id(raw["spanId"]), parent,
                                      str(raw.get("name", "")), _oi_kind(attributes), attributes, span_line,
                                      str(raw.get("startTimeUnixNano", "")).zfill(20), service))
    return spans, errors


def _first_problem(checks: list[LineError | None]) -> LineError | None:
    return next((c for c in checks if c is not None), None)


def _anyvalue_shape(value: Any, line: int, where: str) -> LineError | None:
    """An OTLP AnyValue: an object; intValue / doubleValue numbers (or their text); arrayValue.values a list of
    AnyValues; kvlistValue.values a list of {key, value} objects (nesting was bounded before parsing)."""
    if (wrong := misshapen(value, dict, line, where, required=True)) is not None:
        return wrong
    for name, parse in (("intValue", int), ("doubleValue", float)):
        if name in value and not _parses(value[name], parse):
            return LineError(line, f"{where}.{name}", f"must be a number (or its text), not {json_type(value[name])} "
                             f"{json.dumps(value[name])[:40]}")
    for name in ("arrayValue", "kvlistValue"):
        if name not in value:
            continue
        if (wrong := misshapen(value[name], dict, line, f"{where}.{name}", required=True)) is not None:
            return wrong
        items = value[name].get("values", [])
        if (wrong := misshapen(items, list, line, f"{where}.{name}.values")) is not None:
            return wrong
        for i, item in enumerate(items or []):
            at = f"{where}.{name}.values[{i}]"
            problem = _anyvalue_shape(item, line, at) if name == "arrayValue" else _key_value_shape(item, line, at)
            if problem is not None:
                return problem
    return None


def _parses(raw: Any, parse: Callable[[Any], Any]) -> bool:
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        return False
    try:
        parse(raw)
    except (TypeError, ValueError, OverflowError):
        return False
    return True


def _key_value_shape(item: Any, line: int, where: str) -> LineError | None:
    """An OTLP KeyValue: an object with a text key and an AnyValue value."""
    if (wrong := misshapen(item, dict, line, where, required=True)) is not None:
        return wrong
    return misshapen(item.get("key"), str, line, f"{where}.key", required=True) or \
        (_anyvalue_shape(item["value"], line, f"{where}.value") if item.get("value") is not None else None)


def _otel_resource_shape(raw: Any, line: int, where: str) -> LineError | None:
    """A resourceSpans entry: an object whose resource is an object with an attributes list, scopeSpans a list."""
    if (wrong := misshapen(raw, dict, line, where, required=True)) is not None:
        return wrong
    resource = raw.get("resource")
    attributes = resource.get("attributes") if isinstance(resource, dict) else None
    return _first_problem([misshapen(resource, dict, line, f"{where}.resource"),
                           misshapen(attributes, list, line, f"{where}.resource.attributes"),
                           *(_key_value_shape(item, line, f"{where}.resource.attributes[{i}]")
                             for i, item in enumerate(attributes if isinstance(attributes, list) else [])),
                           misshapen(raw.get("scopeSpans"), list, line, f"{where}.scopeSpans"),
                           misshapen(raw.get("instrumentationLibrarySpans"), list, line,
                                     f"{where}.instrumentationLibrarySpans")])


def _otel_scope_shape(raw: Any, line: int, where: str) -> LineError | None:
    """A scopeSpans entry: an object whose spans is a list."""
    return misshapen(raw, dict, line, where, required=True) or misshapen(raw.get("spans"), list, line, f"{where}.spans")


def _otel_span_shape(raw: Any, line: int, where: str) -> LineError | None:
    """An OTLP span: an object, ids as strings, attributes a list of {key, value} objects."""
    if (wrong := misshapen(raw, dict, line, where, required=True)) is not None:
        return wrong
    checks = [misshapen(raw.get(name), str, line, f"{where}.{name}")
              for name in ("traceId", "spanId", "parentSpanId", "name")]
    checks += [misshapen(raw.get("startTimeUnixNano"), (str, int), line, f"{where}.startTimeUnixNano"),
               misshapen(raw.get("attributes"), list, line, f"{where}.attributes")]
    for i, item in enumerate(raw.get("attributes") or [] if isinstance(raw.get("attributes"), list) else []):
        checks.append(_key_value_shape(item, line, f"{where}.attributes[{i}]"))
    return _first_problem(checks)


def _span_json_shape(raw: dict[str, Any], line: int, where: str) -> LineError | None:
    """An OpenInference / Phoenix span: context and attributes objects, ids and parent scalars (text or number)."""
    context = raw.get("context")
    checks = [misshapen(context, dict, line, f"{where}context"),
              misshapen(raw.get("attributes"), dict, line, f"{where}attributes")]
    for name in ("trace_id", "span_id"):
        checks += [misshapen(raw.get(name), (str, int), line, f"{where}{name}"),
                   misshapen(context.get(name) if isinstance(context, dict) else None, (str, int), line,
                             f"{where}context.{name}")]
    checks += [misshapen(raw.get("parent_id"), (str, int), line, f"{where}parent_id"),
               misshapen(raw.get("span_kind"), str, line, f"{where}span_kind")]
    return _first_problem(checks)


def _span_json(raw: dict[str, Any], line: int, where: str) -> tuple[Span | None, list[LineError]]:
    """An OpenInference / Phoenix span object: context.trace_id | trace_id, context.span_id | span_id, parent_id,
    span_kind, attributes (flat dotted keys or nested objects), or Phoenix dataframe columns 'attributes.x.y'."""
    if not isinstance(raw, dict):
        return None, [LineError(line, where, "expected a JSON object (one span)")]
    if (shape := _span_json_shape(raw, line, where)) is not None:
        return None, [shape]
    context = _object_at(raw, "context")
    trace_id = context.get("trace_id") or raw.get("trace_id") or raw.get("context.trace_id")
    span_id = context.get("span_id") or raw.get("span_id") or raw.get("context.span_id")
    problems = [LineError(line, f"{where}context.{name}", "missing") for name, value
                in (("trace_id", trace_id), ("span_id", span_id)) if not value]
    if problems:
        return None, problems
    attributes = flatten(raw.get("attributes") or {})
    attributes.update(flatten({k.removeprefix("attributes."): v for k, v in raw.items() if k.startswith("attributes.")}))
    start = raw.get("start_time") or ""
    return Span(str(trace_id), str(span_id), raw.get("parent_id") or None, str(raw.get("name", "")),
                _oi_kind(attributes, raw.get("span_kind")), attributes, line, str(start)), []


def _plain(value: Any) -> Any:
    """A dataframe cell as plain JSON-like Python: arrays as lists, numpy scalars as numbers, NaN / NaT as None."""
    import numpy as np
    import pandas as pd

    if isinstance(value, np.ndarray | list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    if isinstance(value, np.generic):
        value = value.item()
    return None if isinstance(value, float) and math.isnan(value) else value


def read_parquet_rows(path: Path) -> tuple[list[tuple[int, Any]], list[LineError]]:
    """The rows of a Parquet span table (Phoenix's spans dataframe saved with `to_parquet`), numbered from 1."""
    import pandas as pd

    try:
        frame = pd.read_parquet(path)
    except (OSError, ValueError, ImportError) as exc:
        return [], [LineError(1, "", f"not a readable Parquet file: {exc}")]
    return [(n, {k: _plain(v) for k, v in row.items()}) for n, row in enumerate(frame.to_dict("records"), start=1)], []


def read_span_json(path: Path) -> tuple[list[Span], list[LineError]]:
    """OpenInference span JSON (the spec's span objects) or a Phoenix span export: JSON Lines, a JSON array, an
    object with a 'spans' list, or a Parquet span table (line numbers are then row numbers)."""
    if Path(path).suffix == ".parquet":
        records, errors = read_parquet_rows(path)
        return _spans_of(records, errors)
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    records, errors = read_records(path)
    if len(records) == 1 and isinstance(records[0][1], dict) and "spans" in records[0][1] and \
            not isinstance(records[0][1]["spans"], list):
        return [], errors + [misshapen(records[0][1]["spans"], list, records[0][0], "spans", required=True)
                             or LineError(records[0][0], "spans", "must be a list")]
    if len(records) == 1 and isinstance(records[0][1], dict) and isinstance(records[0][1].get("spans"), list):
        records = [(_line_of(text, json.dumps(_span_id(s)), records[0][0]), s) for s in records[0][1]["spans"]]
    return _spans_of(records, errors)


def _spans_of(records: list[tuple[int, Any]], errors: list[LineError]) -> tuple[list[Span], list[LineError]]:
    spans = []
    for line, raw in records:
        span, problems = _span_json(raw, line, "")
        errors += problems
        if span is not None:
            spans.append(span)
    return spans, errors


def _langfuse_spans(record: dict[str, Any], line: int, text: str) -> tuple[list[Span], list[LineError]]:
    """A Langfuse trace with its observations ({'trace': {...}, 'observations': [...]}, or a trace object holding an
    'observations' list, as the public API's GET /traces/{id} returns)."""
    if (wrong := misshapen(record.get("trace"), dict, line, "trace")) is not None:
        return [], [wrong]
    trace = nested if isinstance(nested := record.get("trace"), dict) else record
    observations = record.get("observations", trace.get("observations", []))
    where = "observations" if "observations" in record else "trace.observations"
    if (wrong := _first_problem([misshapen(observations, list, line, where),
                                 misshapen(trace.get("id"), (str, int), line, "trace.id")])) is not None:
        return [], [wrong]
    if not trace.get("id"):
        return [], [LineError(line, "trace.id", "missing: a Langfuse trace export needs the trace's id")]
    metadata = _decoded(trace.get("metadata"))
    resource = (metadata or {}).get("resourceAttributes", {}) if isinstance(metadata, dict) else {}
    service = str(trace.get("name") or resource.get("service.name") or "")
    trace_id = str(trace["id"])
    root = Span(trace_id, trace_id, None, str(trace.get("name") or ""), "CHAIN",
                {"input.value": trace.get("input"), "output.value": trace.get("output")},
                _line_of(text, f'"{trace_id}"', line), str(trace.get("timestamp") or ""), service)
    spans, errors = [root], []
    for k, obs in enumerate(observations if isinstance(observations, list) else []):
        if (wrong := _observation_shape(obs, line, f"{where}[{k}]")) is not None:
            errors.append(wrong)
            continue
        if not obs.get("id"):
            errors.append(LineError(line, f"{where}[{k}].id", "missing"))
            continue
        meta = _object_at(obs, "metadata")
        attributes = flatten(meta.get("attributes") or {})
        attributes.setdefault("input.value", obs.get("input"))
        attributes.setdefault("output.value", obs.get("output"))
        kind = _oi_kind(attributes, LANGFUSE_KIND.get(str(obs.get("type", "")).upper(), ""))
        if kind == "RETRIEVER" and isinstance(_decoded(obs.get("output")), list):
            attributes.update(_langfuse_documents(_decoded(obs.get("output"))))
        spans.append(Span(trace_id, str(obs["id"]), obs.get("parentObservationId") or trace_id, str(obs.get("name") or ""),
                          kind, attributes, _line_of(text, f'"{obs["id"]}"', line), str(obs.get("startTime") or ""),
                          service))
    return spans, errors


def _observation_shape(obs: Any, line: int, where: str) -> LineError | None:
    """A Langfuse observation: an object, id / type / parent as text, metadata (and its attributes) objects."""
    if (wrong := misshapen(obs, dict, line, where, required=True)) is not None:
        return wrong
    meta = obs.get("metadata")
    checks = [misshapen(obs.get("id"), (str, int), line, f"{where}.id"),
              misshapen(obs.get("type"), str, line, f"{where}.type"),
              misshapen(obs.get("parentObservationId"), (str, int), line, f"{where}.parentObservationId"),
              misshapen(meta, (dict, str), line, f"{where}.metadata")]
    if isinstance(meta, dict):
        checks.append(misshapen(meta.get("attributes"), dict, line, f"{where}.metadata.attributes"))
    return _first_problem(checks)


def _langfuse_documents(items: list[Any]) -> dict[str, Any]:
    """A retriever observation's output list ([{'content'|'page_content'|'text', 'score', 'id'}]) as OpenInference
    document attributes."""
    out: dict[str, Any] = {}
    for i, item in enumerate(items):
        doc = item if isinstance(item, dict) else {"content": item}
        content = doc.get("content", doc.get("page_content", doc.get("text", "")))
        out[f"retrieval.documents.{i}.document.content"] = content if isinstance(content, str) else json.dumps(content)
        out[f"retrieval.documents.{i}.document.score"] = doc.get("score")
        out[f"retrieval.documents.{i}.document.id"] = doc.get("id", (doc.get("metadata") or {}).get("id", ""))
    return out


def read_langfuse(path: Path) -> tuple[list[Span], list[LineError]]:
    """Langfuse trace exports: one {'trace', 'observations'} object, a JSON array of them, or one per line."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    records, errors = read_records(path)
    if len(records) == 1 and isinstance(records[0][1], dict) and isinstance(records[0][1].get("data"), list):
        records = [(_line_of(text, json.dumps(str(t.get("id", ""))) if isinstance(t, dict) else "", records[0][0]), t)
                   for t in records[0][1]["data"]]  # the public API's list response: {"data": [...], "meta": ...}
    spans: list[Span] = []
    for line, record in records:
        if not isinstance(record, dict):
            errors.append(LineError(line, "", "expected a JSON object (one Langfuse trace)"))
            continue
        found, problems = _langfuse_spans(record, line, text)
        spans += found
        errors += problems
    return spans, errors


def _span_id(raw: Any) -> str:
    if not isinstance(raw, dict):
        return ""
    context = _object_at(raw, "context")
    return str(context.get("span_id") or raw.get("span_id") or "")


Reader = Callable[[Path], tuple[list[Span], list[LineError]]]
TRACE_FORMATS: Registry[Reader] = Registry("trace format")
TRACE_FORMATS.add("otel", read_otel)
TRACE_FORMATS.add("openinference", read_span_json)
TRACE_FORMATS.add("langfuse", read_langfuse)
TRACE_FORMATS.add("phoenix", read_span_json)


def read_traces(path: Path, fmt: str) -> tuple[list[Trace], list[LineError]]:
    """The traces of a file of format `fmt` (a TRACE_FORMATS name), and every problem with line and field."""
    traces, errors, incomplete = read_trace_parts(path, fmt)
    return traces, sorted(errors + incomplete, key=lambda e: e.line)


def read_trace_parts(path: Path, fmt: str) -> tuple[list[Trace], list[LineError], list[LineError]]:
    """(traces, problems of the file's records, problems of traces that lack a question, an answer or a document's
    text): the last kind can be left out of an import on request, the others never."""
    spans, errors = TRACE_FORMATS.get(fmt)(Path(path))
    if not spans and not errors:
        errors.append(LineError(1, "", f"no spans found: is this a {fmt} trace export?"))
    traces, incomplete = assemble_all(spans)
    return traces, sorted(errors, key=lambda e: e.line), incomplete


def trace_formats() -> list[str]:
    """The trace formats `gauntlet import --format` accepts."""
    return sorted(TRACE_FORMATS.names())


def iter_texts(trace: Trace) -> Iterator[str]:
    """The texts of a trace that are stored: question, answer, document texts."""
    yield trace.question
    yield trace.answer
    yield from (d.text for d in trace.documents)
