"""Office documents in: a folder of PDF, DOCX, PPTX, XLSX, HTML, Markdown and text files made here becomes a corpus
with page/slide/section provenance, languages and duplicates; a corrupt PDF refuses the whole import; the CLI builds
an EnterpriseRAG benchmark from the folder and the team's CSV or JSONL questions."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli import app
from core.construction.build import load_queries
from core.construction.documents import Block, DocumentImportError, chunk_blocks, import_folder
from tests.construction.office_fixtures import office_folder, write_pdf, write_queries

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return office_folder(tmp_path_factory.mktemp("office") / "docs")


@pytest.fixture(scope="module")
def imported(folder):
    return import_folder(folder)


def _chunk(docs, needle):
    return next(d for d in docs if needle in d.text)


@pytest.mark.parametrize(("name", "needle", "file", "page", "section", "source"), [
    ("pdf page 1", "14 days", "policy.pdf", 1, "", "policy.pdf#page=1"),
    ("pdf page 2", "Rotterdam", "policy.pdf", 2, "", "policy.pdf#page=2"),
    ("docx section", "45 euros", "travel.docx", None, "Travel rules > Meals", "travel.docx"),
    ("docx table", "Madrid", "travel.docx", None, "Travel rules > Hotels", "travel.docx"),
    ("pptx slide 2", "23 engineers", "q3.pptx", 2, "Hiring", "q3.pptx#slide=2"),
    ("xlsx sheet", "Premium widget", "prices.xlsx", 1, "Prices", "prices.xlsx#sheet=1"),
    ("html section", "BitLocker", "security.html", None, "Security policy > Laptops", "security.html"),
    ("markdown section", "30 minutes", "support.md", None, "Support handbook > Escalation", "support.md"),
])
def test_provenance(imported, name, needle, file, page, section, source):
    doc = _chunk(imported[0], needle)
    assert (doc.meta["file"], doc.meta["page"], doc.meta["section"], doc.source) == (file, page, section, source), name
    assert file.split(".")[0] in doc.doc_id and file in doc.title


def test_tables_whole_scripts_dropped_languages_and_duplicates(imported):
    docs, report = imported
    table = _chunk(docs, "Madrid")
    assert table.meta["kind"] == "table" and "Paris" in table.text and "| --- |" in table.text
    assert not any("alert(1)" in d.text for d in docs)
    assert _chunk(docs, "vingt-cinq").meta["language"] == "fr"
    assert _chunk(docs, "Rotterdam").meta["language"] == "en"
    assert report.languages["fr"] == 1 and report.languages["en"] >= 8
    assert report.duplicates == {"support-001": "support-copy-001"}  # the repeated opening-hours section
    assert sum(report.by_file.values()) == report.chunks + len(report.duplicates)
    assert len(report.files) == 8


@pytest.mark.parametrize(("name", "blocks", "expected"), [
    ("one section joined", [Block(1, "A", "text", "one two"), Block(1, "A", "text", "three")], ["one two\n\nthree"]),
    ("new section, new chunk", [Block(1, "A", "text", "one"), Block(1, "B", "text", "two")], ["one", "two"]),
    ("new page, new chunk", [Block(1, "A", "text", "one"), Block(2, "A", "text", "two")], ["one", "two"]),
    ("long paragraph: word windows", [Block(None, "", "text", " ".join(f"w{i}" for i in range(12)))],
     ["w0 w1 w2 w3 w4 w5 w6 w7", "w6 w7 w8 w9 w10 w11"]),
    ("big table: rows under its header", [Block(None, "", "table", "| a |\n| --- |\n| r1 x y |\n| r2 x y |\n| r3 x y |")],
     ["| a |\n| --- |\n| r1 x y |", "| a |\n| --- |\n| r2 x y |", "| a |\n| --- |\n| r3 x y |"]),
])
def test_structure_aware_chunking(name, blocks, expected):
    assert [c.text for c in chunk_blocks(blocks, max_words=8, overlap=2)] == expected, name


def test_corrupt_pdf_refuses_the_whole_import(tmp_path):
    folder = office_folder(tmp_path / "docs")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >> garbage, no xref, no trailer")
    (folder / "renamed.pdf").write_bytes(b"PK\x03\x04 this is a zip, not a PDF")
    with pytest.raises(DocumentImportError) as err:
        import_folder(folder)
    names = dict(err.value.problems)
    assert set(names) == {"broken.pdf", "renamed.pdf"}
    assert "no %PDF- header" in names["renamed.pdf"] and names["broken.pdf"]
    assert "nothing imported" in str(err.value)


def test_scanned_pdf_without_text_is_named(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    write_pdf(folder / "blank.pdf", [("", "")])
    with pytest.raises(DocumentImportError, match=r"blank\.pdf: no text could be extracted"):
        import_folder(folder)


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_team_queries_from_jsonl_or_csv(tmp_path, fmt):
    queries = load_queries([write_queries(tmp_path / f"q.{fmt}", fmt)])
    assert [q["query_origin"] for q in queries] == ["real"] * 6
    refund = queries[0]
    assert refund["answer_facts"] == ["14 days"] and refund["supporting_doc_ids"] == ["policy.pdf"]
    assert queries[-1]["answerable"] is False


def test_cli_builds_enterprise_rag_from_the_folder(folder, tmp_path):
    out = tmp_path / "bench.jsonl"
    result = CliRunner().invoke(app, ["build", "--corpus", str(folder), "--queries",
                                      str(write_queries(tmp_path / "q.csv", "csv")), "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout[: result.stdout.rindex("}") + 1])
    assert report["corpus"]["chunks"] == 13 and report["corpus"]["duplicates"] == {"support-001": "support-copy-001"}
    assert report["queries"] == {"real": 6}
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert {r["mode"] for r in rows} == {"noisy", "gap", "conflict"}
    refund = next(r for r in rows if r["id"] == "q-refund-noisy")
    support = [d for d in refund["documents"] if d["role"] == "supporting"]
    assert [(d["doc_id"], d["source"]) for d in support] == [("policy-001", "policy.pdf#page=1")]
    gap = next(r for r in rows if r["id"] == "q-parking-gap")
    assert gap["documents"]
    assert CliRunner().invoke(app, ["validate", str(out)]).exit_code == 0


def test_cli_refuses_a_corrupt_pdf_and_writes_nothing(tmp_path):
    folder = office_folder(tmp_path / "docs")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4\ngarbage")
    out = tmp_path / "bench.jsonl"
    result = CliRunner().invoke(app, ["build", "--corpus", str(folder), "--queries",
                                      str(write_queries(tmp_path / "q.jsonl")), "--out", str(out)])
    assert result.exit_code != 0
    assert "broken.pdf" in result.output and "nothing imported" in result.output
    assert not out.exists()


def test_docs_how_to_runs_as_written(tmp_path, monkeypatch):
    from tests.docs_blocks import bash_commands

    monkeypatch.chdir(tmp_path)
    office_folder(tmp_path / "team_docs")
    write_queries(tmp_path / "team_questions.csv", "csv")
    for command in bash_commands(REPO / "docs" / "construction.md", "Your own documents"):
        args = shlex.split(command)
        assert args[0] == "gauntlet"
        result = CliRunner().invoke(app, args[1:])
        assert result.exit_code == 0, (command, result.output)
    assert (tmp_path / "team_bench.jsonl").read_text(encoding="utf-8").count("\n") >= 8
