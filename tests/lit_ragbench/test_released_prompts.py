"""The paper prompt setting: the released generator and judge prompts read at run time from the dataset's prompts/
folder (never from the repository), the judge given the positive context, the setting recorded in prompt_meta, and
no line of a released prompt in any tracked file of the repository."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli import app
from core.generation.baselines import always_refuse, split_prompt
from core.protocols import get_protocol
from core.protocols.lit_ragbench.command import spread_sample
from core.protocols.lit_ragbench.released import (
    PAPER_CONDITION,
    PROMPTS_ENV,
    judge_messages,
    prompts_dir,
    released_prompt,
)
from core.protocols.prompting import DocumentView as PromptDocument
from core.protocols.prompting import InstanceView
from core.scoring.judges.base import DocumentView, JudgeInput
from core.scoring.judges.heuristic import HeuristicJudge
from core.scoring.judges.llm_judge import LLMJudge
from core.scoring.judges.registry import REFERENCE_JUDGE_METRICS
from core.store.schema import ReferenceSpec
from tests.judges.conftest import ScriptedClient
from tests.lit_ragbench.conftest import REPO, lit_file

PROMPTS = lit_file("en.jsonl").parent / "prompts"
FILES = [f"{kind}_{language}.txt" for kind in ("generate", "judge") for language in ("en", "ja")]
POSITIVE = DocumentView(position=1, doc_uid="lit-ragbench/en/0#positive_chunk_list[0]", title="Rates",
                        text="Room A costs 3,000 yen per hour.", role="supporting")
NEGATIVE = DocumentView(position=2, doc_uid="lit-ragbench/en/0#negative_chunk_list[0]", title="Menu",
                        text="The cafeteria opens at noon.", role="noise")
REFERENCE = ReferenceSpec(answer_type="short", answers=[{"text": "3,000 yen"}], reasoning="Room A's rate is listed.")


def distinctive_lines(text: str) -> list[str]:
    """The lines of a released prompt long enough to be its own (not a bare tag like '<RULES>')."""
    return [line.strip() for line in text.splitlines() if len(line.strip()) >= 40]


def tracked_copies(repo: Path, lines: list[str]) -> list[str]:
    """'path: line' for every tracked file of the git repository `repo` holding one of `lines`."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=repo, capture_output=True, check=True).stdout.split(b"\0")
    found = []
    for name in filter(None, files):
        path = repo / name.decode()
        text = path.read_text(encoding="utf-8", errors="ignore") if path.is_file() else ""
        found += [f"{name.decode()}: {line[:40]}" for line in lines if line in text]
    return found


@pytest.mark.parametrize("name", [*FILES, "../../code/run.py"])
def test_no_tracked_file_of_the_repository_holds_a_released_prompt(name) -> None:
    lines = distinctive_lines((PROMPTS / "evaluation" / name).read_text(encoding="utf-8"))
    assert lines, f"{name}: no distinctive line to look for"
    assert tracked_copies(REPO, lines) == []


@pytest.mark.parametrize(("planted", "found"), [pytest.param(True, 1, id="copied-line-found"),
                                                 pytest.param(False, 0, id="clean-repo")])
def test_the_copy_check_finds_a_planted_copy(tmp_path, planted, found) -> None:
    line = distinctive_lines((PROMPTS / "evaluation" / "judge_en.txt").read_text(encoding="utf-8"))[0]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "prompt.py").write_text(f'TEXT = """{line if planted else "our own words"}"""\n', encoding="utf-8")
    subprocess.run(["git", "add", "prompt.py"], cwd=tmp_path, check=True)
    assert len(tracked_copies(tmp_path, [line])) == found


@pytest.mark.parametrize(("given", "env", "expected"), [
    pytest.param("PROMPTS", None, "PROMPTS", id="option"),
    pytest.param(None, "PROMPTS", "PROMPTS", id="environment"),
    pytest.param(None, None, None, id="neither-refuses"),
])
def test_prompts_dir_comes_from_the_option_or_the_environment(monkeypatch, given, env, expected) -> None:
    paths = {"PROMPTS": str(PROMPTS)}
    monkeypatch.delenv(PROMPTS_ENV, raising=False)
    if env:
        monkeypatch.setenv(PROMPTS_ENV, paths[env])
    if expected is None:
        with pytest.raises(ValueError, match="--prompts-dir"):
            prompts_dir(paths.get(given or ""))
        return
    assert prompts_dir(paths.get(given or "")) == PROMPTS.resolve()


def row_documents(language: str, row: int) -> list[PromptDocument]:
    """Row `row` of the shared file's chunks as the importer names them (positives, then negatives)."""
    import json

    lines = [line for line in lit_file(f"{language}.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    record = json.loads(lines[row])
    docs = []
    for kind, role in (("positive", "supporting"), ("negative", "noise")):
        for i, chunk in enumerate(record[f"{kind}_chunk_list"]):
            text = chunk if isinstance(chunk, str) else chunk["content"]
            docs.append(PromptDocument(doc_uid=f"lit-ragbench/{language}/{row}#{kind}_chunk_list[{i}]",
                                       position=len(docs), title="", text=text, role=role))
    return docs


@pytest.mark.parametrize("language", ["en", "ja"])
def test_paper_condition_sends_the_released_generator_prompt(monkeypatch, language) -> None:
    monkeypatch.setenv(PROMPTS_ENV, str(PROMPTS))
    instance = InstanceView(query="How much is Room A?", protocol="lit_ragbench", language=language)
    documents = row_documents(language, 0)
    messages, meta = get_protocol("lit_ragbench").prompt(instance, documents, PAPER_CONDITION)
    released = released_prompt(PROMPTS, "generate", language)
    assert messages[0].content == released.text
    assert messages[1].content.startswith("<DOCUMENTS>[cite:1]") and messages[1].content.endswith(
        "<QUESTION>:\nHow much is Room A?\n</QUESTION>")
    assert (meta["prompt_setting"], meta["generator_prompt"], meta["generator_prompt_sha256"]) == (
        "paper", f"generate_{language}.txt", released.sha256)
    assert sorted(meta["doc_order"]) == sorted(d.doc_uid for d in documents) and meta["order"] == "authors_run"
    _, product = get_protocol("lit_ragbench").prompt(instance, documents, "")
    assert product["prompt_setting"] == "product" and "judge_prompt" not in product


def item(language: str, prompts: Path | str = PROMPTS) -> JudgeInput:
    meta = {"prompt_setting": "paper", "prompts_dir": str(prompts), "prompt_language": language,
            "judge_prompt": "lit_ragbench:paper"}
    return JudgeInput(query="How much is Room A?", mode="", documents=[NEGATIVE, POSITIVE], response="3,000 yen.",
                      reference=REFERENCE, language=language, prompt_meta=meta)


@pytest.mark.parametrize("language", ["en", "ja"])
def test_paper_judge_gets_the_released_prompt_and_the_positive_context_only(language) -> None:
    system, user = judge_messages(item(language))
    assert system.content.startswith(released_prompt(PROMPTS, "judge", language).text)
    assert '"evaluation_reason"' in system.content and "<OUTPUT_FORMAT>" in system.content
    assert POSITIVE.text in user.content and NEGATIVE.text not in user.content
    for tag in ("QUESTION", "REFERENCE_REASONING_CONTENT", "REFERENCE_ANSWER", "POSITIVE_CONTEXT", "GENERATED_ANSWER"):
        assert f"<{tag}>\n" in user.content
    assert "<REFERENCE_ANSWER>\n3,000 yen\n\n" in user.content


@pytest.mark.parametrize(("reply", "prompts", "status", "value"), [
    pytest.param('{"score": 1, "reason": "same"}', PROMPTS, "ok", 1.0, id="released-judge-says-1"),
    pytest.param('{"score": 0, "reason": "differs"}', PROMPTS, "ok", 0.0, id="released-judge-says-0"),
    pytest.param('{"score": 1}', "/nonexistent/prompts", "error", None, id="folder-gone-is-a-judge-error"),
])
def test_judged_accuracy_under_the_paper_setting_asks_the_released_judge(reply, prompts, status, value) -> None:
    client = ScriptedClient([("<POSITIVE_CONTEXT>", reply)])
    metric = REFERENCE_JUDGE_METRICS.get("judged_accuracy")
    out = asyncio.run(metric.compute(LLMJudge(client, "llm:j"), item("en", prompts)))
    assert (out.status, out.value) == (status, value)
    assert client.calls == (["judge:lit_ragbench_paper"] if status == "ok" else [])


def test_heuristic_judge_decides_the_paper_setting_as_the_product_one() -> None:
    metric = REFERENCE_JUDGE_METRICS.get("judged_accuracy")
    paper = asyncio.run(metric.compute(HeuristicJudge(), item("en")))
    product = asyncio.run(metric.compute(HeuristicJudge(), item("en").model_copy(update={"prompt_meta": {}})))
    assert (paper.value, paper.reason) == (product.value, product.reason) == (1.0, product.reason)


@pytest.mark.parametrize(("message", "query", "refusal_language"), [
    pytest.param("<DOCUMENTS>\n[doc 1] T\nbody\n</DOCUMENTS>\n<QUESTION>\n会議室Aの料金は？\n</QUESTION>", "会議室Aの料金は？",
                 "ja", id="tagged-japanese"),
    pytest.param("Documents:\n\n[doc 1] T\nbody\n\nQuestion: What is it?", "What is it?", "en", id="marker-english"),
])
def test_baselines_read_the_question_in_either_layout(message, query, refusal_language) -> None:
    docs, found = split_prompt(message)
    assert (docs, found) == ([(1, "body")], query)
    assert ("できません" in always_refuse(message)) == (refusal_language == "ja")


@pytest.mark.parametrize(("size", "expected"), [
    pytest.param(None, list(range(10)), id="all"),
    pytest.param(3, [0, 3, 6], id="spread"),
    pytest.param(20, list(range(10)), id="more-than-there-are"),
])
def test_spread_sample(size, expected) -> None:
    assert spread_sample(list(range(10)), size) == expected


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(["--conditions", "paper_prompts"], "pass --prompts-dir", id="paper-condition-without-folder"),
    pytest.param(["--conditions", "paper_prompts", "--prompts-dir", "/nonexistent/prompts"], "not found",
                 id="missing-folder"),
])
def test_run_refuses_the_paper_condition_without_its_folder(backend_url_factory, monkeypatch, args, message) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", backend_url_factory())
    monkeypatch.delenv(PROMPTS_ENV, raising=False)
    out = CliRunner().invoke(app, ["run", "--models", "baseline:always-refuse", *args])
    assert out.exit_code == 2 and message in " ".join(out.output.split()), out.output
    assert "created" not in out.output
