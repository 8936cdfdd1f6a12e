"""docs/lit_ragbench.md "Reproducing Table 2", run as written: its bash block on a temporary database (SQLite and
PostgreSQL) with model-a answering the gold answer, model-b a wrong one, the always-refuse baseline and a scripted
judge on the loopback fake server that grades the released judge prompt (paper setting) and ours (product setting).
Under both prompt settings the table has the paper's shape and the calibration values."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

import pytest
from sqlmodel import Session, select
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from core.cli import app
from core.config import REPO_ROOT
from core.protocols import get_protocol
from core.protocols.lit_ragbench import CATEGORIES
from core.protocols.lit_ragbench.analysis import response_detail
from core.protocols.lit_ragbench.paper import AVERAGE, LANGUAGES, OVER_ABSTENTION, table_columns
from core.protocols.lit_ragbench.released import PROMPTS_ENV, released_prompt
from core.protocols.paper import PaperTable, build_table, render, states_note
from core.review.auth import Principal, now_utc
from core.store.db import make_engine
from core.store.models import Instance, Response, Verdict
from core.testing.fake_server import ScriptRule
from tests.docs_blocks import bash_commands
from tests.factories import scripted_models
from tests.lit_ragbench.conftest import DECLINE_CUES, _gold_rows, gold_script, judge_script, lit_file
from ui.auth import SESSION_KEY

DOCS = REPO_ROOT / "docs" / "lit_ragbench.md"
PROMPTS = lit_file("en.jsonl").parent / "prompts"  # the released prompts, read where the data lies
GOLD, WRONG, REFUSE, JUDGE = "model-a", "model-b", "baseline:always-refuse", "llm:judge-model"
WRONG_ANSWER = "The figure is 42 according to the documents."
SCORE = '{{"score": {}, "reason": "scripted"}}'
MAIN = [c for c in CATEGORIES if c != "Abstention"]


def released_line(kind: str, language: str) -> str:
    """The second line of a released prompt (its instruction), read from the dataset folder now."""
    return released_prompt(PROMPTS, kind, language).text.splitlines()[1]


def abstention_references(engine) -> list[str]:
    """The reference answers of the imported Abstention questions (their references say the question cannot be
    answered)."""
    with Session(engine) as session:
        references = [i.reference for i in session.exec(select(Instance))]
    return sorted({r["answers"][0]["text"].strip() for r in references if r["answer_type"] == "unanswerable"})


def paper_judge_rules(abstentions: list[str]) -> list[ScriptRule]:
    """Rules that answer only the released judge prompt (either language): a declining answer to an Abstention
    reference and an answer equal to the reference score 1, anything else 0 (the authors' run.py lays the judge's
    inputs out as '<TAG>\\n...\\n\\n', without closing tags)."""
    released = "(?:" + "|".join(re.escape(released_line("judge", lang)) for lang in ("en", "ja")) + ")"
    abstention = "(?:" + "|".join(map(re.escape, abstentions)) + ")"
    return [
        ScriptRule(match=released + r"[\s\S]*<REFERENCE_ANSWER>\n" + abstention + r"\n\n<POSITIVE_CONTEXT>\n"
               + r"[\s\S]*<GENERATED_ANSWER>\n[^<]*" + DECLINE_CUES, reply=SCORE.format(1)),
        ScriptRule(match=released + r"[\s\S]*<REFERENCE_ANSWER>\n([\s\S]+?)\n\n<POSITIVE_CONTEXT>\n"
                         r"[\s\S]*<GENERATED_ANSWER>\n\1\n\n\Z", reply=SCORE.format(1)),
        ScriptRule(match=released, reply=SCORE.format(0)),
    ]


def run_line(line: str, url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """One docs command: `export` sets the variable (the database URL is the test's), `gauntlet ...` runs in process."""
    words = shlex.split(line)
    if words[0] == "export":
        name, _, value = words[1].partition("=")
        monkeypatch.setenv(name, url if name == "GAUNTLET_DATABASE_URL" else value)
        return ""
    assert words[0] == "gauntlet", f"unexpected command in the docs block: {line}"
    result = CliRunner().invoke(app, words[1:])
    assert result.exit_code == 0, f"{line}\n{result.output}"
    return result.output


@pytest.fixture(scope="module")
def reproduced(session_url_factory) -> Iterator[tuple[object, list[str]]]:
    """The docs block run on a fresh database: the engine and each command's output (models registered before `run`,
    as the docs ask)."""
    url = session_url_factory()
    engine = make_engine(url)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.chdir(REPO_ROOT)
        monkeypatch.delenv(PROMPTS_ENV, raising=False)  # restored afterwards (`run --prompts-dir` sets it)
        commands, outputs = bash_commands(DOCS, "Reproducing Table 2"), []
        run_at = next(i for i, line in enumerate(commands) if line.startswith("gauntlet run "))
        outputs += [run_line(line, url, monkeypatch) for line in commands[:run_at]]
        judge = paper_judge_rules(abstention_references(engine)) + judge_script()
        with scripted_models(engine, {GOLD: gold_script(_gold_rows(engine)), WRONG: [ScriptRule(reply=WRONG_ANSWER)],
                                      JUDGE.removeprefix("llm:"): judge}, max_output_tokens=256):
            outputs += [run_line(line, url, monkeypatch) for line in commands[run_at:]]
        yield engine, outputs
    engine.dispose()


def _value(table: PaperTable, row: str, column: str) -> float | None:
    cell = table.cell(row, column)
    assert not isinstance(cell, str)
    return cell.value


EXPECTED = {  # per model: (each main category, Abstention, Avg, over-abstention)
    GOLD: (1.0, 1.0, 1.0, 0.0),
    REFUSE: (0.0, 1.0, 0.2, 1.0),
    WRONG: (0.0, 0.0, 0.0, 0.0),
}


@pytest.mark.parametrize("setting", [pytest.param("paper", id="paper-prompts"), pytest.param("product", id="product")])
def test_docs_commands_reproduce_table_2_with_calibration_values(reproduced, setting) -> None:
    engine, outputs = reproduced
    spec = get_protocol("lit_ragbench").paper_tables[0]
    table = build_table(spec, engine, [1], JUDGE, {"prompts": setting})
    assert table.columns == table_columns() and len(table.columns) == 15
    assert sorted(table.row_labels()) == sorted(EXPECTED)
    for model, (main, abstention, average, over) in EXPECTED.items():
        for language, _ in LANGUAGES:
            got = [_value(table, model, f"{language} {c}") for c in (*MAIN, "Abstention", AVERAGE, OVER_ABSTENTION)]
            assert got == pytest.approx([main] * len(MAIN) + [abstention, average, over]), (model, language, got)
    printed = outputs[[i for i, line in enumerate(bash_commands(DOCS, "Reproducing Table 2")) if f"prompts={setting}" in line][0]]
    assert f"| {GOLD} | 100.0 [" in printed and "judge: llm:judge-model" in printed
    assert "\\begin{tabular}" in outputs[-1]


def test_paper_setting_is_recorded_and_the_judge_read_the_released_prompt(reproduced) -> None:
    engine, _ = reproduced
    with Session(engine) as session:
        metas = [(r.condition, r.prompt_meta) for r in session.exec(select(Response))]
    settings = {condition: {m.get("prompt_setting") for c, m in metas if c == condition} for condition, _ in metas}
    assert settings == {"": {"product"}, "paper_prompts": {"paper"}}
    paper = next(m for c, m in metas if c == "paper_prompts" and m["prompt_language"] == "ja")
    assert (paper["generator_prompt"], paper["prompts_dir"]) == ("generate_ja.txt", str(PROMPTS.resolve()))
    assert paper["generator_prompt_sha256"] == released_prompt(PROMPTS, "generate", "ja").sha256
    with Session(engine) as session:
        verdicts = session.exec(select(Response.condition, Verdict.details).join(Verdict, Verdict.response_id == Response.id)
                                .where(Verdict.metric == "judged_accuracy", Verdict.judge == JUDGE)).all()
    purposes = {condition: {(d or {}).get("purpose") for c, d in verdicts if c == condition} for condition, _ in verdicts}
    assert purposes == {"": {None}, "paper_prompts": {"judge:lit_ragbench_paper"}}


@pytest.mark.parametrize(("setting", "note"), [
    pytest.param("paper", "prompts=paper: the authors' released", id="paper-prompts"),
    pytest.param("product", "prompts=product: the product's own", id="product"),
])
def test_rag_abilities_page_shows_both_settings_and_the_paper_table(reproduced, monkeypatch, setting, note) -> None:
    engine, _ = reproduced
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", engine.url.render_as_string(hide_password=False))
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    at = AppTest.from_file(str(REPO_ROOT / "pages" / "rag_abilities.py"), default_timeout=60)
    now = now_utc()
    at.session_state[SESSION_KEY] = Principal(username="analyst-user", role="analyst", domains=(), login_at=now,
                                              last_seen=now)
    at.run()
    at.selectbox(key="lit_judge").set_value(JUDGE).run()
    at.selectbox(key="lit_paper_lit_ragbench_2_prompts").set_value(setting).run()
    assert not at.exception, at.exception
    frames = [df.value for df in at.dataframe]
    sides = next(f for f in frames if "paper prompts" in f.columns).set_index(["model", "language"])
    assert len(sides) == 6 and sides.loc[(REFUSE, "Japanese"), "paper − product"] == "+0.0%"
    assert sides.loc[(GOLD, "English"), "paper prompts"].startswith("100.0% [")
    paper = next(f for f in frames if "ja Integration" in f.columns).set_index("Model")
    assert paper.loc[GOLD, "ja Integration"].startswith("100.0 [")
    assert paper.loc[REFUSE, "en Over-abstention"].startswith("100.0 [")
    assert any("gauntlet reproduce lit_ragbench --table 2" in c.value for c in at.caption)
    assert any(c.value.startswith(note) for c in at.caption)


@pytest.mark.parametrize(("model", "language", "value"), [
    pytest.param(GOLD, "ja", "1.000", id="gold-ja"),
    pytest.param(REFUSE, "en", "0.200", id="refuse-en"),
    pytest.param(WRONG, "en", "0.000", id="wrong-en"),
])
def test_report_command_shows_the_two_settings_side_by_side(reproduced, monkeypatch, model, language, value) -> None:
    engine, _ = reproduced
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", engine.url.render_as_string(hide_password=False))
    out = CliRunner().invoke(app, ["lit-ragbench", "report", "1", "--judge", JUDGE])
    assert out.exit_code == 0, out.output
    line = next(x for x in out.output.splitlines() if x.startswith(f"  {model} · {language}: product"))
    assert line.count(f" {value} [") == 2 and line.endswith("paper - product +0.000")


@pytest.mark.parametrize(("condition", "setting"), [pytest.param("paper_prompts", "paper", id="paper-prompts"),
                                                    pytest.param("", "product", id="product")])
def test_drill_down_names_the_prompt_setting(reproduced, condition, setting) -> None:
    engine, _ = reproduced
    with Session(engine) as session:
        response_id = session.exec(select(Response.id).where(Response.condition == condition)).first()
    assert response_detail(engine, int(response_id), JUDGE)["prompt_setting"] == setting


@pytest.mark.parametrize("setting", [pytest.param("paper", id="paper-prompts"), pytest.param("product", id="product")])
def test_table_2_counts_the_states_behind_its_category_cells(reproduced, setting) -> None:
    """Every judged answer behind a category cell is scored (the scripted judge always answers): the states line sums
    the category cells' n, and says so in the printed table."""
    engine, outputs = reproduced
    table = build_table(get_protocol("lit_ragbench").paper_tables[0], engine, [1], JUDGE, {"prompts": setting})
    n = sum(table.cell(model, f"{language} {c}").n for model in EXPECTED for language, _ in LANGUAGES
            for c in (*MAIN, "Abstention"))
    assert n == 96 and table.states == {"scored": n, "not_applicable": 0, "unparseable": 0, "judge_error": 0,
                                        "unjudged": 0, "skipped": 0}
    assert f"- {states_note(table)}" in render(table, "markdown")
    assert states_note(table).startswith("States behind the table (summed over its cells): 96 scored · ")
