"""The GitHub Action's steps (ci/gauntlet-gate.sh, what action.yml runs) against the fake server: a scripted good
candidate passes (exit 0), a bad one fails (exit 2), too few items cannot decide (exit 1); the PR comment and the
JSON verdict are written."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from core.config import REPO_ROOT
from core.testing.fake_server import FakeLLMServer, load_script
from core.testing.gate_demo import write_benchmark, write_script

N = 40
RULES = {"alpha": 0.05, "min_shared": 30, "metrics": ["exact_match", {"metric": "token_f1", "max_drop": 0.02}]}
CASES = [
    ("good-candidate-passes", 0, RULES, 0, "pass"),
    ("bad-candidate-fails", 15, RULES, 2, "regression"),
    ("too-few-items-undecided", 0, {**RULES, "min_shared": 100}, 1, "undecided"),
]


def model_file(path, name: str, model_name: str, server: FakeLLMServer):
    path.write_text(json.dumps({"name": name, "provider": "openai_compatible", "model_name": model_name,
                                "price_in": 0, "price_out": 0, "settings": {"base_url": server.base_url + "/v1"}}))
    return path


@pytest.mark.parametrize(("wrong", "rules", "code", "verdict"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_action_script_gates_scripted_candidates(tmp_path, wrong, rules, code, verdict):
    bench = write_benchmark(tmp_path / "bench.jsonl", N)
    good = FakeLLMServer(load_script(write_script(tmp_path / "good.yaml", N))).start()
    cand = FakeLLMServer(load_script(write_script(tmp_path / "cand.yaml", N, wrong))).start()
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules))
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "GAUNTLET_BENCHMARK": str(bench),
           "GAUNTLET_BASELINE": str(model_file(tmp_path / "base.json", "base", "scripted", good)),
           "GAUNTLET_CANDIDATE": str(model_file(tmp_path / "cand.json", "cand", "scripted-candidate", cand)),
           "GAUNTLET_RULES": str(tmp_path / "rules.yaml"), "GAUNTLET_OUT": str(tmp_path / "out"),
           "GAUNTLET_CMD": f"{sys.executable} -m core.cli", "GAUNTLET_PYTHON": sys.executable,
           "GAUNTLET_SECRETS_FILE": str(tmp_path / "none.toml"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    env.pop("GAUNTLET_DATABASE_URL", None)
    try:
        done = subprocess.run(["bash", str(REPO_ROOT / "ci" / "gauntlet-gate.sh")], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
    finally:
        good.stop()
        cand.stop()
    assert done.returncode == code, done.stderr[-3000:]
    doc = json.loads((tmp_path / "out" / "gate.json").read_text())
    assert doc["verdict"] == verdict and doc["exit_code"] == code
    summary = (tmp_path / "out" / "gate.md").read_text()
    assert summary == (tmp_path / "summary.md").read_text() and "Gauntlet gate" in summary
    overall = {r["metric"]: r for r in doc["rows"] if r["dimension"] == "overall"}
    assert overall["exact_match"]["n_shared"] == N
    if code != 1:
        assert overall["exact_match"]["diff"] == pytest.approx(-wrong / N)
        assert overall["exact_match"]["regression"] is (code == 2)


def test_the_action_runs_the_script_with_every_input_it_reads():
    """action.yml is a composite action whose gate step runs ci/gauntlet-gate.sh with the variables the script reads."""
    import re

    action = yaml.safe_load((REPO_ROOT / "action.yml").read_text())
    script = (REPO_ROOT / "ci" / "gauntlet-gate.sh").read_text()
    step = next(s for s in action["runs"]["steps"] if s.get("id") == "gate")
    assert action["runs"]["using"] == "composite" and "ci/gauntlet-gate.sh" in step["run"]
    read = set(re.findall(r"\$\{?(GAUNTLET_[A-Z_]+)", script)) - {"GAUNTLET_CMD", "GAUNTLET_PYTHON"}
    assert read == set(step["env"])
    inputs = {m for value in step["env"].values() for m in re.findall(r"inputs\.(\w+)", value)}
    assert inputs <= set(action["inputs"]) and {"benchmark", "baseline", "candidate", "rules"} <= inputs
