"""Issue 43: the misleading-evidence build's LLM cost is estimated before it starts (printed, or alone with
--estimate) and its calls are spent under --budget through the cached client (models scripted on loopback)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from core.cli import app
from core.testing.fake_server import ScriptRule
from tests.factories import scripted_models
from tests.misleading_evidence.conftest import DATA, SLICES


def test_estimate_first_then_a_budget_that_stops_the_build(tmp_path, engine):
    fmt, relative = SLICES["hotpotqa"]
    out = tmp_path / "stress.jsonl"
    args = ["misleading-evidence", "build", str(DATA / relative), "--format", fmt, "--out", str(out), "--limit", "20",
            "--llm", "writer", "--generate", "--judge", "checker"]
    with scripted_models(engine, {"writer": [ScriptRule(match="", reply="{}")],
                                  "checker": [ScriptRule(match="", reply="{}")]}, max_output_tokens=512):
        estimated = CliRunner().invoke(app, [*args, "--estimate"])
        stopped = CliRunner().invoke(app, [*args, "--budget", "0.0001"])
    assert estimated.exit_code == 0, estimated.output
    assert "estimate before the build: at most" in estimated.output and not out.exists()
    estimate = json.loads(estimated.stdout[estimated.stdout.index("{"):])
    assert set(estimate["per_role"]) == {"generator", "judge"} and estimate["max_cost_usd"] > 0
    assert estimate["per_role"]["generator"]["calls"] == 2 * 20  # every open-QA item, two written edits at most
    assert stopped.exit_code == 4 and "build stopped: the build's budget $0.0001 is spent" in stopped.output
