"""Issue 43: generated queries and items are marked as generated wherever they are listed, by one helper
(core.store.generated) that every page, export and CLI listing calls. A misleading-evidence item whose edit a model
wrote (the real generative path) and an EnterpriseRAG instance on a drafted query are seeded; each page shows the
mark with its model, and the human-made items carry none."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from sqlmodel import Session, select
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from core.cli import app
from core.ingest.io import import_file
from core.review.verification import record_verification
from core.services.protocol_builds import build_tabs
from core.store.generated import GeneratedMark, GeneratedPart, generated_mark, query_mark
from core.store.models import Domain, Instance
from tests.generated_items import drafted_query_meta, generated_stress_item, write_specs
from tests.pages.test_workspace_flows import page_as
from tests.workspace_factories import T0, principal, seeded_db

ROOT = Path(__file__).resolve().parents[2]
STRESS_UID = "misleading_evidence/mill-1"
WRITTEN = "LLM-generated (writer-m)"
DRAFTED = "LLM-generated (drafter-m)"


@pytest.fixture
def marked(tmp_path, monkeypatch):
    """The seeded database plus a model-written misleading-evidence item (oldest, in Energy: first in alice's queue)
    and E-gap's query drafted by a model."""
    s = seeded_db(tmp_path)
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", s.url)
    report = import_file(s.engine, write_specs([generated_stress_item()], tmp_path / "stress.jsonl"))
    assert report.ok, report.errors
    with Session(s.engine) as session:
        energy = session.exec(select(Domain).where(Domain.name == "Energy")).one()
        stress = session.exec(select(Instance).where(Instance.uid == STRESS_UID)).one()
        stress.domain_id, stress.created_at = energy.id, T0 - timedelta(minutes=5)
        gap = session.get(Instance, s.instances["E-gap"])
        gap.meta = {**gap.meta, **drafted_query_meta()}
        session.add_all([stress, gap])
        session.commit()
        stress_id = stress.id
    return s, stress_id


def _browse(at: AppTest, _: int) -> dict[str, str]:
    frame = next(d.value for d in at.dataframe if "generated" in d.value.columns and "uid" in d.value.columns)
    return dict(zip(frame["uid"], frame["generated"], strict=True))


def _captions(at: AppTest) -> str:
    return "\n".join(c.value for c in at.caption)


def _data_quality(at: AppTest, _: int) -> dict[str, str]:
    frame = next(d.value for d in at.dataframe if list(d.value.columns) == ["protocol", "generated", "instances"])
    return {f"{r.protocol}|{r.generated}": str(r.instances) for r in frame.itertuples()}


PAGE_CASES = [
    pytest.param("pages/browse_benchmark.py", "vic", _browse,
                 {STRESS_UID: WRITTEN, "E-gap": DRAFTED, "E-noisy": "", "E-conflict": "", "M-noisy": ""},
                 id="browse-benchmark-table"),
    pytest.param("pages/data_quality.py", "ana", _data_quality,
                 {f"misleading_evidence|{WRITTEN}": "1", f"enterprise_rag|{DRAFTED}": "1",
                  "enterprise_rag|not generated (rules or people)": "3"}, id="data-quality-counts"),
]


@pytest.mark.parametrize(("page", "who", "read", "expected"), PAGE_CASES)
def test_listing_pages_mark_generated_items(marked, page, who, read, expected) -> None:
    _, stress_id = marked
    at = page_as(page, who)
    found = read(at, stress_id)
    assert {k: found.get(k) for k in expected} == expected


def test_verification_workspace_shows_the_mark_of_the_open_item(marked) -> None:
    _, stress_id = marked
    at = page_as("pages/verify_instances.py", "alice")
    assert STRESS_UID in "\n".join(m.value for m in at.markdown)
    assert "LLM-generated: misleading evidence written by writer-m" in _captions(at)


def test_browse_detail_and_my_decisions_show_the_mark(marked) -> None:
    seeded, _ = marked
    at = page_as("pages/browse_benchmark.py", "vic")
    at.selectbox(key="browse_open").set_value("E-gap").run()
    assert "LLM-generated: query drafted by drafter-m" in _captions(at)
    record_verification(seeded.engine, principal("alice"), seeded.instances["E-gap"], consistency="consistent",
                        context_valid=True, decision="accept", client_token="t-gap")
    at = page_as("pages/verify_instances.py", "alice")
    at.segmented_control(key="v_view").set_value("mine").run()
    frame = next(d.value for d in at.dataframe if "generated" in d.value.columns)
    assert dict(zip(frame["instance"], frame["generated"], strict=True)) == {"E-gap": DRAFTED}


def test_adjudication_lists_and_shows_the_mark(marked) -> None:
    seeded, stress_id = marked
    for who, decision in (("alice", "accept"), ("bob", "reject")):
        record_verification(seeded.engine, principal(who), stress_id, consistency="consistent", context_valid=True,
                            decision=decision, client_token=f"{who}-mill", overlap=1.0)
    at = page_as("pages/adjudicate.py", "admin", adj_tab="Verification disagreements")
    picked = at.selectbox(key="vadj_pick")
    assert WRITTEN in picked.format_func(picked.value)
    assert "LLM-generated: misleading evidence written by writer-m" in _captions(at)


def test_build_page_counts_the_marks_of_a_protocol_build(marked, tmp_path) -> None:
    from core.protocols.base import BuildResult

    out = write_specs([generated_stress_item(), generated_stress_item("writer-2", "1899")], tmp_path / "built.jsonl")
    at = AppTest.from_file(str(ROOT / "pages/build_benchmark.py"), default_timeout=60)
    at.session_state["gauntlet_principal"] = principal("admin")
    at.session_state["build_misleading_evidence_result"] = BuildResult(out, 2, ["built 2"])
    at.session_state["build_tab"] = build_tabs()["misleading_evidence"]  # the build's summary is on its tab
    at.run()
    assert not at.exception, at.exception
    frame = next(d.value for d in at.dataframe if list(d.value.columns) == ["generated", "instances"])
    assert dict(zip(frame["generated"], frame["instances"], strict=True)) == {WRITTEN: 1, "LLM-generated (writer-2)": 1}


CLI_CASES = [
    pytest.param(["stats"], [f"generated       {WRITTEN}", f"generated       {DRAFTED}"], id="stats"),
]


@pytest.mark.parametrize(("args", "lines"), CLI_CASES)
def test_cli_listings_mark_generated_items(marked, args, lines) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    for line in lines:
        assert line in result.output


def test_export_marks_items_and_reimport_changes_nothing(marked, tmp_path) -> None:
    seeded, _ = marked
    out = tmp_path / "export.jsonl"
    result = CliRunner().invoke(app, ["export", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "(2 marked LLM-generated or LLM-edited under metadata.generated)" in result.output
    records = {r["id"]: r["metadata"].get("generated") for r in map(json.loads, out.read_text().splitlines())}
    assert records[STRESS_UID]["mark"] == WRITTEN and records[STRESS_UID]["models"] == ["writer-m"]
    assert records["E-gap"]["parts"] == [{"part": "query", "how": "drafted", "model": "drafter-m"}]
    assert records["E-noisy"] is None
    with Session(seeded.engine) as session:
        before = len(session.exec(select(Instance)).all())
    report = import_file(seeded.engine, out)
    with Session(seeded.engine) as session:
        assert len(session.exec(select(Instance)).all()) == before, report  # the derived mark is not content


MARK_CASES = [
    pytest.param({}, None, None, id="human-made"),
    pytest.param({"query_origin": "real"}, None, None, id="real-query"),
    pytest.param(drafted_query_meta("m1"), None, "LLM-generated: query drafted by m1", id="drafted-query"),
    pytest.param({"query_origin": "generated"}, None, "LLM-generated: query drafted by model not recorded",
                 id="drafted-query-model-unknown"),
    pytest.param({"rag_stress": {"method": "rule"}}, None, None, id="rule-edit"),
    pytest.param({"rag_stress": {"method": "llm:m2"}}, None, "LLM-edited: misleading evidence edited by m2",
                 id="llm-reworded-rule-edit"),
    pytest.param({"rag_stress": {"method": "llm:m2", "generated": True}}, None,
                 "LLM-generated: misleading evidence written by m2", id="llm-written-edit"),
    pytest.param({"atomic_ids": ["a", "b"], "llm_model": "m3"}, 3, "LLM-generated: 1 constraint(s) added by m3",
                 id="augmented-constraints"),
    pytest.param({"atomic_ids": ["a", "b"]}, 2, None, id="library-constraints-only"),
    pytest.param({"atomic_ids": ["a"], "removed_atomics": [["b", "removed by LLM review"]], "llm_model": "m3"}, 1,
                 "LLM-edited: instruction set edited by m3", id="llm-pruned-instructions"),
    pytest.param({"bundle": {"edited_fact": "1998", "generated": True, "generated_by": "w5"}}, None,
                 "LLM-generated: conflicting evidence written by w5", id="conflict-written-by-generator"),
    pytest.param({"bundle": {"generated": True}, "llm_model": "w6"}, None,
                 "LLM-generated: gap evidence written by w6", id="gap-written-model-from-build"),
    pytest.param({"bundle": {"edited_fact": "1998", "generated": False}}, None, None, id="conflict-rule-edit"),
    pytest.param({"llm_generated": [{"part": "conflicting document", "how": "written", "model": "m4"}]}, None,
                 "LLM-generated: conflicting document written by m4", id="builder-record"),
]


@pytest.mark.parametrize(("meta", "constraints", "label"), MARK_CASES)
def test_one_helper_decides_the_mark(meta, constraints, label) -> None:
    mark = generated_mark(meta, constraints)
    assert (mark.label() if mark else None) == label


def test_query_mark_and_short_form() -> None:
    assert query_mark({"query_origin": "real"}) is None
    assert query_mark({"query_origin": "generated", "generated_by": "m1"}).short() == "LLM-generated (m1)"
    both = GeneratedMark((GeneratedPart("query", "drafted", "m1"), GeneratedPart("evidence", "edited", "m2")))
    assert both.short() == "LLM-generated (m1, m2)" and both.models == ["m1", "m2"]


def test_misleading_evidence_drilldown_names_the_writer(engine, tmp_path) -> None:
    from core.protocols.misleading_evidence import analysis

    assert import_file(engine, write_specs([generated_stress_item()], tmp_path / "stress.jsonl")).ok
    assert analysis.evidence(engine, STRESS_UID)["generated"] == "LLM-generated: misleading evidence written by writer-m"


def _kb_doc(doc_id: str, written_by: str | None):
    from core.construction.corpus import doc_from_record

    record = {"doc_id": doc_id, "title": "Entry", "text": "An entry.", "is_corrupted": written_by is not None}
    return doc_from_record({**record, "written_by": written_by} if written_by is not None else record)


KB_CASES = [
    pytest.param([("q1#clean", None), ("q1#factual-subtle", None)], None, id="offline-entries-no-mark"),
    pytest.param([("q1#clean", None), ("q1#factual-subtle", "kb-writer"), ("q1#numeric-subtle", "kb-writer")],
                 "LLM-generated: 2 corrupted knowledge-base entries written by kb-writer", id="own-entries-written"),
    pytest.param([("q1#factual-subtle", "kb-writer"), ("q1#factual-subtle", "kb-writer")],
                 "LLM-generated: 1 corrupted knowledge-base entry written by kb-writer",
                 id="entry-retrieved-under-two-conditions-counted-once"),
    pytest.param([("q1#factual-subtle", "kb-b"), ("q2#contradiction-obvious", "kb-a")],
                 "LLM-generated: 1 corrupted knowledge-base entry written by kb-a; 1 corrupted knowledge-base entry "
                 "written by kb-b", id="noise-entry-of-another-item-by-another-model"),
]


@pytest.mark.parametrize(("entries", "label"), KB_CASES)
def test_kb_corruption_llm_written_entries_mark_the_instance(entries, label) -> None:
    """kb_corruption: an instance whose retrieved documents include LLM-written knowledge-base entries is marked
    (builder.llm_written records, read by the one helper), counted per model; offline entries leave no mark."""
    from core.protocols.kb_corruption.builder import llm_written
    from core.store.generated import GENERIC_KEY
    from core.store.schema import DocumentSpec

    kb = {doc_id: _kb_doc(doc_id, by) for doc_id, by in entries}
    documents = [DocumentSpec(doc_id=doc_id, title="Entry", text="An entry.", role="counterfactual")
                 for doc_id, _ in entries]
    records = llm_written(documents, kb)
    mark = generated_mark({GENERIC_KEY: records} if records else {})
    assert (mark.label() if mark else None) == label


RESPONSE_CASES = [
    pytest.param("E-gap", DRAFTED, "LLM-generated: query drafted by drafter-m", id="response-to-drafted-query"),
    pytest.param(STRESS_UID, WRITTEN, "LLM-generated: misleading evidence written by writer-m",
                 id="response-to-written-evidence"),
    pytest.param("E-noisy", "", None, id="response-to-human-item"),
]


@pytest.mark.parametrize(("uid", "short", "label"), RESPONSE_CASES)
def test_response_drilldowns_carry_the_mark(marked, uid, short, label) -> None:
    """The drill-down listings (marks_by_response: the table's 'generated' column and the pick labels) and the opened
    response (response_details) name the LLM mark of the instance the response answered."""
    from core.analysis import readmodel
    from core.store.benchmark import marks_by_response
    from core.store.models import Model, Response

    seeded, stress_id = marked
    with Session(seeded.engine) as session:  # model-a answered the imported stress item too
        model = session.exec(select(Model).where(Model.name == "model-a")).one()
        answer = Response(run_id=seeded.run_id, model_id=model.id, instance_id=stress_id, status="done", text="1900")
        session.add(answer)
        session.commit()
        response_ids = {**{u: r for (m, u), r in seeded.responses.items() if m == "model-a"}, STRESS_UID: answer.id}
    marks = marks_by_response(seeded.engine, [response_ids[uid]])
    assert (marks[response_ids[uid]].short() if marks[response_ids[uid]] else "") == short
    detail = readmodel.response_details(seeded.engine, response_ids[uid], "heuristic")
    assert (detail["generated"].label() if detail["generated"] else None) == label


def test_compare_responses_lists_and_shows_the_mark(marked) -> None:
    """Compare responses: the instance picker's labels carry the mark, and the open instance shows it in full."""
    from core.store.models import Verdict

    seeded, _ = marked
    with Session(seeded.engine) as session:  # one verdict makes the seeded run a scored run the page lists
        session.add(Verdict(response_id=seeded.responses[("model-a", "E-gap")], run_id=seeded.run_id,
                            judge="heuristic", metric="faithfulness", value=1.0, passed=True))
        session.commit()
    at = AppTest.from_file(str(ROOT / "pages/compare_responses.py"), default_timeout=60)
    at.session_state["gauntlet_principal"] = principal("ana")
    at.query_params["response"] = str(seeded.responses[("model-a", "E-gap")])
    at.run()
    assert not at.exception, at.exception
    picker = at.selectbox(key="cmp_instance")
    labels = set(picker.options)  # AppTest holds the formatted labels
    assert any(label.endswith(f" · {DRAFTED}") for label in labels)
    assert sum(label.endswith(DRAFTED) for label in labels) == 1  # the human-made instances carry none
    assert "LLM-generated: query drafted by drafter-m" in _captions(at)


def test_label_disagreement_picker_carries_the_mark(marked) -> None:
    """Gold labels & adjudication: a disagreement on a response to a drafted-query instance names the mark in the
    picker (marks_by_response), one on a human-made instance none."""
    from core.review.gold import draw_gold_sample, record_gold_label

    seeded, _ = marked
    draw_gold_sample(seeded.engine, principal("admin"), seeded.run_id, n=12, experts=["alice", "bob"])
    disagreeing = {"E-gap": ({"valid_refusal": 1}, {"valid_refusal": 0}), "E-noisy": ({}, {"constraints": {"c2": False}})}
    for uid, (first, second) in disagreeing.items():
        rid = seeded.responses[("model-a", uid)]
        for who, extra in (("alice", first), ("bob", second)):
            payload = {**extra, "constraints": {"c1": True, "c2": True, **extra.get("constraints", {})}}
            record_gold_label(seeded.engine, principal(who), rid, payload, f"{who}-{uid}")
    at = page_as("pages/adjudicate.py", "admin", adj_tab="Disagreements")
    options = at.selectbox(key="adj_pick").options
    gap, noisy = (f"response #{seeded.responses[('model-a', u)]} · " for u in ("E-gap", "E-noisy"))
    assert [o for o in options if o.startswith(gap)] == [f"{gap}differs on valid_refusal · {DRAFTED}"]
    assert [o for o in options if o.startswith(noisy)] == [f"{noisy}differs on constraint:c2"]  # human-made: no mark
