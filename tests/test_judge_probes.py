"""Judge probes against scripted judges on the fake server whose biases are known: each probe finds its bias and
clears an unbiased (content-reading) judge; probe calls bypass the cache; the cost is estimated before a run."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from sqlmodel import Session, select

from core.analysis.judge_check import load_suite
from core.analysis.judge_probes import estimate_cost, run_probe
from core.scoring.judges import HeuristicJudge
from core.store.models import LLMCall
from core.testing.fake_server import FakeLLMServer, ScriptRule
from tests.providers.conftest import point_sdks_at
from tests.test_judge_check import llm_judge, synthetic_suite

TASK = r"task: pairwise-preference[\s\S]*"
A, B = (json.dumps({"better": side, "reason": "scripted"}) for side in ("A", "B"))
CONTENT = [ScriptRule(match=TASK + r"Answer A:\n[^\n]*MW", reply=A), ScriptRule(match=TASK + r"Answer B:\n[^\n]*MW", reply=B)]
PADDED = "This answer was prepared"
JUDGES = {
    "content-reader": CONTENT,
    "prefers-first": [ScriptRule(match=TASK, reply=A)],
    "prefers-second": [ScriptRule(match=TASK, reply=B)],
    "prefers-longer": [ScriptRule(match=TASK + rf"Answer A:[\s\S]*{PADDED}[\s\S]*Answer B:", reply=A),
                       ScriptRule(match=TASK + rf"Answer B:[\s\S]*{PADDED}", reply=B), *CONTENT],
    "penalises-longer": [ScriptRule(match=TASK + rf"Answer A:[\s\S]*{PADDED}[\s\S]*Answer B:", reply=B),
                         ScriptRule(match=TASK + rf"Answer B:[\s\S]*{PADDED}", reply=A), *CONTENT],
    "flips-at-random": [ScriptRule(match=TASK, choices=[A, B])],
}
PROBE_CASES = [
    ("position-finds-first-preference", "prefers-first", "position", ["prefers the answer shown first"]),
    ("position-finds-second-preference", "prefers-second", "position", ["prefers the answer shown second"]),
    ("position-clears-content-reader", "content-reader", "position", []),
    ("position-clears-longer-preference", "prefers-longer", "position", []),
    ("length-finds-longer-preference", "prefers-longer", "length", ["prefers the longer answer"]),
    ("length-clears-content-reader", "content-reader", "length", []),
    ("length-clears-first-preference", "prefers-first", "length", []),
    ("length-finds-a-length-penalty", "penalises-longer", "length", ["penalises the longer answer"]),
    ("repeat-finds-random-flips", "flips-at-random", "repeat", ["flips between repeats"]),
    ("repeat-clears-content-reader", "content-reader", "repeat", []),
    ("repeat-clears-first-preference", "prefers-first", "repeat", []),
]


def probe_llm(engine, tmp_path, monkeypatch, rules, probe, n=16, k=3):
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    suite = synthetic_suite(tmp_path, n)
    with FakeLLMServer(rules, seed=7) as fake:
        point_sdks_at(monkeypatch, fake)
        result = asyncio.run(run_probe(llm_judge(engine), probe, load_suite(suite), k))
        return result, fake.stats()["calls"]


@pytest.mark.parametrize(("judge", "probe", "biases"), [c[1:] for c in PROBE_CASES], ids=[c[0] for c in PROBE_CASES])
def test_probe_detects_the_scripted_bias(engine, tmp_path, monkeypatch, judge, probe, biases) -> None:
    result, calls = probe_llm(engine, tmp_path, monkeypatch, JUDGES[judge], probe)
    assert result.biases == biases and result.errors == 0
    assert calls == 16 * {"repeat": 3, "position": 2, "length": 3}[probe]


def test_repeat_probe_bypasses_the_cache(engine, tmp_path, monkeypatch) -> None:
    result, calls = probe_llm(engine, tmp_path, monkeypatch, JUDGES["content-reader"], "repeat", n=4, k=4)
    with Session(engine) as session:
        assert session.exec(select(LLMCall)).all() == []
    assert calls == 16 and result.rows[0]["value"] == 0.0 and result.rows[1]["value"] == 1.0


def test_language_probe_reports_each_language(engine, tmp_path, monkeypatch) -> None:
    path = tmp_path / "suite.jsonl"
    lines = Path(synthetic_suite(tmp_path, 8)).read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    for row in rows:
        row["language"] = "de" if row["instance_id"] > 4 else "en"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    with FakeLLMServer([ScriptRule(match=TASK, reply=A)]) as fake:
        point_sdks_at(monkeypatch, fake)
        result = asyncio.run(run_probe(llm_judge(engine), "language", load_suite(str(path))))
    assert [(r["figure"], r["value"], r["agreement"], r["n"]) for r in result.rows] == [
        ("kappa with humans (de)", 0.0, 0.5, 8), ("kappa with humans (en)", 0.0, 0.5, 8)]


ESTIMATE_CASES = [("repeat", 3, 3 * 5), ("position", 3, 2 * 5), ("length", 3, 3 * 5), ("language", 3, 5)]


@pytest.mark.parametrize(("probe", "k", "calls"), ESTIMATE_CASES, ids=[c[0] for c in ESTIMATE_CASES])
def test_cost_is_estimated_before_a_probe_runs(engine, tmp_path, probe, k, calls) -> None:
    pairs = load_suite(synthetic_suite(tmp_path, 5))
    estimate = estimate_cost(llm_judge(engine), probe, pairs, k)
    assert estimate.calls == calls and estimate.cost_usd > 0
    assert estimate_cost(HeuristicJudge(), probe, pairs, k).calls == 0


def test_fake_server_draws_scripted_choices_from_its_seed() -> None:
    import httpx

    def replies(seed: int) -> list[str]:
        with FakeLLMServer([ScriptRule(match="pick", choices=["x", "y"])], seed=seed) as fake:
            return [httpx.post(f"{fake.base_url}/v1/chat/completions", json={"messages": [
                {"role": "user", "content": "pick"}]}).json()["choices"][0]["message"]["content"] for _ in range(12)]

    first = replies(3)
    assert set(first) == {"x", "y"} and replies(3) == first


CLI_PROBE_CASES = [
    ("position-finds-first-preference", "position", "prefers-first", "estimated 16 judge calls",
     "detected: prefers the answer shown first"),
    ("repeat-finds-random-flips", "repeat", "flips-at-random", "estimated 24 judge calls",
     "detected: flips between repeats"),
    ("length-clears-content-reader", "length", "content-reader", "estimated 24 judge calls", "detected: no bias"),
]


@pytest.mark.parametrize(("probe", "judge", "estimate", "verdict"), [c[1:] for c in CLI_PROBE_CASES],
                         ids=[c[0] for c in CLI_PROBE_CASES])
def test_probe_command_with_a_registered_llm_judge(engine, tmp_path, monkeypatch, probe, judge, estimate, verdict):
    from typer.testing import CliRunner

    from core.cli import app
    from core.store.models import JudgeCheck, Model

    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    with Session(engine) as session:
        session.add(Model(name="judge-test", provider="openai", model_name="judge-test", price_input_per_mtok=1.0,
                          price_output_per_mtok=2.0, settings={"timeout_s": 2}))
        session.commit()
    suite = synthetic_suite(tmp_path, 8)
    with FakeLLMServer(JUDGES[judge], seed=7) as fake:
        point_sdks_at(monkeypatch, fake)
        result = CliRunner().invoke(app, ["judge", "probe", probe, "llm:judge-test", "--suite", suite])
    assert result.exit_code == 0, result.output
    first, *rest = result.output.splitlines()
    assert estimate in first and verdict in rest[-2]
    with Session(engine) as session:
        stored = session.exec(select(JudgeCheck)).one()
    assert (stored.kind, stored.judge, stored.judge_model, stored.n) == (f"probe:{probe}", "llm:judge-test", "judge-test", 8)


REPLY_CASES = [
    ("lower-case-side", {"better": "a"}, "A"),
    ("padded-side", {"better": " B "}, "B"),
    ("capitalised-tie", {"better": "Tie"}, "tie"),
    ("no-side", {"better": None}, None),
    ("other-word", {"better": "both"}, None),
]


@pytest.mark.parametrize(("raw", "side"), [c[1:] for c in REPLY_CASES], ids=[c[0] for c in REPLY_CASES])
def test_pairwise_reply_sides(raw, side) -> None:
    from pydantic import ValidationError

    from core.analysis.judge_probes import PairwiseReply

    if side is None:
        with pytest.raises(ValidationError):
            PairwiseReply.model_validate(raw)
    else:
        assert PairwiseReply.model_validate(raw).better == side
