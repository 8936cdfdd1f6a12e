"""RAG-Stress from TriviaQA-RC and SearchQA in their published layouts: the importers on published records (counts,
fields, aliases, passage order, records given back as read), the build on them (built and skipped with reasons, one
edited span inside one sentence, the wrong answer stated and the gold not), whole-file errors with their position,
and one built record end to end through `gauntlet misleading-evidence build` and `gauntlet import`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli import app
from core.config import REPO_ROOT
from core.ingest.importers import get_importer, source_record
from core.protocols.misleading_evidence import POSITIONS
from core.protocols.misleading_evidence.builder import one_span_diff
from core.protocols.misleading_evidence.builder_plans import build_stress
from core.scoring.reference import contains, normalize
from core.store.schema import InstanceSpec

FIXTURES = REPO_ROOT / "tests" / "fixtures"
TRIVIA = FIXTURES / "triviaqa" / "qa"
SEARCH = FIXTURES / "searchqa"


def parsed(fmt: str, path: Path) -> list[InstanceSpec]:
    report = get_importer(fmt).parse(path)
    assert report.ok, report.errors[:3]
    return [spec for _, spec in report.instances]


def raw_records(fmt: str, path: Path) -> list[dict]:
    """The published records as plain JSON, in file order."""
    if fmt == "triviaqa":
        return json.loads(path.read_text(encoding="utf-8"))["Data"]
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(path.glob("*.json"))]


@pytest.mark.parametrize(("fmt", "path", "ids", "lines", "gold", "alias", "titles"), [
    pytest.param("triviaqa", TRIVIA / "web-dev.json", ["tc_2", "tc_33"], [3, 38], "Sunset Boulevard", "Sunset Blvd",
                 ["Andrew Lloyd Webber", "Andrew Lloyd Webber | The official website for Andrew ...",
                  "Shows | Andrew Lloyd Webber"], id="triviaqa-web-dev"),
    pytest.param("triviaqa", TRIVIA / "wikipedia-train.json", ["tc_3", "tc_8", "tc_9", "tc_10"], [3, 70, 201, 320],
                 "York", "York, England", ["England", "Judi Dench"], id="triviaqa-wikipedia-train"),
    pytest.param("searchqa", SEARCH / "train", ["19", "38"], [1, 1], "(Lou) Gehrig", "Lou Gehrig", None,
                 id="searchqa-train"),
    pytest.param("searchqa", SEARCH / "jeopardy", ["30000", "30001"], [1, 1], "Samos", None, None,
                 id="searchqa-jeopardy"),
])
def test_import_of_published_records(fmt, path, ids, lines, gold, alias, titles) -> None:
    report = get_importer(fmt).parse(path)
    assert report.ok and [line for line, _ in report.instances] == lines
    specs = [spec for _, spec in report.instances]
    raw = raw_records(fmt, path)
    assert [s.id for s in specs] == [f"{fmt}/{i}" for i in ids] and all(s.language == "en" for s in specs)
    first = next(s for s in specs if s.reference and s.reference.answers[0].text == gold)
    assert alias is None or alias in first.reference.answers[0].aliases
    if titles is not None:
        assert [d.title for d in first.documents] == titles
    for spec, record in zip(specs, raw, strict=True):
        assert [d.variant["rank"] for d in spec.documents] == list(range(len(spec.documents)))
        assert all(d.role == "supporting" and d.text.strip() for d in spec.documents)
        assert source_record(spec) == record  # given back exactly as read


def test_triviaqa_evidence_is_the_published_text_and_searchqa_keeps_every_snippet() -> None:
    spec = parsed("triviaqa", TRIVIA / "web-dev.json")[1]
    evidence = FIXTURES / "triviaqa" / "evidence"
    assert spec.documents[0].text == (evidence / "wikipedia" / "Andrew_Lloyd_Webber.txt").read_text(encoding="utf-8")
    assert spec.documents[1].text == (evidence / "web" / "35" / "35_995.txt").read_text(encoding="utf-8")
    samos, broderick = parsed("searchqa", SEARCH / "jeopardy")
    assert (len(samos.documents), len(broderick.documents)) == (50, 31)
    assert samos.attributes.categories == ["B.C. PEOPLE"]


BUILDS = [
    pytest.param("triviaqa", TRIVIA / "web-train.json", {"tc_3": "York", "tc_5": "30's"},
                 {"tc_1": "no same-type entity in the other passages (person)"}, id="triviaqa-web-train"),
    pytest.param("triviaqa", TRIVIA / "wikipedia-dev.json", {"tc_40": "Campbell-Bannerman"},
                 {"tc_33": "no same-type entity in the other passages (work)"}, id="triviaqa-wikipedia-dev"),
    pytest.param("triviaqa", TRIVIA / "wikipedia-train.json", {"tc_3": "York", "tc_8": "Portugal"},
                 {"tc_9": "no same-type entity in the other passages (place)",
                  "tc_10": "no same-type entity in the other passages (person)"}, id="triviaqa-wikipedia-train"),
    pytest.param("searchqa", SEARCH / "jeopardy", {"30000": "Samos", "30001": "Matthew Broderick"}, {},
                 id="searchqa-jeopardy"),
    pytest.param("searchqa", SEARCH / "train", {},
                 {"19": "no same-type entity in the other passages (person)",
                  "38": "no evidence sentence states the answer"}, id="searchqa-train"),
    pytest.param("searchqa", SEARCH / "test", {},
                 {"528": "not a named entity, date or number",
                  "1506": "no same-type entity in the other passages (person)"}, id="searchqa-test"),
]


def _states(text: str, answer: str) -> bool:
    return contains(normalize(text, "word"), normalize(answer, "word"), "word")


@pytest.mark.parametrize(("fmt", "path", "built", "skipped"), BUILDS)
def test_build_on_published_records(fmt, path, built, skipped) -> None:
    specs = parsed(fmt, path)
    result = build_stress(specs, seed=0)
    assert {s.id.removeprefix(f"{fmt}/"): s.reason for s in result.skipped} == skipped
    assert {i.id.removeprefix(f"misleading_evidence/{fmt}/"): i.documents[0].variant["edit"]["before"]
            for i in result.instances} == built
    by_id = {s.id: s for s in specs}
    for instance in result.instances:
        source = by_id[instance.metadata["rag_stress"]["source_id"]]
        forms = [source.reference.answers[0].text, *source.reference.answers[0].aliases]
        wrong = instance.metadata["rag_stress"]["wrong_answer"]
        clean = instance.documents[0]
        edit = clean.variant["edit"]
        sentence = clean.text[edit["sentence_start"]:edit["sentence_end"]]
        passage = source.documents[instance.metadata["rag_stress"]["passage"]]
        assert sentence in " ".join(passage.text.split())  # the answer sentence is the published one
        assert clean.text[edit["start"]:edit["end"]] == edit["before"] and edit["before"] in forms
        for doc in instance.documents[1:]:
            position = doc.variant["position"]
            natural = clean.text if position is None else _clean_at(source, instance, position)
            start, end, new_end = one_span_diff(natural, doc.text)
            moved = doc.variant["edit"]
            assert moved["sentence_start"] <= start and new_end <= moved["sentence_end"]
            assert natural[start:end] in edit["before"] and doc.text[start:new_end] in wrong
            assert _states(doc.text, wrong) and not any(_states(doc.text, f) for f in forms)
        assert instance.reference.wrong_answers[0] == wrong


def _clean_at(source: InstanceSpec, instance: InstanceSpec, position: str) -> str:
    """The clean evidence with its answer sentence at `position` (rebuilt from the plan)."""
    from core.protocols.misleading_evidence.builder_passages import plan_passages

    plan = plan_passages(source, instance.metadata["rag_stress"]["seed"])
    return plan.evidence.text(position)


def test_each_position_is_built() -> None:
    instance = build_stress(parsed("searchqa", SEARCH / "jeopardy")).instances[0]
    assert [d.variant.get("position") for d in instance.documents] == [None, *POSITIONS]


def _truncate(path: Path, at: str) -> Path:
    text = path.read_text(encoding="utf-8")
    path.write_text(text[:text.index(at)], encoding="utf-8")
    return path


JEOPARDY_FILE = "030001-3724_doublejeopardy_collegemovies_800.json"


@pytest.mark.parametrize(("fmt", "make", "damaged", "field", "message"), [
    pytest.param("triviaqa", lambda tmp: _truncate(_copy_trivia(tmp) / "qa" / "web-train.json", '"QuestionId": "tc_5"'),
                 "triviaqa/qa/web-train.json", "", "malformed JSON", id="triviaqa-truncated"),
    pytest.param("searchqa", lambda tmp: _truncate(_copy_dir(SEARCH / "jeopardy", tmp / "j") / JEOPARDY_FILE,
                                                   '"answer"').parent,
                 f"j/{JEOPARDY_FILE}", "", f"{JEOPARDY_FILE}: malformed JSON", id="searchqa-truncated"),
    pytest.param("triviaqa", lambda tmp: _copy_file(TRIVIA / "web-dev.json", tmp / "qa" / "web-dev.json"), None,
                 "SearchResults[0].Filename", "evidence file web/61/61_97.txt cannot be read",
                 id="triviaqa-evidence-missing"),
])
def test_a_damaged_file_fails_with_its_position(fmt, make, damaged, field, message, tmp_path) -> None:
    report = get_importer(fmt).parse(make(tmp_path))
    assert not report.ok and not report.instances
    error = report.errors[0]
    assert error.field == field and message in error.message
    if damaged is None:  # a record whose evidence is missing: the line its record starts on
        assert error.line == 3
    else:  # a cut file fails on the line where its text stops, with the column
        text = (tmp_path / damaged).read_text(encoding="utf-8")
        assert error.line == text.count("\n") + 1 and "column" in error.message


def _copy_trivia(tmp: Path) -> Path:
    shutil.copytree(FIXTURES / "triviaqa", tmp / "triviaqa")
    return tmp / "triviaqa"


def _copy_file(source: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return target


def _copy_dir(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


@pytest.mark.parametrize(("fmt", "source", "built"), [
    pytest.param("triviaqa", TRIVIA / "web-train.json", 2, id="triviaqa"),
    pytest.param("searchqa", SEARCH / "jeopardy", 2, id="searchqa"),
])
def test_build_and_import_end_to_end(fmt, source, built, tmp_path, db_url) -> None:
    out = tmp_path / "stress.jsonl"
    result = CliRunner().invoke(app, ["misleading-evidence", "build", str(source), "--format", fmt, "--out", str(out)])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout[:result.stdout.rindex("}") + 1])
    assert summary["built"] == built and len(out.read_text(encoding="utf-8").splitlines()) == built
    imported = CliRunner().invoke(app, ["import", str(out)])
    assert imported.exit_code == 0 and f"imported {built} new" in imported.output


@pytest.mark.parametrize(("fmt", "evidence", "exit_code", "said"), [
    pytest.param("triviaqa", True, 0, '"built": 2', id="evidence-dir-given"),
    pytest.param("triviaqa", False, 1, "SearchResults[0].Filename", id="evidence-not-beside-the-qa-file"),
    pytest.param("searchqa", True, 2, "only TriviaQA-RC reads evidence files", id="not-for-searchqa"),
])
def test_evidence_dir_points_the_build_at_the_evidence(fmt, evidence, exit_code, said, tmp_path) -> None:
    qa = _copy_file(TRIVIA / "web-train.json", tmp_path / "elsewhere" / "web-train.json")
    args = ["misleading-evidence", "build", str(qa), "--format", fmt, "--out", str(tmp_path / "o.jsonl")]
    result = CliRunner().invoke(app, args + (["--evidence-dir", str(FIXTURES / "triviaqa" / "evidence")]
                                             if evidence else []))
    assert result.exit_code == exit_code and said in result.output, result.output
