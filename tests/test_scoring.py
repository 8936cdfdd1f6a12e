"""score_run: rule checks, preconditions, judged constraints and metrics stored as verdicts; idempotent; claim reuse."""

from __future__ import annotations

import asyncio
import json

import pytest
from sqlmodel import Session, select

from core.scoring.judges.llm_judge import LLMJudge
from core.scoring.scorer import score_run
from core.store.models import Constraint, ContextClaims, Verdict
from tests.judges.conftest import REFUSAL, ScriptedClient, World, world  # noqa: F401

BATCH_TAG = "[task: constraint-batched]"


def verdicts(world: World, judge: str | None = None) -> list[Verdict]:
    with Session(world.engine) as s:
        q = select(Verdict)
        if judge:
            q = q.where(Verdict.judge == judge)
        return list(s.exec(q))


def by_cid(world: World, response_id: int) -> dict[str, Verdict]:
    with Session(world.engine) as s:
        rows = s.exec(select(Verdict, Constraint).join(Constraint).where(Verdict.response_id == response_id)).all()
        return {c.cid: v for v, c in rows}


@pytest.mark.parametrize(
    ("name", "mode", "cid", "judge", "method", "passed"),
    [
        ("gap_pre_on_noisy_satisfied", "noisy", "c3", "heuristic", "precondition", True),
        ("conflict_pre_on_noisy_satisfied", "noisy", "c4", "heuristic", "precondition", True),
        ("gap_pre_on_gap_checked", "gap", "c1", "heuristic", "heuristic", True),
        ("conflict_pre_on_gap_satisfied", "gap", "c2", "heuristic", "precondition", True),
        ("rule_conditional_untriggered", "gap", "c4", "rule", "precondition", True),
        ("conflict_pre_on_conflict_checked", "conflict", "c1", "heuristic", "heuristic", True),
        ("rule_unconditional_checked", "conflict", "c2", "rule", "rule", True),
    ],
)
def test_preconditions(world: World, name, mode, cid, judge, method, passed) -> None:
    rid = world.respond("gen-a", mode)
    asyncio.run(score_run(world.engine, world.run_id, "heuristic"))
    v = by_cid(world, rid)[cid]
    assert (v.judge, v.method, v.passed, v.status) == (judge, method, passed, "ok"), name
    if method == "precondition":
        assert "not triggered" in v.reason


def test_heuristic_run_idempotent_and_metrics_per_mode(world: World) -> None:
    for mode in ("noisy", "gap", "conflict"):
        world.respond("gen-a", mode)
    report = asyncio.run(score_run(world.engine, world.run_id, "heuristic"))
    metrics = {(v.response_id, v.metric) for v in verdicts(world) if v.metric != "constraint"}
    noisy, gap, conflict = world.responses
    assert {m for r, m in metrics if r == noisy} == {"faithfulness", "coverage", "refusal"}
    assert {m for r, m in metrics if r == gap} == {"faithfulness", "coverage", "rejection"}
    assert {m for r, m in metrics if r == conflict} == {"faithfulness", "coverage", "conflict_recognition"}
    assert report.verdicts_written == len(verdicts(world)) and report.total_calls == 0
    again = asyncio.run(score_run(world.engine, world.run_id, "heuristic"))
    assert again.verdicts_written == 0 and again.verdicts_skipped == report.verdicts_written
    gap_cov = [v for v in verdicts(world) if v.response_id == gap and v.metric == "coverage"][0]
    assert gap_cov.status == "not_applicable" and "gap instance" in gap_cov.reason


def test_always_refuse_scores_rejection_one_and_coverage_zero(world: World) -> None:
    gap = world.respond("gen-a", "gap", REFUSAL)
    noisy = world.respond("gen-a", "noisy", REFUSAL)
    asyncio.run(score_run(world.engine, world.run_id, "heuristic"))
    got = {(v.response_id, v.metric): v for v in verdicts(world, "heuristic") if v.metric != "constraint"}
    assert got[(gap, "rejection")].value == 1.0
    assert got[(noisy, "coverage")].value == pytest.approx(0.0, abs=0.1)
    assert got[(noisy, "refusal")].value == 1.0
    assert got[(noisy, "faithfulness")].status == "not_applicable"
    assert got[(noisy, "faithfulness")].value is None


def test_pending_and_failed_responses_are_not_scored(world: World) -> None:
    world.respond("gen-a", "noisy", status="failed")
    report = asyncio.run(score_run(world.engine, world.run_id, "heuristic"))
    assert report.responses == 0 and verdicts(world) == []


def scripted_llm(batch_reply: str) -> ScriptedClient:
    claims = json.dumps({"claims": ["The X200 warranty is 24 months."]})
    return ScriptedClient([
        (BATCH_TAG, batch_reply),
        ("[task: constraint-single]", '{"verdict": "yes", "reason": "ok"}'),
        ("[task: response-claims]", claims),
        ("[task: claim-verify]", '{"results": [{"index": 1, "supported": true, "reason": "[1]"}]}'),
        ("[task: context-claims]", '{"core": ["warranty 24 months"], "supplementary": ["covers seals"]}'),
        ("[task: coverage-verify]", '{"results": [{"id": "K1", "covered": true}, {"id": "S1", "covered": false}]}'),
        ("[task: refusal]", '{"refused": 0, "reason": "answers"}'),
    ])


@pytest.mark.parametrize(
    ("name", "mode", "constraint_calls"),
    [("batched_one_call", "batched", 1), ("single_one_per_constraint", "single", 2)],
)
def test_llm_judge_context_claims_reused_across_models(world: World, name, mode, constraint_calls) -> None:
    for model in ("gen-a", "gen-b"):
        world.respond(model, "noisy")
    client = scripted_llm(json.dumps({"verdicts": [{"id": "c2", "verdict": "yes"}, {"id": "c5", "verdict": "no"}]}))
    judge = "llm:judge-x" + ("@single" if mode == "single" else "")
    report = asyncio.run(score_run(world.engine, world.run_id, LLMJudge(client, "llm:judge-x"), constraint_mode=mode))
    assert report.judge == judge and report.constraint_mode == mode, name
    assert report.context_claims_extracted == 1 and report.context_claims_reused == 1, name
    assert client.calls.count("judge:context_claims") == 1
    assert report.calls["constraint"] == 2 * constraint_calls
    assert report.total_calls == len(client.calls) == 2 * (constraint_calls + 4) + 1
    with Session(world.engine) as s:
        stored = s.exec(select(ContextClaims)).one()
    assert stored.core == ["warranty 24 months"] and stored.judge == judge
    cov = [v for v in verdicts(world, judge) if v.metric == "coverage"]
    assert sorted(v.value for v in cov) == [pytest.approx(0.7)] * 2
    assert sorted(v.details["context_claims_reused"] for v in cov) == [False, True]
    methods = {v.method for v in verdicts(world, judge) if v.metric == "constraint"}
    assert methods == {mode, "precondition"}


def test_batched_missing_id_is_an_error_verdict(world: World) -> None:
    rid = world.respond("gen-a", "noisy")
    client = scripted_llm(json.dumps({"verdicts": [{"id": "c2", "verdict": "yes"}]}))
    report = asyncio.run(score_run(world.engine, world.run_id, LLMJudge(client, "llm:judge-x")))
    c5 = by_cid(world, rid)["c5"]
    assert c5.status == "error" and c5.passed is None and "c5" in c5.reason
    assert report.errors == {"constraint": 1}


def test_unknown_judge_model_lists_known(world: World) -> None:
    with pytest.raises(LookupError, match="judge-x"):
        asyncio.run(score_run(world.engine, world.run_id, "llm:nope"))


def test_bad_constraint_mode_rejected(world: World) -> None:
    with pytest.raises(ValueError, match="constraint_mode"):
        asyncio.run(score_run(world.engine, world.run_id, "heuristic", constraint_mode="all"))


HEURISTIC_WARNING = "warning: scoring with the heuristic (lexical, offline) judge"


@pytest.mark.parametrize(
    ("args", "env", "secrets", "code", "needle", "warned"),
    [
        pytest.param(["--judge", "heuristic"], {}, "", 0, "scored by heuristic (lexical, offline)", False,
                     id="explicit-heuristic"),
        pytest.param(["--judge", "oracle"], {}, "", 2, "known: heuristic, llm", False, id="unknown-judge"),
        pytest.param(["--judge", "llm:nope"], {}, "", 2, "known models", False, id="unknown-model"),
        pytest.param(["--constraint-mode", "all"], {}, "", 2, "single", False, id="bad-mode"),
        pytest.param([], {}, "", 0, "scored by heuristic (lexical, offline)", True, id="nothing-configured-warns"),
        pytest.param([], {"GAUNTLET_JUDGE": "llm:nope"}, "", 2, "known models", False, id="env-judge-used"),
        pytest.param([], {}, 'judge = "llm:nope"\n', 2, "known models", False, id="secrets-judge-used"),
        pytest.param([], {"GAUNTLET_JUDGE": "heuristic"}, 'judge = "llm:nope"\n', 0, "scored by heuristic", True,
                     id="env-wins-over-secrets"),
        pytest.param(["--judge", "heuristic"], {"GAUNTLET_JUDGE": "llm:nope"}, "", 0, "scored by heuristic", False,
                     id="option-wins-over-config"),
    ],
)
def test_cli_score(world: World, monkeypatch, tmp_path, args, env, secrets, code, needle, warned) -> None:
    from typer.testing import CliRunner

    from core.cli import app

    secrets_file = tmp_path / "secrets.toml"
    if secrets:
        secrets_file.write_text(secrets, encoding="utf-8")
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(secrets_file))
    monkeypatch.delenv("GAUNTLET_JUDGE", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    world.respond("gen-a", "noisy")
    result = CliRunner().invoke(app, ["score", str(world.run_id), *args])
    assert result.exit_code == code, result.output
    assert needle in result.output, result.output
    assert (HEURISTIC_WARNING in result.stderr) is warned, result.stderr
    if warned:
        assert "GAUNTLET_JUDGE" in result.stderr and "secrets.toml" in result.stderr
        assert HEURISTIC_WARNING not in result.stdout


@pytest.mark.parametrize(
    ("env", "secrets", "expected"),
    [
        pytest.param(None, "", None, id="none"),
        pytest.param("llm:gpt-4.1", "", "llm:gpt-4.1", id="environment"),
        pytest.param(None, 'judge = "llm:claude"\n', "llm:claude", id="secrets-judge-key"),
        pytest.param(" llm:gpt-4.1 ", 'judge = "llm:claude"\n', "llm:gpt-4.1", id="environment-first-stripped"),
        pytest.param("", 'judge = "  "\n', None, id="blank-is-unset"),
    ],
)
def test_default_judge(monkeypatch, tmp_path, env, secrets, expected) -> None:
    from core.config import default_judge

    path = tmp_path / "secrets.toml"
    if secrets:
        path.write_text(secrets, encoding="utf-8")
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(path))
    if env is None:
        monkeypatch.delenv("GAUNTLET_JUDGE", raising=False)
    else:
        monkeypatch.setenv("GAUNTLET_JUDGE", env)
    assert default_judge() == expected


def verdict_contents(world: World) -> list[tuple]:
    """Every stored verdict's content, ids aside, in a stable order."""
    return sorted((v.response_id, v.metric, v.judge, v.constraint_id or 0, v.status, v.passed, v.value, v.method,
                   v.reason, json.dumps(v.details, sort_keys=True), v.calls) for v in verdicts(world))


def forget_scores(world: World) -> None:
    """Delete the stored verdicts and claims, so the run scores afresh."""
    with Session(world.engine) as s:
        for row in [*s.exec(select(Verdict)), *s.exec(select(ContextClaims))]:
            s.delete(row)
        s.commit()


@pytest.mark.parametrize(
    ("name", "judge", "chunk"),
    [
        ("heuristic_one_chunk", "heuristic", 256),
        ("heuristic_chunks_of_two", "heuristic", 2),
        ("llm_chunks_of_one", "llm", 1),
        ("llm_chunks_of_four", "llm", 4),
    ],
)
def test_saved_verdicts_released_and_unchanged_by_chunking(world: World, monkeypatch, name, judge, chunk) -> None:
    import gc
    import weakref

    from core.scoring import scorer

    for model in ("gen-a", "gen-b"):
        for mode in ("noisy", "gap", "conflict"):
            world.respond(model, mode)

    def score() -> scorer.ScoreReport:
        client = scripted_llm(json.dumps({"verdicts": [{"id": "c2", "verdict": "yes"}, {"id": "c5", "verdict": "no"}]}))
        return asyncio.run(score_run(world.engine, world.run_id, "heuristic" if judge == "heuristic"
                                     else LLMJudge(client, "llm:judge-x"), concurrency=1))

    whole = score()
    expected = verdict_contents(world)
    forget_scores(world)
    monkeypatch.setattr(scorer, "LOAD_CHUNK", chunk, raising=False)
    monkeypatch.setattr(scorer, "SAVE_EVERY_S", 0)  # a write per finished response or two: many writes
    saved: list[weakref.ref[Verdict]] = []
    alive_at_write: list[int] = []
    save = scorer._Scorer.save

    def counting_save(self: scorer._Scorer, batch: list[Verdict]) -> None:
        gc.collect()
        alive_at_write.append(sum(ref() is not None for ref in saved))  # earlier writes' verdicts still held
        save(self, batch)
        saved.extend(map(weakref.ref, batch))

    monkeypatch.setattr(scorer._Scorer, "save", counting_save)
    report = score()
    assert len(alive_at_write) >= 2, name
    assert alive_at_write == [0] * len(alive_at_write), name
    assert verdict_contents(world) == expected, name
    assert report.model_dump(exclude={"seconds"}) == whole.model_dump(exclude={"seconds"}), name


class _NeverExtracts:
    """A judge whose context-claims extraction must not be reached (it would be a second paid call)."""

    name = "llm:judge-x"
    client = None

    async def context_claims(self, item):
        raise AssertionError("claims extracted again though another response had stored them")


@pytest.mark.parametrize(("name", "stored"), [
    pytest.param("stored-after-this-chunks-read", True, id="stored-after-this-chunks-read"),
    pytest.param("nothing-stored", False, id="nothing-stored"),
])
def test_claims_another_response_stored_after_the_chunk_read_are_reused(world: World, name: str, stored: bool) -> None:
    """The race of chunked scoring: the next chunk read the stored claims before an earlier response of the same
    instance stored them, and that response finished (its claims left memory) before this one asked."""
    from core.scoring.judges.base import ContextClaimsOutcome, JudgeInput
    from core.scoring.scorer import _Scorer, store_context_claims

    iid = world.instances["noisy"]
    scorer = _Scorer(world.engine, world.run_id, _NeverExtracts(), "batched", 1)
    kept = ContextClaimsOutcome(core=["the claim"], supplementary=[], calls=1)
    if stored:
        store_context_claims(world.engine, iid, _NeverExtracts.name, kept)
    item = JudgeInput(query="q", mode="noisy", documents=[], response="r", instance_id=iid)
    if not stored:
        with pytest.raises(AssertionError, match="extracted again"):
            asyncio.run(scorer.context_claims(item))
        return
    claims, fresh = asyncio.run(scorer.context_claims(item))
    assert (claims.core, claims.calls, fresh) == (["the claim"], 1, False), name
    assert (scorer.report.context_claims_reused, scorer.report.context_claims_extracted) == (1, 0), name
