"""Issue 43.3 (EnterpriseRAG): conflicts and gaps, rule-made or written by a generator, pass automatic checks before
they are built; each item stores its verdicts, failed items are dropped or written again, and the build report counts
them. The generator and the judge are scripted models on loopback fake servers reached through the real openai SDK.
The build's LLM cost is estimated before it starts and spent through the cached client under a budget."""

from __future__ import annotations

import json
import re

import pytest
from conftest import REPO
from typer.testing import CliRunner

from core.cli import app
from core.commands.build import llm_complete_json
from core.construction.fact_checks import Assist, check_conflict, check_gap
from core.testing.fake_server import ScriptRule
from tests.factories import scripted_models

DEPOSIT = ("A landlord may not require a deposit exceeding two months' rent. The deposit must be returned 14 days "
           "after the tenancy ends.")
QUESTION = "What is the maximum deposit?"
GOLD = ["two months' rent"]


def judge_says(**reply) -> list[ScriptRule]:
    """A judge that answers every check prompt with `reply` (plus a reason)."""
    return [ScriptRule(match="", reply=json.dumps({**reply, "reason": "scripted judge"}))]


CONFLICT_CASES = [
    # name, edited text, original span, replacement, kind, judge reply (None: no judge), checks expected to fail
    ("rule edit of the answer passes by rule alone", DEPOSIT.replace("two", "three"), "two months' rent",
     "three months' rent", "number", None, []),
    ("rule edit of a fact that is no answer fails drops_gold", DEPOSIT.replace("14", "18"), "14", "18", "number",
     None, ["drops_gold"]),
    ("gold left stated elsewhere fails", DEPOSIT.replace("exceeding two months' rent", "exceeding three months' rent")
     + " In short: two months' rent.", "exceeding two months' rent", "exceeding three months' rent", "generated",
     {"contradicts": True, "same_type": True}, ["gold_not_elsewhere"]),
    ("generated edit that states nothing new fails states_wrong", DEPOSIT.replace("two months' rent", "a sum"),
     "two months' rent", "three months' rent", "generated", {"contradicts": True, "same_type": True}, ["states_wrong"]),
    ("generated conflict that does not contradict fails", DEPOSIT.replace("two months' rent", "eight weeks' rent"),
     "two months' rent", "eight weeks' rent", "generated", {"contradicts": False, "same_type": True},
     ["contradicts"]),
    ("generated wrong answer of another type fails same_type", DEPOSIT.replace("two months' rent", "the landlord"),
     "two months' rent", "the landlord", "generated", {"contradicts": True, "same_type": False}, ["same_type"]),
    ("good generated edit passes", DEPOSIT.replace("two months' rent", "three months' rent"), "two months' rent",
     "three months' rent", "generated", {"contradicts": True, "same_type": True}, []),
    ("generated edit with no judge fails the meaning checks", DEPOSIT.replace("two months' rent", "three months' rent"),
     "two months' rent", "three months' rent", "generated", None, ["same_type", "contradicts"]),
]


@pytest.mark.parametrize("name, edited, original, replacement, kind, reply, failing", CONFLICT_CASES,
                         ids=[c[0] for c in CONFLICT_CASES])
def test_conflict_checks(engine, name, edited, original, replacement, kind, reply, failing):
    with scripted_models(engine, {"checker": judge_says(**(reply or {}))}, max_output_tokens=256):
        assist = Assist(judge=llm_complete_json("checker"), judge_name="checker") if reply else None
        verdicts = check_conflict(QUESTION, GOLD, DEPOSIT, edited, original, replacement, kind, assist)
    assert sorted(verdicts) == sorted(["states_wrong", "drops_gold", "gold_not_elsewhere", "same_type", "contradicts"])
    assert sorted(n for n, v in verdicts.items() if not v.passed) == sorted(failing)
    assert all(v.reason for v in verdicts.values())
    assert {v.by for v in verdicts.values()} <= {"rule", "judge:checker"}


GAP_CASES = [
    # name, bundle texts, judge reply (None: no judge), checks expected to fail, documents said to answer
    ("gap that still answers in meaning fails", ["Deposits are capped at twice the monthly rent.", "Pets are allowed."],
     {"answers": True, "documents": [1]}, ["no_answer"], [0]),
    ("gap with the gold string left fails by rule", ["The cap is two months' rent.", "Pets are allowed."], None,
     ["gold_not_elsewhere", "no_answer"], [0]),
    ("gap with no answer passes", ["Deposits are held by a scheme.", "Pets are allowed."],
     {"answers": False, "documents": []}, [], []),
]


@pytest.mark.parametrize("name, texts, reply, failing, answering", GAP_CASES, ids=[c[0] for c in GAP_CASES])
def test_gap_checks(engine, name, texts, reply, failing, answering):
    with scripted_models(engine, {"checker": judge_says(**(reply or {}))}, max_output_tokens=256):
        assist = Assist(judge=llm_complete_json("checker"), judge_name="checker") if reply else None
        verdicts, found = check_gap(QUESTION, GOLD, texts, assist=assist)
    assert sorted(n for n, v in verdicts.items() if not v.passed) == sorted(failing)
    assert found == answering


def writer_rules(queries: list[dict]) -> list[ScriptRule]:
    """The scripted writer: a conflict edits the query's first answer fact; a gap rewrites a document to a topic
    sentence with no figures."""
    rules = []
    for q in queries:
        if q["answer_facts"]:
            reply = {"original": q["answer_facts"][0], "edited": "ninety-nine weeks", "fact_type": "period"}
            rules.append(ScriptRule(match=r"contradicts the original(?s:.*)Question: " + re.escape(q["query"]) + "\n",
                                    reply=json.dumps(reply)))
    rules.append(ScriptRule(match="no longer answers the question", reply=json.dumps(
        {"text": "This notice concerns the same subject; its figures are published separately."})))
    return rules


JUDGE = [ScriptRule(match="knowledge-gap item", reply=json.dumps({"answers": False, "documents": [],
                                                                   "reason": "scripted: nothing answers"})),
         ScriptRule(match="one conflict item", reply=json.dumps({"contradicts": True, "same_type": True,
                                                                  "reason": "scripted: they contradict"}))]


def _report(output: str) -> dict:
    return json.loads(output[output.index("{"): output.rindex("}") + 1])


def test_build_with_a_generator_checks_every_conflict_and_gap_and_pays_nothing_twice(tmp_path, engine):
    queries = [json.loads(line) for line in (REPO / "data/queries/legal.jsonl").read_text().splitlines()]
    out = tmp_path / "bench.jsonl"
    args = ["build", "--corpus", str(REPO / "data/corpus/legal.jsonl"), "--queries", str(REPO / "data/queries/legal.jsonl"),
            "--library", str(REPO / "data/libraries"), "--out", str(out), "--bm25-only", "--generate", "writer",
            "--judge", "checker", "--seed", "15"]  # seed 15 plans both gaps the rules leave an answer in
    with scripted_models(engine, {"writer": writer_rules(queries), "checker": JUDGE}, max_output_tokens=256):
        estimated = CliRunner().invoke(app, [*args, "--estimate"])
        first = CliRunner().invoke(app, args)
        again = CliRunner().invoke(app, args)
        stopped = CliRunner().invoke(app, [*args[:-3], "writer", "--out", str(tmp_path / "other.jsonl"),
                                           "--budget", "0.0001"])
    assert estimated.exit_code == 0 and "instances" not in _report(estimated.stdout)  # stopped before the build
    estimate = _report(estimated.stdout)
    assert estimate["calls"] > 0 and estimate["max_cost_usd"] > 0 and set(estimate["per_role"]) == {"generator", "judge"}
    assert first.exit_code == 0, first.output
    assert "estimate before the build: at most" in first.output
    report = _report(first.stdout)
    assert report["generated"] == 2 and report["dropped_by_checks"] == []  # the two gaps the rules left an answer in
    assert report["checks"]["no_answer"]["by_judge"] == report["by_mode"]["gap"]
    print(f"legal seed 15: estimate {estimate['calls']} calls ${estimate['max_cost_usd']:.4f}; spent {report['spent']}; "
          f"generated {report['generated']}, checks {report['checks']}")
    assert report["spent"]["calls"] > 0 and report["spent"]["cached"] == 0 and report["spent"]["paid_usd"] > 0
    assert report["spent"]["calls"] <= report["estimate"]["calls"]
    assert report["spent"]["paid_usd"] <= report["estimate"]["max_cost_usd"]
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    checked = [r for r in rows if r["mode"] in ("gap", "conflict") and r["origin"] == "augmented"]
    assert checked and all(all(v["passed"] for v in r["metadata"]["bundle"]["checks"].values()) for r in checked)
    generated = [r for r in rows if r["metadata"]["bundle"].get("generated")]
    assert sorted(r["id"] for r in generated) == ["leg-employment-notice-q1-gap", "leg-theft-minor-q1-gap"]
    assert all("rule_failed" in r["metadata"]["bundle"] for r in generated)
    assert again.exit_code == 0, again.output
    repeat = _report(again.stdout)
    assert repeat["spent"]["calls"] == 0 and repeat["spent"]["paid_usd"] == 0  # every answer from the cache
    assert repeat["spent"]["cached"] == report["spent"]["calls"] and repeat["instances"] == report["instances"]
    # a judge whose calls are not in the cache yet: the first one's reservation is past the budget, so it is not sent
    assert stopped.exit_code == 4 and "build stopped: the build's budget $0.0001 is spent" in stopped.output
