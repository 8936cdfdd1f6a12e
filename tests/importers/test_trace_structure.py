"""Trace records of the wrong structure are refused with their position (file:line: field: message), never read as
an item with fewer documents or a traceback; nesting deeper than 100 levels (100,000 deep included) is refused with
its line and column, in all four formats."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from core.cli import app
from core.ingest.importers.traces import read_traces

TRACE = {"id": "t1", "input": "What is the refund window?", "output": "30 days."}
OBS = {"id": "o1", "type": "SPAN", "name": "retrieve"}
OI = {"context": {"trace_id": "t1", "span_id": "s1"}, "attributes": {"input.value": "q", "output.value": "a"}}


def _otel(span: object = None, *, resource: object = None, scope: object = None) -> dict:
    span = {"traceId": "t1", "spanId": "s1", "attributes": [{"key": "input.value", "value": {"stringValue": "q"}}]} \
        if span is None else span
    scope = {"spans": [span]} if scope is None else scope
    return {"resourceSpans": [{"scopeSpans": [scope]} if resource is None else resource]}


def _lines(*records: object) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


MALFORMED = [
    pytest.param("langfuse", _lines({"trace": TRACE, "observations": {"id": "o1"}}),
                 "line 1: observations: must be a list, not an object", id="langfuse-observations-an-object"),
    pytest.param("langfuse", _lines({"trace": TRACE, "observations": []}, {"trace": TRACE, "observations": "o1"}),
                 "line 2: observations: must be a list, not a string", id="langfuse-observations-a-string-line-2"),
    pytest.param("langfuse", _lines({"trace": {**TRACE, "observations": 3}}),
                 "line 1: trace.observations: must be a list, not a number", id="langfuse-nested-observations-a-number"),
    pytest.param("langfuse", _lines({"trace": [TRACE], "observations": []}),
                 "line 1: trace: must be an object, not a list", id="langfuse-trace-a-list"),
    pytest.param("langfuse", _lines({"trace": TRACE, "observations": ["o1"]}),
                 "line 1: observations[0]: must be an object, not a string", id="langfuse-observation-a-string"),
    pytest.param("langfuse", _lines({"trace": TRACE, "observations": [{**OBS, "metadata": [1]}]}),
                 "line 1: observations[0].metadata: must be an object or a string, not a list",
                 id="langfuse-metadata-a-list"),
    pytest.param("langfuse", _lines({"trace": TRACE, "observations": [{**OBS, "type": {"x": 1}}]}),
                 "line 1: observations[0].type: must be a string, not an object", id="langfuse-type-an-object"),
    pytest.param("otel", _lines(_otel(resource=[1])), "line 1: resourceSpans[0]: must be an object, not a list",
                 id="otel-resource-spans-entry-a-list"),
    pytest.param("otel", _lines({"resourceSpans": [{"scopeSpans": {"spans": []}}]}),
                 "line 1: resourceSpans[0].scopeSpans: must be a list, not an object", id="otel-scope-spans-an-object"),
    pytest.param("otel", _lines(_otel(scope={"spans": "s1"})),
                 "line 1: resourceSpans[0].scopeSpans[0].spans: must be a list, not a string", id="otel-spans-a-string"),
    pytest.param("otel", _lines(_otel(span="s1")),
                 "line 1: resourceSpans[0].scopeSpans[0].spans[0]: must be an object, not a string",
                 id="otel-span-a-string"),
    pytest.param("otel", _lines(_otel({"traceId": "t1", "spanId": "s1", "attributes": {"input.value": "q"}})),
                 "line 1: resourceSpans[0].scopeSpans[0].spans[0].attributes: must be a list, not an object",
                 id="otel-attributes-an-object"),
    pytest.param("otel", _lines(_otel({"traceId": "t1", "spanId": "s1", "attributes": [{"key": "k", "value": "v"}]})),
                 "line 1: resourceSpans[0].scopeSpans[0].spans[0].attributes[0].value: must be an object, not a string",
                 id="otel-attribute-value-a-string"),
    pytest.param("otel", _lines(_otel({"traceId": "t1", "spanId": "s1", "attributes": [
        {"key": "k", "value": {"arrayValue": [{"stringValue": "a"}]}}]})),
                 "line 1: resourceSpans[0].scopeSpans[0].spans[0].attributes[0].value.arrayValue: must be an object, "
                 "not a list", id="otel-array-value-a-list"),
    pytest.param("otel", _lines(_otel({"traceId": "t1", "spanId": "s1", "attributes": [
        {"key": "k", "value": {"kvlistValue": {"values": [{"key": "a", "value": {"intValue": "ten"}}]}}}]})),
                 "line 1: resourceSpans[0].scopeSpans[0].spans[0].attributes[0].value.kvlistValue.values[0].value"
                 '.intValue: must be a number (or its text), not a string "ten"', id="otel-int-value-not-a-number"),
    pytest.param("otel", _lines({"resourceSpans": [{"resource": {"attributes": [{"key": 7, "value": {}}]},
                                                    "scopeSpans": []}]}),
                 "line 1: resourceSpans[0].resource.attributes[0].key: must be a string, not a number",
                 id="otel-resource-attribute-key-a-number"),
    pytest.param("otel", _lines(_otel({"traceId": ["t1"], "spanId": "s1"})),
                 "line 1: resourceSpans[0].scopeSpans[0].spans[0].traceId: must be a string, not a list",
                 id="otel-trace-id-a-list"),
    pytest.param("openinference", _lines(OI, {**OI, "context": ["t1", "s1"]}),
                 "line 2: context: must be an object, not a list", id="openinference-context-a-list"),
    pytest.param("openinference", _lines({**OI, "attributes": [["input.value", "q"]]}),
                 "line 1: attributes: must be an object, not a list", id="openinference-attributes-a-list"),
    pytest.param("phoenix", _lines({**OI, "context": {"trace_id": {"id": "t1"}, "span_id": "s1"}}),
                 "line 1: context.trace_id: must be a string or a number, not an object", id="phoenix-trace-id-an-object"),
    pytest.param("phoenix", json.dumps({"spans": {"0": OI}}), "line 1: spans: must be a list, not an object",
                 id="phoenix-spans-an-object"),
]


@pytest.mark.parametrize(("fmt", "text", "expected"), MALFORMED)
def test_a_record_of_the_wrong_structure_is_refused_with_its_position(tmp_path, fmt, text, expected):
    path = tmp_path / "export.jsonl"
    path.write_text(text, encoding="utf-8")
    _, errors = read_traces(path, fmt)
    assert expected in [str(e) for e in errors], [str(e) for e in errors]


def test_the_cli_refuses_a_langfuse_record_whose_observations_is_not_a_list(tmp_path, db_url):
    path = tmp_path / "langfuse.jsonl"
    path.write_text(_lines({"trace": TRACE, "observations": {"id": "o1", "type": "RETRIEVER"}}), encoding="utf-8")
    result = CliRunner().invoke(app, ["import", "--format", "langfuse", str(path)])
    assert result.exit_code == 1, result.output
    assert f"{path}:1: observations: must be a list, not an object" in result.output
    assert "Traceback" not in result.output


def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


DEEP_RECORDS = {
    "otel": lambda v: {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "t1", "spanId": "s1", "attributes": [
        {"key": "input.value", "value": {"stringValue": "q"}}, {"key": "x", "value": {"arrayValue": {"values": v}}}]}]}]}]},
    "openinference": lambda v: {"context": {"trace_id": "t1", "span_id": "s1"}, "attributes": {"input": {"value": v}}},
    "langfuse": lambda v: {"trace": {"id": "t1", "input": v}, "observations": []},
    "phoenix": lambda v: {"context": {"trace_id": "t1", "span_id": "s1"}, "attributes": {"x": v}},
}
MARK = "__DEEP__"


@pytest.mark.parametrize("fmt", list(DEEP_RECORDS))
@pytest.mark.parametrize("levels", [150, 100_000], ids=["150-deep", "100000-deep"])
@pytest.mark.parametrize("layout", ["jsonl-second-line", "one-document"])
def test_deep_nesting_is_refused_with_line_and_column(tmp_path, fmt, levels, layout):
    record = json.dumps(DEEP_RECORDS[fmt](MARK))
    deep = record.replace(json.dumps(MARK), _deep(levels))
    text = (json.dumps(DEEP_RECORDS[fmt]("ok")) + "\n" + deep + "\n") if layout == "jsonl-second-line" else \
        "\n\n" + deep
    line = 2 if layout == "jsonl-second-line" else 3
    column = deep.index("[" * 50) + 1  # where the deep value opens, then as many levels as the record already had
    before = record[: record.index(json.dumps(MARK))]
    column += 100 - (before.count("[") + before.count("{") - before.count("]") - before.count("}"))
    path = tmp_path / "export.jsonl"
    path.write_text(text, encoding="utf-8")
    _, errors = read_traces(path, fmt)
    assert [e.located(path) for e in errors] == [
        f"{path}:{line}: malformed JSON: nested too deeply (more than 100 levels) (column {column})"]


def test_a_deeply_nested_json_text_inside_a_value_stays_text(tmp_path):
    question = _deep(5000)
    path = tmp_path / "langfuse.jsonl"
    path.write_text(_lines({"trace": {**TRACE, "input": question}, "observations": []}), encoding="utf-8")
    traces, errors = read_traces(path, "langfuse")
    assert errors == []
    assert [t.question for t in traces] == [question]
