"""The long-context protocol (issue 44): questions imported from LaRA's published query files (Alibaba-NLP/LaRA at
c171553, MIT: the first line of 11 of its 32k query files, committed in data/suites/lara/, README there; LaRA's long
texts are never bundled, a self-written stand-in text takes a document's place), and, when a fetched mirror of LaRA is
present, from its full query files and documents (skipped with the reason when it is absent); the same questions
answered with BM25 chunks and with the whole document through the real openai and anthropic SDKs on the loopback fake
server (active backend); a model whose context window is too small for the whole document gets a 'skipped' state, not
a wrong answer; gold, wrong and always-refuse calibration; the winner per generator and task with the cost of each."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlmodel import Session, select
from typer.testing import CliRunner

from core.cli import app
from core.config import REPO_ROOT
from core.protocols import decision_metrics
from core.protocols.long_context import ACCURACY, WHOLE
from core.protocols.long_context.builder import TOP_K, build, query_rows
from core.store.db import make_engine
from core.store.models import Model
from core.testing.fake_server import ScriptRule
from tests.factories import scripted_models
from tests.protocol_steps import assert_page_renders, run_docs_commands

# One xdist worker runs this module: each of its module-scoped worlds is built once, not once per worker
pytestmark = pytest.mark.xdist_group("long_context")

LARA_MIRROR = Path("/work/.mirror/Alibaba-NLP+LaRA/repo")
LARA_COMMIT = "c17155376f4e708bce3c1659facd19886d75a5eb"
LARA_CUT = Path(REPO_ROOT, "data", "suites", "lara")
CUT_SHA256 = {  # query file -> sha256 of its first line as committed (data/suites/lara/README.md)
    "32k_book_comp.jsonl": "eb77db158eb71c427e3e7734bb8a0ea6f809ac9e08ae6c46855e080223b717e6",
    "32k_book_hallu.jsonl": "0512cc75c7833ee7c9c792de8f55edb5ca5c79b5bb14c5d3f1495d78400e45b9",
    "32k_book_reasoning.jsonl": "6315f1241d8d03cb71fdf95453af7c6b9acf240d7ca1bdd6b3f2042041f09ae2",
    "32k_financial_comp.jsonl": "49add80709991f016f9e664dd007b203d3b321b8aa645ce34fbc99c76ff3d6e2",
    "32k_financial_hallu.jsonl": "a5c941a2f9793216e5594a09604e64a4f14e086c015cfe18608e7b96b6d469a9",
    "32k_financial_location.jsonl": "bcfd8db734eeb77bb3a18f5d64cc817827193c33c129a554427344e9c0ed8aea",
    "32k_financial_reasoning.jsonl": "80f85e6550efc81e294858d108deae2cab5b20df15dbaedca2f4c7094f4a0f73",
    "32k_paper_comp.jsonl": "bd8b6609853d21170ed3b60cba54a74fb9999cbacdccafbe5eed5d5b584d876c",
    "32k_paper_hallu.jsonl": "d7980be8e254d8db79f4cb3486c5a19bd3e0f3850dfc7b6c7f3553b3b499334d",
    "32k_paper_location.jsonl": "ca23a52223f4c4d643b255f5483a52ba36f8dcd4885d6e630c61f7511dfa8095",
    "32k_paper_reasoning.jsonl": "33ba1bdb584000a6dcd58f295221d64b8b76f1c3d78603e87b23c90cb94dfe3f",
}
DOCUMENTS = {"book": "A Christmas Carol.txt", "financial": "2024-Blue Star Foods Corp.-j.txt", "paper": "32k_paper_0.md"}


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def git_show(path: str) -> bytes:
    return subprocess.run(["git", "--git-dir", str(LARA_MIRROR), "show", f"{LARA_COMMIT}:{path}"],
                          capture_output=True, check=True).stdout


def test_the_lara_cut_is_the_stated_one() -> None:
    """data/suites/lara holds what its README says: LaRA's MIT licence and the first line of 11 of its 12 32k query
    files, unchanged; no document text."""
    query = LARA_CUT / "datasets" / "query"
    assert sorted(p.name for p in query.iterdir()) == sorted(CUT_SHA256)
    for name, digest in CUT_SHA256.items():
        assert hashlib.sha256((query / name).read_bytes()).hexdigest() == digest, name
    assert (LARA_CUT / "LICENSE").read_text().startswith("MIT License")
    assert sorted(p.name for p in (LARA_CUT / "datasets").iterdir()) == ["query"]  # the long texts are never here


def test_the_lara_cut_is_the_first_line_of_laras_files_at_the_commit() -> None:
    if not LARA_MIRROR.exists():
        pytest.skip(f"no fetched copy of Alibaba-NLP/LaRA at {LARA_MIRROR} (fetch github:Alibaba-NLP/LaRA)")
    for name in CUT_SHA256:
        published = git_show(f"datasets/query/{name}")
        assert (LARA_CUT / "datasets" / "query" / name).read_bytes() == published.splitlines(keepends=True)[0], name
    assert (LARA_CUT / "LICENSE").read_bytes() == git_show("LICENSE")


def cut_rows() -> list[dict]:
    """The committed cut's rows as published, in the builder's order (files sorted, one row each)."""
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted((LARA_CUT / "datasets" / "query").iterdir())]


def test_imports_every_published_row_with_its_fields() -> None:
    rows = query_rows(LARA_CUT, "32k")
    assert len(rows) == len(CUT_SHA256) == 11
    for row, published, name in zip(rows, cut_rows(), sorted(CUT_SHA256), strict=True):
        _, kind, level = Path(name).stem.split("_")
        assert row == {**published, "type": kind, "level": level, "source_type": published["type"]}, name
        assert row["file"] == DOCUMENTS[kind] and row["question"] and row["answer"]
    assert {r["source_type"] for r in rows} == {"novelette", "book", "novelette_fake", "financial", "paper"}


def test_without_laras_texts_every_published_question_is_skipped_with_why(tmp_path) -> None:
    result = build(LARA_CUT, tmp_path)
    assert result.instances == 0 and read_jsonl(result.out) == []
    assert result.skipped == [f"question {n}: {LARA_CUT / 'datasets' / '32k' / row['type'] / row['file']} is not in "
                              f"your copy of LaRA" for n, row in enumerate(query_rows(LARA_CUT, "32k"), start=1)]


def stand_in_text(words: int) -> str:
    """A self-written text of about `words` words standing where a LaRA document would be (its own is never bundled)."""
    sentence = "In quarter {n} the cannery shipped {m} crates of crab meat and paid {k} thousand dollars in freight. "
    return "".join(sentence.format(n=n, m=n * 7, k=n + 11) for n in range(1, words // 16 + 1))


STAND_INS = [  # the document type whose text is stood in for -> how many of the cut's questions ask about it
    pytest.param("book", 3, id="book-novelette-rows-too"),
    pytest.param("financial", 4, id="financial"),
    pytest.param("paper", 4, id="paper"),
]


@pytest.mark.parametrize(("kind", "asked"), STAND_INS)
def test_builds_the_published_questions_on_a_stand_in_text(tmp_path, kind: str, asked: int) -> None:
    copy = tmp_path / "lara"
    shutil.copytree(LARA_CUT, copy)
    text = stand_in_text(4000)
    (copy / "datasets" / "32k" / kind).mkdir(parents=True)
    (copy / "datasets" / "32k" / kind / DOCUMENTS[kind]).write_text(text, encoding="utf-8")
    result = build(copy, tmp_path / "out")
    records = read_jsonl(result.out)
    rows = [r for r in query_rows(copy, "32k") if r["type"] == kind]
    assert result.instances == len(records) == len(rows) == asked and len(result.skipped) == 11 - asked
    assert all("is not in your copy of LaRA" in s and f"/{kind}/" not in s for s in result.skipped)
    for record, row in zip(records, rows, strict=True):
        assert record["query"] == row["question"] and record["domain"] == f"LaRA {kind}"
        assert record["attributes"]["question_type"] == row["level"]
        whole = [d for d in record["documents"] if d["variant"]["setting"] == "whole"]
        chunks = [d for d in record["documents"] if d["variant"]["setting"] == "chunk"]
        assert len(whole) == 1 and whole[0]["text"] == text and whole[0]["variant"]["words"] == len(text.split())
        assert [c["variant"]["rank"] for c in chunks] == list(range(1, TOP_K + 1))
        assert all(c["text"] in text for c in chunks)
        expected = ({"answer_type": "unanswerable", "reasoning": row["answer"]} if row["level"] == "hallu" else
                    {"answer_type": "long", "answers": [{"text": row["answer"]}]})
        assert record["reference"] == expected


def test_builds_from_laras_published_questions_and_documents(tmp_path) -> None:
    if not LARA_MIRROR.exists():
        pytest.skip(f"no fetched copy of Alibaba-NLP/LaRA at {LARA_MIRROR} (fetch github:Alibaba-NLP/LaRA)")
    listing = subprocess.run(["git", "--git-dir", str(LARA_MIRROR), "ls-tree", "-r", "--name-only", LARA_COMMIT,
                              "datasets/query/"], capture_output=True, check=True, text=True).stdout.split()
    for name in [n for n in listing if Path(n).name.startswith("32k_")]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(git_show(name))
    rows = query_rows(tmp_path, "32k")[:12]  # one question of each of the 12 query files
    for row in rows:  # the user's copy holds the documents these questions need
        doc = tmp_path / "datasets" / "32k" / row["type"] / row["file"]
        doc.parent.mkdir(parents=True, exist_ok=True)
        doc.write_bytes(git_show(f"datasets/32k/{row['type']}/{row['file']}"))
    result = build(tmp_path, tmp_path / "out", fmt="32k", limit=12)
    records = read_jsonl(result.out)
    assert result.instances == 12 and result.skipped == []
    assert {r["attributes"]["question_type"] for r in records} == {"location", "reasoning", "comp", "hallu"}
    for record, row in zip(records, rows, strict=True):
        whole = [d for d in record["documents"] if d["variant"]["setting"] == "whole"]
        chunks = [d for d in record["documents"] if d["variant"]["setting"] == "chunk"]
        text = (tmp_path / "datasets" / "32k" / row["type"] / row["file"]).read_text(encoding="utf-8")
        assert len(whole) == 1 and whole[0]["text"] == text and len(chunks) == TOP_K
        assert record["reference"]["answer_type"] == ("unanswerable" if row["level"] == "hallu" else "long")


def test_a_missing_document_is_skipped_with_why(tmp_path) -> None:
    query = tmp_path / "datasets" / "query" / "32k_book_location.jsonl"
    query.parent.mkdir(parents=True)
    query.write_text(json.dumps({"type": "book", "level": "location", "file": "Gone.txt", "question": "Q?",
                                 "answer": "A."}) + "\n")
    result = build(tmp_path, tmp_path / "out")
    assert result.instances == 0 and "Gone.txt is not in your copy of LaRA" in result.skipped[0]


# ----------------------------------------------------------------------------------- scripted runs, both SDKs

ROOMS = 200
QUESTIONS = {  # level -> (question, answer)
    "location": ("Which code opens room 17?", "The code of room 17 is K17Z."),
    "reasoning": ("Which code opens room 42?", "The code of room 42 is K42Z."),
    "hallu": ("Which code opens the roof hatch?", "The text does not say which code opens the roof hatch."),
}


def lara_copy(folder: Path) -> Path:
    """A LaRA-layout folder with one invented document (about 4,400 words) and three questions about it."""
    text = " ".join(f"The code of room {n} is K{n}Z. Room {n} faces the {('north', 'south')[n % 2]} yard and holds "
                    f"{n + 3} chairs and a lamp." for n in range(1, ROOMS + 1))
    (folder / "datasets" / "32k" / "book").mkdir(parents=True)
    (folder / "datasets" / "32k" / "book" / "Rooms.txt").write_text(text)
    (folder / "datasets" / "query").mkdir(parents=True)
    for level, (question, answer) in QUESTIONS.items():
        row = {"type": "book", "level": level, "length": "32k", "file": "Rooms.txt", "question": question,
               "answer": answer}
        (folder / "datasets" / "query" / f"32k_book_{level}.jsonl").write_text(json.dumps(row) + "\n")
    return folder


def scripts() -> dict[str, list[ScriptRule]]:
    gold = [ScriptRule(match=re.escape(q) + r"\s*$", reply=a) for q, a in QUESTIONS.values()]
    return {"lc-gold": gold, "lc-small": gold, "lc-wrong": [ScriptRule(match="", reply="The code is Z99Q.")],
            "lc-refuse": [ScriptRule(match="", reply="I don't know: the documents do not say.")]}


JUDGE = [ScriptRule(match=r"task: long_context_answer\][\s\S]*Reference answer: ([^\n]+)\nPrediction: \1",
                    reply='{"correct": true, "reason": "same facts"}'),
         ScriptRule(match=r"task: long_context_answer", reply='{"correct": false, "reason": "different"}')]
SMALL_WINDOW = 4000  # tokens: the chunks fit, the whole document does not


@dataclass(frozen=True)
class World:
    url: str
    run_id: int


@pytest.fixture(scope="module", params=["openai_compatible", "anthropic"])
def world(request, session_url_factory, tmp_path_factory) -> World:
    from core.generation import runner, runs
    from core.generation.ratelimit import ManualClock
    from core.ingest.io import import_file
    from core.pipeline import score_and_summarise

    tmp = tmp_path_factory.mktemp("lc")
    built = build(lara_copy(tmp / "lara"), tmp / "out").out
    url = session_url_factory()
    engine = make_engine(url)
    assert len(import_file(engine, built).created) == 3
    with scripted_models(engine, {**scripts(), "judge-lc": JUDGE}, 128, request.param):
        with Session(engine) as session:
            small = session.exec(select(Model).where(Model.name == "lc-small")).one()
            small.context_window = SMALL_WINDOW
            session.add(small)
            session.commit()
        run_id = runs.create_run(engine, runs.RunOptions(models=list(scripts()), domains=["LaRA book"],
                                                         conditions=["", WHOLE]))
        result = asyncio.run(runner.execute_run(engine, run_id, clock=ManualClock()))
        assert result.failed == 3  # lc-small: the whole document over its window, never sent
        asyncio.run(score_and_summarise(engine, run_id, ["heuristic", "llm:judge-lc"]))
    engine.dispose()
    return World(url, run_id)


CALIBRATION = [  # model -> accuracy with chunks, with the whole document (None: all skipped), whole skipped
    pytest.param("lc-gold", 1.0, 1.0, 0, id="gold"),
    pytest.param("lc-wrong", 0.0, 0.0, 0, id="wrong"),
    pytest.param("lc-refuse", 1 / 3, 1 / 3, 0, id="always-refuse-right-only-on-the-unanswerable"),
    pytest.param("lc-small", 1.0, None, 3, id="whole-document-too-long-is-skipped"),
]


@pytest.mark.parametrize(("model", "chunks", "whole", "too_long"), CALIBRATION)
def test_calibration_and_the_window_state(world, model, chunks, whole, too_long) -> None:
    from core.protocols.long_context.analysis import setting_scores

    scores = setting_scores(make_engine(world.url), [world.run_id], "llm:judge-lc")
    mine = scores[scores["model"] == model]
    by = {s: part for s, part in mine.groupby("setting")}
    assert by["chunks"][ACCURACY].mean() == pytest.approx(chunks) and len(by["chunks"]) == 3
    assert (by["whole document"][f"{ACCURACY}_state"] == "skipped").sum() == too_long
    if whole is None:
        assert by["whole document"][ACCURACY].isna().all()
    else:
        assert by["whole document"][ACCURACY].mean() == pytest.approx(whole)


def test_winners_name_the_setting_and_the_cost(world) -> None:
    from core.protocols.long_context.analysis import setting_winners

    table = setting_winners(make_engine(world.url), [world.run_id], "llm:judge-lc").set_index(["model", "task"])
    small = table.loc[("lc-small", "location")]
    assert small["winner"].startswith("not comparable") and small["whole document_too_long"] == 1
    gold = table.loc[("lc-gold", "location")]
    assert gold["winner"] == "no clear winner" and gold["chunks_n"] == gold["whole document_n"] == 1
    assert gold["whole document_cost_usd"] > gold["chunks_cost_usd"] > 0  # the whole document costs more to send


def test_offline_judge_decides_only_what_it_can(world) -> None:
    from core.protocols.long_context.analysis import setting_table

    table = setting_table(make_engine(world.url), [world.run_id], "heuristic")
    wrong = table[(table["model"] == "lc-wrong") & (table["setting"] == "chunks")].set_index("task")
    assert wrong.loc["hallu", "n_scored"] == 1 and wrong.loc["location", "n_not_applicable"] == 1
    gold = table[(table["model"] == "lc-gold") & (table["setting"] == "chunks")].set_index("task")
    assert gold.loc["location", "value"] == 1.0  # the answer contains the reference: decided offline


def test_report_command_and_view(world, monkeypatch) -> None:
    from core.protocols.long_context.views import setting_view

    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    result = CliRunner().invoke(app, ["report", str(world.run_id), "--format", "json", "--judge", "llm:judge-lc"])
    assert result.exit_code == 0, result.output
    own = CliRunner().invoke(app, ["long-context", "report", str(world.run_id), "--judge", "llm:judge-lc"])
    assert own.exit_code == 0 and "lc-small" in own.stdout and "winner" in own.stdout
    view = setting_view(make_engine(world.url), [world.run_id], "llm:judge-lc")
    assert "winner" in view.table.columns and "judge: llm:judge-lc" in view.figure.layout.title.text


def test_declares_its_decision_metric() -> None:
    rows = {r.id: r for r in decision_metrics("long_context")}
    assert rows[ACCURACY].role == "headline" and "skipped" in rows[ACCURACY].meaning


def test_the_docs_build_and_import_run_as_written(tmp_path, monkeypatch, db_url) -> None:
    lara_copy(tmp_path / "PATH" / "TO" / "LaRA")
    commands = run_docs_commands("long_context.md", {}, tmp_path, monkeypatch, first=2)  # run, score need models
    assert len(read_jsonl(tmp_path / "var" / "built" / "long_context" / "instances.jsonl")) == 3
    assert commands[2] == "gauntlet run --models M --conditions ,whole_document"


def test_its_page_renders_from_its_declarations(world, monkeypatch) -> None:
    assert_page_renders(world.url, monkeypatch, "long_context", "Chunks or the whole document: accuracy and cost")
