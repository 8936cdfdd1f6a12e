"""LIT-RAGBench's paper mode sends byte for byte what the authors' run.py builds (Koki-Itai/LIT-RAGBench, src/run.py
at commit 5c3f30d924bc1615c08eb85f560f3aceb2fac7d4, the copy in ../shared/datasets/lit-ragbench/code/ read in place,
never copied here).

Their run.py is imported as a module (its `dotenv` import stubbed when python-dotenv is absent; nothing else of it is
changed), its PROJECT_ROOT pointed at a folder laid out as their repository (datasets/ and prompts/ linked to the shared
copy), and their own `load_tasks_from_local` builds the tasks; `random.seed(42)` is re-run first, as importing it does,
so their generator messages are those of a fresh run over the file in order. Ours: both files imported into the
database (both backends), every instance's prompt built by the run path (`instance_prompt`, condition paper_prompts)
and its judge messages by the paper judge (`judge_messages`) on the stored documents, for all 228 released items."""

from __future__ import annotations

import importlib.util
import random
import sys
import types
from pathlib import Path

import pytest
from sqlmodel import Session, select

from core.generation.run_prompts import instance_prompt
from core.protocols.lit_ragbench.authors import AUTHORS_JUDGE_MODEL, RUN_ENV, load_run, runner_path
from core.protocols.lit_ragbench.command import import_lit
from core.protocols.lit_ragbench.released import PAPER_CONDITION, PROMPTS_ENV, judge_messages
from core.scoring.judges.base import DocumentView, JudgeInput
from core.store.db import make_engine
from core.store.models import Document, Instance
from core.store.schema import ReferenceSpec
from tests.lit_ragbench.conftest import DATA, lit_file

RUN_PY = DATA / "code" / "run.py"
LANGUAGES = ("en", "ja")


def their_run(root: Path) -> types.ModuleType:
    """The authors' run.py imported from ../shared as it is, PROJECT_ROOT pointed at `root`."""
    if not RUN_PY.is_file():
        pytest.fail(f"the authors' run.py not found at {RUN_PY} (the tests read ../shared/datasets)")
    if importlib.util.find_spec("dotenv") is None:  # python-dotenv is not a dependency: load_dotenv does nothing here
        sys.modules.setdefault("dotenv", types.SimpleNamespace(load_dotenv=lambda *a, **k: None))  # type: ignore[arg-type]
    spec = importlib.util.spec_from_file_location("lit_ragbench_authors_run", RUN_PY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.PROJECT_ROOT = root
    return module


@pytest.fixture(scope="module")
def theirs(tmp_path_factory) -> dict[str, list[tuple[list[dict], list[dict], str]]]:
    """Per language, per row in file order: their generator messages, their judge messages and the answer judged."""
    root = tmp_path_factory.mktemp("lit_ragbench_repo")
    (root / "datasets").mkdir()
    for language in LANGUAGES:
        (root / "datasets" / f"{language}.jsonl").symlink_to(lit_file(f"{language}.jsonl"))
    (root / "prompts").symlink_to(DATA / "prompts")
    run = their_run(root)
    out = {}
    for language in LANGUAGES:
        run.random.seed(42)  # what importing run.py does: a fresh run over this language's file
        built = []
        for n, task in enumerate(run.load_tasks_from_local(language=language)):
            generate = task.create_generate_messages()
            task.generated_answer = f"Answer {n}: 回答 {n}"
            built.append((generate, task.create_evaluate_messages(), task.generated_answer))
        out[language] = built
    return out


def _row(uid: str) -> tuple[str, int]:
    _, language, row = uid.split("/")
    return language, int(row)


def test_paper_mode_messages_are_byte_identical_to_the_authors_run(theirs, backend_url_factory, monkeypatch) -> None:
    monkeypatch.setenv(PROMPTS_ENV, str(DATA / "prompts"))
    monkeypatch.delenv(RUN_ENV, raising=False)
    engine = make_engine(backend_url_factory())
    report = import_lit(engine, [lit_file("en.jsonl"), lit_file("ja.jsonl")])
    assert report.ok, report.errors[:3]
    compared = {"generate": 0, "judge": 0}
    with Session(engine) as session:
        instances = session.exec(select(Instance).order_by(Instance.id)).all()
        for instance in instances:
            language, row = _row(instance.uid)
            their_generate, their_judge, answer = theirs[language][row]
            messages, meta = instance_prompt(session, instance.id, "stored", 0, PAPER_CONDITION)
            assert [m.model_dump(include={"role", "content"}) for m in messages] == their_generate, instance.uid
            compared["generate"] += 1
            documents = [DocumentView(position=d.position, doc_uid=d.doc_uid, title=d.title, text=d.text, role=d.role)
                         for d in session.exec(select(Document).where(Document.instance_id == instance.id))]
            item = JudgeInput(query=instance.query, mode="", documents=documents, response=answer,
                              reference=ReferenceSpec.model_validate(instance.reference), language=language,
                              prompt_meta=meta)
            assert [m.model_dump(include={"role", "content"}) for m in judge_messages(item)] == their_judge
            compared["judge"] += 1
            assert meta["authors_judge_model"] == AUTHORS_JUDGE_MODEL
    engine.dispose()
    assert compared == {"generate": 228, "judge": 228}


def test_the_named_judge_model_is_the_one_their_run_py_uses() -> None:
    run = load_run(RUN_PY)
    assert (run.judge_model, run.generate_model, run.seed) == (AUTHORS_JUDGE_MODEL, "gpt-4.1-2025-04-14", 42)
    assert runner_path(DATA / "prompts") == RUN_PY.resolve()


def test_their_methods_run_alone(tmp_path) -> None:
    """Only the two message-building methods of run.py are compiled: a module-level statement never runs."""
    source = RUN_PY.read_text(encoding="utf-8") + "\nraise SystemExit('module code ran')\n"
    planted = tmp_path / "run.py"
    planted.write_text(source, encoding="utf-8")
    run = load_run(planted)
    assert run.seed == 42 and {n for n in run.code.co_names} >= {"create_generate_messages"}


@pytest.mark.parametrize(("edit", "message"), [
    pytest.param(lambda s: s.replace("def create_evaluate_messages", "def other"), "create_evaluate_messages",
                 id="method-missing"),
    pytest.param(lambda s: s.replace("random.seed(42)", ""), "random.seed", id="seed-missing"),
    pytest.param(lambda s: s.replace('JUDGE_MODEL = "', 'JUDGE = "'), "JUDGE_MODEL", id="judge-model-missing"),
])
def test_a_changed_run_py_is_refused_by_name(tmp_path, edit, message) -> None:
    planted = tmp_path / "run.py"
    planted.write_text(edit(RUN_PY.read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_run(planted)


def test_replayed_order_is_their_generators_sequence() -> None:
    """Row n's order is the n-th shuffle of one Random(42) over the file's rows (their global generator)."""
    from core.protocols.lit_ragbench.authors import authors_order

    rng = random.Random(42)
    path = lit_file("en.jsonl")
    import json

    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for n, row in enumerate(rows[:20]):
        order = list(range(len(row["positive_chunk_list"]) + len(row["negative_chunk_list"])))
        rng.shuffle(order)
        assert authors_order(path, 42, n) == tuple(order)
