"""Languages and ids of imported records: the language a file's name says (RGB's en / zh files) before detection;
detection weighs a Latin word as one unit beside Chinese characters (Chinese questions with Latin brand names are
Chinese) and kana marks Japanese; the en and zh files' ids never collide; `--new-version` never replaces a record
whose question changed: each is listed and needs a choice (supersede or skip)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import Session, select
from typer.testing import CliRunner

from core.cli import app
from core.ingest.importers import import_source
from core.ingest.importers.rgb import file_language
from core.language import cjk_language
from core.store.models import Instance


@pytest.mark.parametrize(
    ("text", "language"),
    [  # the first five are questions of RGB's published zh files (github.com/chen700564/RGB, commit 65ec39e)
        pytest.param("Minecraft是什么类型的游戏？", "zh", id="zh-fact-17-one-brand"),
        pytest.param("索尼Playstation 4发售日期", "zh", id="zh-fact-48-brand-and-number"),
        pytest.param("ChatGPT和GPT4的发布时间", "zh", id="zh-int-70-two-brands"),
        pytest.param("iPhone SE 3的起售价是多少？", "zh", id="zh-refine-63-more-latin-letters-than-han"),
        pytest.param("EMNLP2022的举办地", "zh", id="zh-refine-93-acronym"),
        pytest.param("ソニーのPlayStation 5はいつ発売されましたか？", "ja", id="kana-with-a-brand-is-japanese"),
        pytest.param("The Vela 7 launches in Shenzhen (深圳) on 14 March.", None, id="english-with-a-chinese-name"),
        pytest.param("Who founded 阿里巴巴 and when did it list in New York?", None, id="english-question-han-company"),
    ],
)
def test_han_with_latin_is_chinese_and_kana_japanese(text: str, language: str | None) -> None:
    assert cjk_language(text) == language


@pytest.mark.parametrize(
    ("name", "language"),
    [
        pytest.param("zh.json", "zh", id="zh"),
        pytest.param("en_int.json", "en", id="en-int"),
        pytest.param("zh_refine.json", "zh", id="zh-refine"),
        pytest.param("rgb-en-fact.jsonl", "en", id="dashes"),
        pytest.param("RGB_ZH_INT.JSON", "zh", id="upper-case"),
        pytest.param("rgb.json", None, id="says-none"),
        pytest.param("zh_en_mixed.json", None, id="says-both"),
        pytest.param("zhongwen.json", None, id="not-a-whole-part"),
    ],
)
def test_the_language_an_rgb_file_name_says(name: str, language: str | None) -> None:
    assert file_language(Path(name)) == language


def _rgb(rid: int, query: str, answer: str) -> dict:
    return {"id": rid, "query": query, "answer": answer, "positive": [f"{query} {answer}."], "negative": ["Noise."]}


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def _languages(engine) -> dict[str, str]:
    with Session(engine) as session:
        return dict(session.exec(select(Instance.uid, Instance.language).where(Instance.is_latest == True)).all())  # noqa: E712


@pytest.mark.parametrize(
    ("zh_name", "zh_query"),
    [
        pytest.param("zh.json", "Which year was it founded?", id="file-says-zh-whatever-the-question"),
        pytest.param("rgb.json", "iPhone SE 3的起售价是多少？", id="detected-chinese-with-a-brand"),
    ],
)
def test_the_en_and_zh_files_ids_never_collide(engine, tmp_path, zh_name: str, zh_query: str) -> None:
    english = _write(tmp_path / "en.json", [_rgb(0, "What does the iPhone SE 3 cost?", "$429")])
    (tmp_path / "zh").mkdir()
    chinese = _write(tmp_path / "zh" / zh_name, [_rgb(0, zh_query, "3499元")])
    for path in (english, chinese):
        report = import_source(engine, path, fmt="rgb")
        assert report.ok and len(report.created) == 1, report.errors
    assert _languages(engine) == {"rgb/en/0": "en", "rgb/zh/0": "zh"}


CHANGED = [_rgb(0, "Who wrote Dune?", "Frank Herbert"), _rgb(1, "When was Dune published?", "1965")]


@pytest.mark.parametrize(
    ("choice", "new_versions", "skipped", "error"),
    [
        pytest.param(None, 0, 0, "instance 'rgb/en/1' (version 1) has another question: 'When was Dune published?' "
                                 "→ 'Who published Dune?'; choose --changed-questions supersede or skip",
                     id="no-choice-lists-it-and-imports-nothing"),
        pytest.param("skip", 1, 1, None, id="skip-leaves-it-out"),
        pytest.param("supersede", 2, 0, None, id="supersede-stores-a-new-version"),
    ],
)
def test_new_version_never_replaces_a_changed_question_without_a_choice(
        engine, tmp_path, choice: str | None, new_versions: int, skipped: int, error: str | None) -> None:
    first = _write(tmp_path / "en.json", CHANGED)
    assert import_source(engine, first, fmt="rgb").ok
    second = [dict(CHANGED[0], negative=["Other noise."]), dict(CHANGED[1], query="Who published Dune?")]
    report = import_source(engine, _write(tmp_path / "en_v2.json", second), fmt="rgb", on_existing="new_version",
                           on_changed_question=choice)
    assert [e.message for e in report.errors] == ([error] if error else [])
    assert (len(report.new_versions), len(report.skipped)) == (new_versions, skipped)
    with Session(engine) as session:
        queries = sorted(session.exec(select(Instance.query).where(Instance.is_latest == True)).all())  # noqa: E712
    published = "Who published Dune?" if choice == "supersede" else "When was Dune published?"
    assert queries == sorted(["Who wrote Dune?", published])


def test_the_cli_lists_changed_questions_and_takes_the_choice(engine, db_url, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", db_url)
    runner = CliRunner()
    assert runner.invoke(app, ["import", str(_write(tmp_path / "en.json", CHANGED)), "--format", "rgb"]).exit_code == 0
    changed = _write(tmp_path / "en_v2.json", [CHANGED[0], dict(CHANGED[1], query="Who published Dune?")])
    refused = runner.invoke(app, ["import", str(changed), "--format", "rgb", "--new-version"])
    assert refused.exit_code == 1 and "has another question" in refused.output and "nothing imported" in refused.output
    skipped = runner.invoke(app, ["import", str(changed), "--format", "rgb", "--new-version",
                                  "--changed-questions", "skip"])
    assert skipped.exit_code == 0, skipped.output
    assert "1 unchanged, 1 with another question left out: rgb/en/1" in skipped.stdout
