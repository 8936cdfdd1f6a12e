"""FollowRAG instructions are scored through the ordinary pipeline: `gauntlet score` writes a verdict per instruction
(rule checkers, IFEval's loose verdict beside the strict one), Loose / Strict IAS and FollowRAG's instruction score
appear in `gauntlet report` beside the reference-answer metrics and on the Protocol views page.

The records are four of FollowRAG's published followRAG_ifnq.json (github.com/dongguanting/FollowRAG, commit
aa50bb823150b8225b05d32d0077d81411fdceb8): keys 15 (2 paragraphs), 30 (no commas, repeat the request, 2 paragraphs,
at least 500 words), 12 (entirely in Persian) and 2 (double quotes, no commas)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlmodel import Session, col, select
from typer.testing import CliRunner

from core.analysis import readmodel
from core.cli import app
from core.ingest.importers import import_source
from core.scoring.scorer import score_run
from core.store.models import Constraint, Instance, Verdict
from tests.judges.conftest import seed_run
from tests.scoring.conftest import RefWorld

PUBLISHED = Path(__file__).resolve().parents[1] / "fixtures" / "followrag_ifnq_instructions.json"
PERSIAN = "نخست وزیر بریتانیا مدت زمان مشخصی ندارد و تا زمانی که اعتماد مجلس را دارد در سمت خود باقی می ماند"
PARTIAL = "who played buffy the vampire slayer in the movie? Kristy Swanson"  # no commas, repeated; 1 paragraph, 9 words


@dataclass(frozen=True)
class Answer:
    model: str
    key: int
    text: str
    strict: tuple[bool, ...]  # per instruction, in the record's order
    loose: tuple[bool, ...]


ANSWERS = [
    pytest.param(Answer("follower", 15, "It was ratified on May 5 1992.\n***\nIt is the Twenty-seventh Amendment.",
                        (True,), (True,)), id="two-paragraphs-followed"),
    pytest.param(Answer("follower", 2, '"Missi Hale sings it"', (True, True), (True, True)), id="quotes-followed"),
    pytest.param(Answer("follower", 12, PERSIAN, (True,), (True,)), id="persian-followed"),
    pytest.param(Answer("follower", 30, PARTIAL, (True, True, False, False), (True, True, False, False)),
                 id="two-of-four-followed"),
    pytest.param(Answer("breaker", 15, "May 5, 1992", (False,), (False,)), id="one-paragraph"),
    pytest.param(Answer("breaker", 2, 'Here it is:\n"Missi Hale sings it"', (False, True), (True, True)),
                 id="quotes-after-a-first-line-loose-only"),
    pytest.param(Answer("breaker", 12, "At Her Majesty's pleasure: there is no fixed term.", (False,), (False,)),
                 id="english-not-persian"),
    pytest.param(Answer("breaker", 30, PARTIAL, (True, True, False, False), (True, True, False, False)),
                 id="breaker-two-of-four"),
]
ALL = [p.values[0] for p in ANSWERS]
# per model: Loose IAS (mean of shares), Strict IAS, FollowRAG's instruction score (pooled loose share of 8)
EXPECTED = {"follower": (0.875, 0.75, 6 / 8), "breaker": (0.25, 0.0, 4 / 8)}


@pytest.fixture
def scored(engine) -> tuple[RefWorld, dict[tuple[str, int], int]]:
    assert import_source(engine, PUBLISHED, fmt="followrag").ok
    with Session(engine) as s:
        _, model_ids, run_id = seed_run(s, "General", ("follower", "breaker"), "followrag")
        s.commit()
        instances = dict(s.exec(select(Instance.uid, Instance.id)).all())
    world = RefWorld(engine, run_id, model_ids, instances)
    responses = {(a.model, a.key): world.respond(a.model, f"followrag/ifnq/{a.key}", a.text) for a in ALL}
    report = asyncio.run(score_run(engine, run_id, "heuristic"))
    assert not report.errors and report.total_calls == 0
    return world, responses


@pytest.mark.parametrize("answer", ANSWERS)
def test_every_instruction_gets_a_strict_and_a_loose_rule_verdict(scored, answer: Answer) -> None:
    world, responses = scored
    with Session(world.engine) as s:
        rows = s.exec(select(Verdict, Constraint).join(Constraint, col(Constraint.id) == Verdict.constraint_id)
                      .where(Verdict.response_id == responses[(answer.model, answer.key)],
                             Verdict.metric == "constraint").order_by(col(Constraint.position))).all()
    assert [v.judge for v, _ in rows] == ["rule"] * len(answer.strict)
    assert tuple(v.passed for v, _ in rows) == answer.strict
    assert tuple(v.details["loose"] for v, _ in rows) == answer.loose


def test_ias_and_the_instruction_score_per_model(scored) -> None:
    world, _ = scored
    scores = readmodel.instruction_scores(world.engine, [world.run_id], "heuristic")
    assert len(scores) == len(ALL) and scores["unjudged"].sum() == 0 and scores["errors"].sum() == 0
    summary = readmodel.instruction_summary(scores, "heuristic").set_index(["model", "metric"])
    for model, values in EXPECTED.items():
        for metric, value in zip(readmodel.INSTRUCTION_METRICS, values, strict=True):
            row = summary.loc[(model, metric)]
            assert row["value"] == pytest.approx(value) and row["n"] == 4, (model, metric)
            assert 0.0 <= row["ci_low"] <= value <= row["ci_high"] <= 1.0, (model, metric)


def test_the_report_shows_them_beside_the_reference_answer_metrics(scored, monkeypatch, db_url) -> None:
    world, _ = scored
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", db_url)
    result = CliRunner().invoke(app, ["report", str(world.run_id), "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["reference_metrics"]
    follower = [r["metric"] for r in rows if r["model"] == "follower"]
    assert follower.index("exact_match") < follower.index("loose_ias") < follower.index("instruction_score")
    cell = next(r for r in rows if r["model"] == "breaker" and r["metric"] == "instruction_score")
    assert cell["value"] == pytest.approx(0.5) and cell["n"] == 4 and cell["interval"] == "ratio-effective-n"
    table = CliRunner().invoke(app, ["report", str(world.run_id)])
    assert "instruction_score" in table.stdout and "strict_ias" in table.stdout


def views_page(monkeypatch, db_url):
    """The Protocol views page on reference_qa, signed in as an analyst."""
    from streamlit.testing.v1 import AppTest

    from core.config import REPO_ROOT
    from tests.pages.signin import sign_in

    monkeypatch.setenv("GAUNTLET_DATABASE_URL", db_url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    page = AppTest.from_file(str(Path(REPO_ROOT, "pages", "protocol_views.py")), default_timeout=60)
    at = sign_in(page, "analyst").run()
    return at.selectbox(key="pv_protocol").set_value("reference_qa").run()


def test_the_protocol_views_page_shows_them_beside_exact_match(scored, monkeypatch, db_url) -> None:
    at = views_page(monkeypatch, db_url)
    assert not at.exception, at.exception
    assert [s.value for s in at.subheader] == ["Instructions followed, beside the answer", "Each benchmark's own measures"]
    table = at.dataframe[0].value.set_index("model")
    for model, (loose, strict, score) in EXPECTED.items():
        assert table.loc[model, "loose_ias"] == pytest.approx(loose)
        assert table.loc[model, "strict_ias"] == pytest.approx(strict)
        assert table.loc[model, "instruction_score"] == pytest.approx(score)
        assert table.loc[model, "instruction_score_n"] == 4 and table.loc[model, "exact_match_n"] == 4
    # the breaker names every gold answer while ignoring instructions; the follower's Persian answer names none
    assert (table.loc["follower", "exact_match"], table.loc["breaker", "exact_match"]) == (0.75, 1.0)
    assert any("IFEval's loose rule" in c.value for c in at.caption)


DRILL_DOWNS = [  # model -> its responses' Strict IAS behind the table's cell (0.75 and 0.0 over n = 4)
    pytest.param("follower", [0.0, 1.0, 1.0, 1.0], id="follower"),
    pytest.param("breaker", [0.0, 0.0, 0.0, 0.0], id="breaker"),
]


@pytest.mark.parametrize(("model", "values"), DRILL_DOWNS)
def test_the_protocol_views_page_drills_down_to_the_responses(scored, monkeypatch, db_url, model, values) -> None:
    at = views_page(monkeypatch, db_url)
    at.selectbox(key="pv_drill_0_model").set_value(model).run()
    at.selectbox(key="pv_drill_0_metric").set_value("strict_ias").run()
    assert not at.exception, at.exception
    rows = at.dataframe[1].value
    assert set(rows["model"]) == {model} and sorted(rows["strict_ias"]) == values
    assert any(m.value.startswith(f"**{model}** on") for m in at.markdown), [m.value for m in at.markdown]


def test_an_instruction_no_rule_checks_is_left_to_the_judge_and_counted_unjudged(engine, tmp_path) -> None:
    record = json.loads(PUBLISHED.read_text(encoding="utf-8"))[3]  # key 2: quotes, no commas
    record |= {"key": 1002, "instruction_id_list": ["structure_poem", *record["instruction_id_list"]],
               "kwargs": [{"lines": 4}, *record["kwargs"]]}
    path = tmp_path / "followrag.json"
    path.write_text(json.dumps([record]), encoding="utf-8")
    assert import_source(engine, path, fmt="followrag").ok
    with Session(engine) as s:
        _, model_ids, run_id = seed_run(s, "General", ("follower",), "unknown-instruction")
        s.commit()
        instances = dict(s.exec(select(Instance.uid, Instance.id)).all())
    world = RefWorld(engine, run_id, model_ids, instances)
    world.respond("follower", "followrag/ifnq/1002", '"Missi Hale sings it"')
    asyncio.run(score_run(engine, run_id, "heuristic"))
    with Session(engine) as s:
        rows = s.exec(select(Verdict.judge, Verdict.status).where(Verdict.metric == "constraint")
                      .order_by(col(Verdict.constraint_id))).all()
    assert sorted(rows) == [("heuristic", "not_applicable"), ("rule", "ok"), ("rule", "ok")]
    [row] = readmodel.instruction_scores(engine, [run_id], "heuristic").to_dict("records")
    assert (row["n_instructions"], row["judged"], row["unjudged"], row["loose_ias"]) == (3, 2, 1, 1.0)
    assert row["strict_ias"] != row["strict_ias"]  # undetermined (NaN) while an instruction is unjudged
