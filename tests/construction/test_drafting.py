"""Issue 43.2: an LLM (scripted on the loopback fake server, through the openai SDK) drafts candidate questions from a
folder of office documents; drafted questions are marked generated in the file, on every built instance and in the
build report, next to the team's real ones and never mixed silently."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from core.cli import app
from core.store.generated import generated_mark
from core.testing.fake_server import ScriptRule
from tests.construction.office_fixtures import office_folder, write_queries
from tests.factories import scripted_models

DRAFTS = [
    ScriptRule(match=r"Document: policy\.pdf p\.1", reply=json.dumps(
        {"question": "Within how many days is a refund paid?", "answer": "14 days"})),
    ScriptRule(match=r"Document: q3\.pptx slide 2", reply=json.dumps(
        {"question": "How many engineers joined in Lisbon?", "answer": "23 engineers"})),
    ScriptRule(match=r"Document: security\.html", reply=json.dumps(
        {"question": "Which disk encryption do laptops use?", "answer": "VeraCrypt"})),  # not in the text: dropped
    ScriptRule(match="", reply=json.dumps({"question": ""})),
]


def _report(output: str) -> dict:
    return json.loads(output[: output.rindex("}") + 1])


def test_drafted_queries_are_marked_generated_everywhere(tmp_path, engine):
    folder = office_folder(tmp_path / "docs")
    drafted = tmp_path / "drafted.jsonl"
    with scripted_models(engine, {"drafter": DRAFTS}, max_output_tokens=512):
        result = CliRunner().invoke(app, ["draft-queries", "--corpus", str(folder), "--out", str(drafted),
                                          "--llm", "drafter", "--domain", "company"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in drafted.read_text(encoding="utf-8").splitlines()]
    assert [(r["query"], r["answer_facts"], r["supporting_doc_ids"], r["query_origin"]) for r in rows] == [
        ("Within how many days is a refund paid?", ["14 days"], ["policy-001"], "generated"),
        ("How many engineers joined in Lisbon?", ["23 engineers"], ["q3-002"], "generated")]
    assert "'VeraCrypt' is not in the text" in result.output
    out = tmp_path / "bench.jsonl"
    built = CliRunner().invoke(app, ["build", "--corpus", str(folder), "--queries", str(drafted), "--queries",
                                     str(write_queries(tmp_path / "real.csv", "csv")), "--out", str(out),
                                     "--bm25-only"])
    assert built.exit_code == 0, built.output
    assert _report(built.stdout)["queries"] == {"generated": 2, "real": 6}
    instances = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    marks = {i["id"]: i["metadata"].get("query_origin", "real") for i in instances}
    assert {k for k, v in marks.items() if v == "generated"} >= {"gen-policy-001-noisy", "gen-q3-002-noisy"}
    assert all(v == "real" for k, v in marks.items() if not k.startswith("gen-"))
    named = {generated_mark(i["metadata"]).short() for i in instances if i["id"].startswith("gen-")}
    assert named == {"LLM-generated (drafter)"} and all(r["generated_by"] == "drafter" for r in rows)
    drafted_instances = sum(i["id"].startswith("gen-") for i in instances)
    assert f"{drafted_instances} of {len(instances)} instances are marked LLM-generated" in built.stdout
