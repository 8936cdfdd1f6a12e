"""Trace exports read into traces: question, documents in retrieval order with scores, answer; errors name line and field.

Published files (tests/fixtures/traces/README.md names repository, path and commit of each):
- otel_example_trace.json: open-telemetry/opentelemetry-proto examples/trace.json @ ca6170ef02a5c2561ab0f5c9da274f6b713dd3ea
  (no question, retrieval or answer in it: refused, and paired with our otel_rag_export.json)
- openinference_spec_traces.jsonl: Arize-ai/openinference spec/traces.md @ 4df9e4472cf1da62d122700ee98c4073581d4204
  (question and answer, no retriever span: paired with our openinference_rag_spans.jsonl)
- phoenix_llama_index_rag_spans.jsonl: Arize-ai/phoenix tests/unit/server/api/types/test_Project.py
  @ 71c929e7acf159ed2b636d75ca4139652e33e978 (the first llama-index-rag trace, with its retriever span)
- langfuse_llamaindex-2025-06-05.json: langfuse/langfuse
  packages/shared/scripts/seeder/utils/framework-traces/llamaindex-2025-06-05.json
  @ 1f4beec9db59dc9242274e2c244558140ae76e98 (no retriever observation: paired with our langfuse_rag_traces.jsonl)
- otel_langwatch_openai_requests.jsonl: langwatch/langwatch platform/app/src/server/tracer/otel.traces.test.ts
  @ 6ce6cbb33f46ff576cbadab622326c6b3477f7e7 (its openInferenceOpenAIRequest and openllmetryOpenAIRequest: OTLP JSON
  with base64 ids, a question and an answer under OpenInference and under GenAI gen_ai.prompt.N / gen_ai.completion.N
  attributes; no retrieval span)
"""

from __future__ import annotations

import json

import pytest

from core.ingest.importers.traces import flatten, otlp_id, otlp_value, read_traces, text_of
from tests.conftest import FIXTURES

TRACES = FIXTURES / "traces"
PHOENIX_ANSWER = "To use the SDK to upload a ranking model, you can follow the documentation provided by the SDK."
LANGFUSE_ANSWER = "Langfuse is a tool designed to help developers monitor and debug applications"
REFUND_Q = "Hi, I'm Maria Keller (maria.keller@example.org). Can I still return the boots I got 20 days ago?"


@pytest.mark.parametrize(
    ("fmt", "name", "expected"),
    [
        pytest.param("phoenix", "phoenix_llama_index_rag_spans.jsonl", [
            ("0f5bb2e69a0640de87b9d424622b9f13", "How do I use the SDK to upload a ranking model?", PHOENIX_ANSWER,
             [(1, 0.8022561073303223, "ad17eeea-e339-4195-991b-8eef54b1db65"),
              (2, 0.7964192032814026, "0ce66871-4a50-4d2f-94d2-1531924bf48a")])], id="phoenix-published"),
        pytest.param("langfuse", "langfuse_llamaindex-2025-06-05.json", [
            ("12ea412956f99347b0503c1144acd0ec", "What is Langfuse?", LANGFUSE_ANSWER, [])], id="langfuse-published"),
        pytest.param("openinference", "openinference_spec_traces.jsonl", [
            ("ed7b336d-e71a-46f0-a334-5f2e87cb6cfc", "Is anybody there?", "Yes, I am here.", [])],
            id="openinference-published"),
        pytest.param("otel", "otel_langwatch_openai_requests.jsonl", [
            ("03cb2eb84dd52ac9bc1496a99c733880", "hi", "Hey there! \U0001f60a\U0001f44b What's up?", []),
            ("8615098c2c72e72330e800ef3ab1d8b8", "yous", "Hey there! \U0001f60a What's on your mind?", [])],
            id="otel-published-langwatch"),
        pytest.param("otel", "otel_rag_export.json", [
            ("4bf92f3577b34da6a3ce929d0e0e4700", REFUND_Q, "Yes: refunds are accepted", [(1, 0.91, "kb-12"), (2, 0.42, "kb-40")]),
            ("4bf92f3577b34da6a3ce929d0e0e4701", "When can I call premium support? My number is +44 20 7946 0958.",
             "Premium support takes calls", [(1, 0.77, "kb-7")]),
            ("4bf92f3577b34da6a3ce929d0e0e4702", "How do I reset my password?", "Use the 'Forgot password' link",
             [(1, 0.88, "kb-3"), (2, 0.63, "kb-9"), (3, 0.12, "kb-1")])], id="otel-paired-rag"),
        pytest.param("openinference", "openinference_rag_spans.jsonl", [
            ("oi-trace-0", REFUND_Q, "Yes: refunds are accepted", [(1, 0.91, "kb-12"), (2, 0.42, "kb-40")]),
            ("oi-trace-1", "How do I reset my password?", "Use the 'Forgot password' link",
             [(1, 0.97, "kb-9"), (2, 0.55, "kb-3")])], id="openinference-paired-reranked"),
        pytest.param("langfuse", "langfuse_rag_traces.jsonl", [
            ("lf-trace-0", REFUND_Q, "Yes: refunds are accepted", [(1, 0.91, "kb-12"), (2, 0.42, "kb-40")]),
            ("lf-trace-1", "When can I call premium support? My number is +44 20 7946 0958.",
             "Premium support takes calls", [(1, 0.77, "kb-7")])], id="langfuse-paired-retriever"),
    ],
)
def test_traces_read_from_each_format(fmt, name, expected) -> None:
    traces, errors = read_traces(TRACES / name, fmt)
    assert errors == []
    got = [(t.trace_id, t.question, t.answer[: len(a)], [(d.rank, d.score, d.source_id) for d in t.documents])
           for t, (_, _, a, _) in zip(traces, expected, strict=True)]
    assert got == [(tid, q, a, docs) for tid, q, a, docs in expected]
    assert all(d.text for t in traces for d in t.documents)


def test_indexed_genai_prompt_and_completion_attributes_give_question_and_answer(tmp_path) -> None:
    chat = {"gen_ai.operation.name": "chat", "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "Be brief.",
            "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "Where is the invoice?",
            "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "In the billing tab."}
    path = tmp_path / "genai.json"
    path.write_text(_otlp([{"traceId": "t9", "spanId": "s9", "attributes": [
        {"key": k, "value": {"stringValue": v}} for k, v in chat.items()]}]), encoding="utf-8")
    (trace,), errors = read_traces(path, "otel")
    assert (errors, trace.question, trace.answer) == ([], "Where is the invoice?", "In the billing tab.")


def test_the_published_otel_example_has_no_rag_content_and_is_refused_with_line_and_field() -> None:
    traces, errors = read_traces(TRACES / "otel_example_trace.json", "otel")
    assert traces == []
    assert [(e.line, e.field) for e in errors] == [(31, "input.value"), (31, "output.value")]
    assert "trace 5B8EFFF798038103D269B633813FC60C: no user question" in errors[0].message


def _otlp(spans: list[dict]) -> str:
    return json.dumps({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": spans}]}]}, indent=1)


def _attrs(**values: str) -> list[dict]:
    return [{"key": k.replace("_", "."), "value": {"stringValue": v}} for k, v in values.items()]


@pytest.mark.parametrize(
    ("fmt", "text", "expected"),
    [
        pytest.param("openinference", '{"name": "q", "context": {"trace_id": "t", "span_id": "s"}, '
                     '"attributes": {"input.value": "q?", "output.value": "a"}}\n{"name": \n',
                     ["line 2: malformed JSON"], id="malformed-json-line"),
        pytest.param("openinference", '{"name": "q", "context": {"span_id": "s"}, "attributes": {}}\n',
                     ["line 1: context.trace_id: missing"], id="span-without-trace-id"),
        pytest.param("otel", '{"resourceLogs": []}', ["line 1: resourceSpans: missing"], id="not-a-trace-export"),
        pytest.param("otel", _otlp([{"traceId": "t1", "name": "x"}]),
                     ["resourceSpans[0].scopeSpans[0].spans[0].spanId: missing"], id="otel-span-without-span-id"),
        pytest.param("otel", _otlp([{"traceId": "t1", "spanId": "s1", "attributes": _attrs(input_value="q?")}]),
                     ["output.value: trace t1: no generated answer"], id="trace-without-answer"),
        pytest.param("openinference",
                     '{"context": {"trace_id": "t", "span_id": "r"}, "attributes": {"input.value": "q?", "output.value": "a"}}\n'
                     '{"context": {"trace_id": "t", "span_id": "d"}, "parent_id": "r", "span_kind": "RETRIEVER", '
                     '"attributes": {"retrieval.documents.0.document.content": "", "retrieval.documents.0.document.score": 0.3}}\n',
                     ["line 2: retrieval.documents: trace t: document(s) at rank 1 have no content"], id="empty-document"),
        pytest.param("langfuse", '{"trace": {"name": "x", "input": "q"}, "observations": []}',
                     ["line 1: trace.id: missing"], id="langfuse-trace-without-id"),
        pytest.param("phoenix", "", ["line 1: malformed JSON"], id="empty-file"),
    ],
)
def test_problems_name_line_and_field(tmp_path, fmt, text, expected) -> None:
    path = tmp_path / "export.json"
    path.write_text(text, encoding="utf-8")
    _, errors = read_traces(path, fmt)
    shown = [str(e) for e in errors]
    assert all(any(want in s for s in shown) for want in expected), shown


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param({"stringValue": "x"}, "x", id="string"),
        pytest.param({"intValue": "42"}, 42, id="int-as-string"),
        pytest.param({"doubleValue": 0.5}, 0.5, id="double"),
        pytest.param({"boolValue": True}, True, id="bool"),
        pytest.param({"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": 1}]}}, ["a", 1], id="array"),
        pytest.param({"kvlistValue": {"values": [{"key": "k", "value": {"stringValue": "v"}}]}}, {"k": "v"}, id="kvlist"),
    ],
)
def test_otlp_values_decode(value, expected) -> None:
    assert otlp_value(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("5b8efff798038103d269b633813fc60c", "5b8efff798038103d269b633813fc60c", id="hex-trace-id-kept"),
        pytest.param("eee19b7ec3c1b174", "eee19b7ec3c1b174", id="hex-span-id-kept"),
        pytest.param("A8suuE3VKsm8FJapnHM4gA==", "03cb2eb84dd52ac9bc1496a99c733880", id="base64-trace-id-to-hex"),
        pytest.param("m6IZGoTJqJE=", "9ba2191a84c9a891", id="base64-span-id-to-hex"),
        pytest.param("not base64 at all!!!!!==", "not base64 at all!!!!!==", id="not-base64-kept"),
        pytest.param("t1", "t1", id="short-id-kept"),
        pytest.param(None, "", id="absent"),
    ],
)
def test_otlp_ids_read_as_hex(value, expected) -> None:
    assert otlp_id(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param('"What is Langfuse?"', "What is Langfuse?", id="json-encoded-string"),
        pytest.param({"args": ["What is X?"]}, "What is X?", id="llama-index-args"),
        pytest.param([{"role": "system", "content": "be nice"}, {"role": "user", "content": "hi?"}], "hi?",
                     id="chat-messages-last-user"),
        pytest.param('{"text": "rainy, 57F", "finish_reason": "stop"}', "rainy, 57F", id="json-object-text"),
        pytest.param([{"role": "assistant", "parts": [{"type": "text", "content": "Paris"}]}], "Paris", id="genai-parts"),
        pytest.param(None, "", id="nothing"),
    ],
)
def test_input_and_output_values_give_their_text(value, expected) -> None:
    assert text_of(value) == expected


@pytest.mark.parametrize(
    ("nested", "expected"),
    [
        pytest.param({"input": {"value": "q"}}, {"input.value": "q"}, id="nested-object"),
        pytest.param({"retrieval": {"documents": [{"document": {"content": "c"}}]}},
                     {"retrieval.documents.0.document.content": "c"}, id="list-of-objects-indexed"),
        pytest.param({"retrieval.documents": [{"document.id": "d"}]}, {"retrieval.documents.0.document.id": "d"},
                     id="phoenix-decoder-style"),
        pytest.param({"llm.prompts": ["a", "b"]}, {"llm.prompts": ["a", "b"]}, id="list-of-scalars-kept"),
    ],
)
def test_attributes_flatten_to_dotted_keys(nested, expected) -> None:
    assert flatten(nested) == expected


def test_a_phoenix_spans_dataframe_saved_as_parquet_reads_like_the_jsonl_export(tmp_path) -> None:
    import pandas as pd

    rows = []
    for line in (TRACES / "phoenix_llama_index_rag_spans.jsonl").read_text(encoding="utf-8").splitlines():
        span = json.loads(line)
        a = span["attributes"]
        docs = [{f"document.{k}": v for k, v in d["document"].items()} for d in a.get("retrieval", {}).get("documents", [])]
        rows.append({"name": span["name"], "span_kind": span["span_kind"], "parent_id": span["parent_id"],
                     "start_time": pd.Timestamp(span["start_time"]), "context.span_id": span["span_id"],
                     "context.trace_id": span["trace_id"], "attributes.input.value": a.get("input", {}).get("value"),
                     "attributes.output.value": a.get("output", {}).get("value"),
                     "attributes.retrieval.documents": docs or None})
    pd.DataFrame(rows).to_parquet(tmp_path / "spans.parquet")  # the columns of Phoenix's get_spans_dataframe
    from_parquet, errors = read_traces(tmp_path / "spans.parquet", "phoenix")
    from_jsonl, _ = read_traces(TRACES / "phoenix_llama_index_rag_spans.jsonl", "phoenix")
    assert errors == []
    assert [(t.question, t.answer, t.documents) for t in from_parquet] == \
        [(t.question, t.answer, t.documents) for t in from_jsonl]
