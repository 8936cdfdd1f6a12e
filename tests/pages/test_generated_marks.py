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
    at = page_as("pages/adjudicate.py", "admin")
    picked = at.selectbox(key="vadj_pick")
    assert WRITTEN in picked.format_func(picked.value)
    assert "LLM-generated: misleading evidence written by writer-m" in _captions(at)


def test_build_page_counts_the_marks_of_a_protocol_build(marked, tmp_path) -> None:
    from core.protocols.base import BuildResult

    out = write_specs([generated_stress_item(), generated_stress_item("writer-2", "1899")], tmp_path / "built.jsonl")
    at = AppTest.from_file(str(ROOT / "pages/build_benchmark.py"), default_timeout=60)
    at.session_state["gauntlet_principal"] = principal("admin")
    at.session_state["build_misleading_evidence_result"] = BuildResult(out, 2, ["built 2"])
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
