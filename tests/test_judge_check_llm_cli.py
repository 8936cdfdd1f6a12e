"""`gauntlet judge check llm:MODEL --suite NAME` with a configured model of each provider: the real openai and
anthropic SDKs over HTTP to the loopback fake server, a scripted judge, the per-aspect verdict printed, stored and
read back as the judge's fitness."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from core.analysis import certify as cert
from core.analysis import hard_set, mtrag_suite
from core.testing.fake_server import FakeLLMServer, ScriptRule
from tests.providers.conftest import point_sdks_at

# A scripted judge that finds one claim in every response, calls it supported, and calls every passage claim
# covered: constant labels, so its kappa is 0 like the majority label, which it cannot beat: not fit.
RULES = [
    ScriptRule(match=r"task: response-claims", reply='{"claims": ["a claim"]}'),
    ScriptRule(match=r"task: claim-verify", reply='{"results": [{"index": 1, "supported": true, "reason": "ok"}]}'),
    ScriptRule(match=r"task: context-claims", reply='{"core": ["A passage fact."], "supplementary": []}'),
    ScriptRule(match=r"task: coverage-verify", reply='{"results": [{"id": "K1", "covered": true, "reason": "ok"}]}'),
]

CASES = [
    ("openai-mtrag", "openai", "mtrag", mtrag_suite.ASPECTS, 40),
    ("anthropic-mtrag", "anthropic", "mtrag", mtrag_suite.ASPECTS, 40),
    ("anthropic-hard-set", "anthropic", "hard_set", hard_set.ASPECTS, 60),
]


def _sdk_of(body: dict) -> str:
    """The SDK a request body came from: Anthropic's Messages API puts the system prompt beside the messages."""
    return "anthropic" if "system" in body else "openai"


@pytest.mark.parametrize(("provider", "suite", "aspects", "limit"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_llm_judge_check_through_the_cli(engine, tmp_path, monkeypatch, provider, suite, aspects, limit) -> None:
    from core.analysis.judge_check import fitness_of
    from core.cli import app

    if suite == "mtrag" and not mtrag_suite.PATH.exists():
        pytest.skip("mtRAG human evaluations not in ../shared")
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    runner = CliRunner()
    with FakeLLMServer(RULES) as fake:
        point_sdks_at(monkeypatch, fake)
        added = runner.invoke(app, ["models", "add", f"judge-{provider}", "--provider", provider,
                                    "--price-in", "1", "--price-out", "2"])
        assert added.exit_code == 0, added.output
        result = runner.invoke(app, ["judge", "check", f"llm:judge-{provider}", "--suite", suite,
                                     "--limit", str(limit)])
        bodies = list(fake.requests)
    assert result.exit_code == 0, result.output
    # at most four calls per item (identical prompts, e.g. one conversation's passage claims, are answered once)
    assert 0 < len(bodies) <= 4 * limit and {_sdk_of(b) for b in bodies} == {provider}
    assert {b["model"] for b in bodies} == {f"judge-{provider}"}
    out = result.output
    assert f"judge llm:judge-{provider} (model judge-{provider}" in out and "judge calls " in out
    for aspect in aspects:
        assert f"verdict, {aspect}: NOT FIT" in out
    assert "baseline: word overlap" in out and "stored as judge check" in out
    fitness = fitness_of(engine, f"llm:judge-{provider}")
    assert fitness.label == cert.NOT_FIT
    assert all(f"{aspect} not fit" in fitness.reason for aspect in aspects) and suite in fitness.reason
