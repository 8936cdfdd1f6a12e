"""Renamed protocol ids (issue 23): `ragstress` is now `kb_corruption`, `rag_stress` is `misleading_evidence`. The old
ids stay readable: old CLI commands run with a deprecation notice, files and stored rows naming the old id are read as
the new one, and a registry lookup by an old id finds the renamed protocol; an unknown id names the close matches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import text
from typer.testing import CliRunner

from core.cli import app
from core.ingest.io import export_instances, import_file, validate_lines
from core.protocols import PROTOCOLS, get_protocol, protocol_errors
from core.registry import UnknownNameError
from core.store.db import alembic_config
from core.store.schema import InstanceSpec

RENAMES = [pytest.param("ragstress", "kb_corruption", id="ragstress-kb_corruption"),
           pytest.param("rag_stress", "misleading_evidence", id="rag_stress-misleading_evidence")]

MCQ = {"answer_type": "mcq", "choices": {"A": "Paris", "B": "Rome"}, "answer_key": "A"}
EVIDENCE = [{"doc_id": "clean", "text": "Paris is the capital.", "role": "supporting", "variant": {"evidence": "clean"}},
            *({"doc_id": f"m-{p}", "text": "Rome is the capital.", "role": "counterfactual",
               "variant": {"evidence": "misleading", "position": p}} for p in ("beginning", "middle", "end"))]
RECORDS = {
    "ragstress": {"id": "kb-1", "domain": "RAGStress", "query": "Capital of France?", "reference": MCQ},
    "rag_stress": {"id": "me-1", "domain": "RAG-Stress", "query": "Capital of France?", "documents": EVIDENCE,
                   "reference": {"answers": [{"text": "Paris"}], "wrong_answers": ["Rome"]}},
}


def _record(old: str, protocol: str) -> dict:
    return {**RECORDS[old], "protocol": protocol}


@pytest.mark.parametrize(("old", "new"), RENAMES)
def test_registry_finds_the_renamed_protocol_by_its_old_id(old: str, new: str) -> None:
    with pytest.warns(DeprecationWarning, match=f"now called '{new}'"):
        protocol = get_protocol(old)
    assert protocol.name == new and protocol is PROTOCOLS.get(new) and old not in PROTOCOLS.names()


@pytest.mark.parametrize(("asked", "hint"), [
    pytest.param("kb_corupton", "did you mean: kb_corruption", id="typo-kb"),
    pytest.param("misleading_evidense", "did you mean: misleading_evidence", id="typo-misleading"),
    pytest.param("misleading", "did you mean: misleading_evidence", id="prefix"),
])
def test_unknown_protocol_lists_known_and_close_matches(asked: str, hint: str) -> None:
    with pytest.raises(UnknownNameError, match=hint):
        get_protocol(asked)
    [(field, message)] = protocol_errors(InstanceSpec(id="x", domain="d", query="q", protocol=asked))
    known = message.split("known: ", 1)[1].split(";", 1)[0].split(", ")
    assert field == "protocol" and hint in message and {"domainrag", "enterprise_rag"} <= set(known)


@pytest.mark.parametrize(("old", "new"), RENAMES)
def test_a_file_naming_the_old_id_validates_as_the_new_one(old: str, new: str) -> None:
    report = validate_lines((json.dumps(_record(old, old)) + "\n").encode())
    assert report.ok, report.errors
    [(_, spec)] = report.instances
    assert spec.protocol == new and protocol_errors(spec) == []


@pytest.mark.parametrize(("old", "new"), RENAMES)
def test_old_and_new_id_of_one_instance_are_the_same_content(old: str, new: str) -> None:
    assert InstanceSpec(**_record(old, old)) == InstanceSpec(**_record(old, new))


@pytest.mark.parametrize(("old", "new"), RENAMES)
def test_reimporting_an_old_id_file_is_unchanged(old: str, new: str, engine, tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(_record(old, new)) + "\n")
    assert import_file(engine, path).created == [RECORDS[old]["id"]]
    path.write_text(json.dumps(_record(old, old)) + "\n")
    assert import_file(engine, path, on_existing="new_version").unchanged == [RECORDS[old]["id"]]


def _stored_protocols(engine) -> dict[str, str]:
    with engine.connect() as conn:
        return dict(conn.execute(text("SELECT uid, protocol FROM instance")).all())


def test_migration_0020_renames_stored_rows(engine, db_url, tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(_record(old, old)) + "\n" for old in RECORDS))
    assert import_file(engine, path).ok
    engine.dispose()
    command.downgrade(alembic_config(db_url), "0019")
    assert _stored_protocols(engine) == {"kb-1": "ragstress", "me-1": "rag_stress"}  # rows as stored before 0020
    command.upgrade(alembic_config(db_url), "head")
    assert _stored_protocols(engine) == {"kb-1": "kb_corruption", "me-1": "misleading_evidence"}
    assert export_instances(engine, tmp_path / "out.jsonl") == 2
    exported = [json.loads(line)["protocol"] for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert sorted(exported) == ["kb_corruption", "misleading_evidence"]


CLI_CASES = [
    pytest.param(["ragstress", "build", "--help"], "`gauntlet ragstress` is deprecated; use `gauntlet kb-corruption`",
                 id="ragstress"),
    pytest.param(["rag-stress", "report", "--help"],
                 "`gauntlet rag-stress` is deprecated; use `gauntlet misleading-evidence`", id="rag-stress"),
    pytest.param(["kb-corruption", "build", "--help"], "", id="kb-corruption"),
    pytest.param(["misleading-evidence", "report", "--help"], "", id="misleading-evidence"),
]


@pytest.mark.parametrize(("args", "notice"), CLI_CASES)
def test_old_commands_still_run_with_a_deprecation_notice(args: list[str], notice: str) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.stdout and f"{args[1]}" in result.stdout
    assert (notice in result.stderr) if notice else "deprecated" not in result.stderr


def test_old_command_names_are_not_listed() -> None:
    listing = CliRunner().invoke(app, ["--help"]).stdout
    assert "kb-corruption" in listing and "misleading-evidence" in listing
    assert " ragstress " not in listing and " rag-stress " not in listing
