"""The `gauntlet` pytest fixture, run with pytester against the fake server: a test asserting through the gate is
green on a scripted good candidate and red on a scripted bad one; pyproject registers it as a pytest11 plugin."""

from __future__ import annotations

import tomllib
from importlib.metadata import entry_points

from core.config import REPO_ROOT

pytest_plugins = ("pytester",)

TEAM_TEST = '''
from pathlib import Path

import pytest

from core.testing.fake_server import FakeLLMServer, load_script
from core.testing.gate_demo import write_benchmark, write_script

N = 40
RULES = {"alpha": 0.05, "min_shared": 30, "metrics": ["exact_match"]}


def model(name, model_name, server):
    return {"name": name, "provider": "openai_compatible", "model_name": model_name, "price_in": 0, "price_out": 0,
            "settings": {"base_url": server.base_url + "/v1"}}


@pytest.mark.parametrize("wrong", [0, 15], ids=["good-candidate", "bad-candidate"])
def test_rag(gauntlet, tmp_path, wrong):
    bench = write_benchmark(tmp_path / "bench.jsonl", N)
    good = FakeLLMServer(load_script(write_script(tmp_path / "good.yaml", N))).start()
    cand = FakeLLMServer(load_script(write_script(tmp_path / "cand.yaml", N, wrong))).start()
    try:
        outcome = gauntlet.gate(bench, baseline=model("base", "scripted", good),
                                candidate=model("cand", "scripted-candidate", cand), rules=RULES)
    finally:
        good.stop()
        cand.stop()
    assert outcome.passed, outcome.markdown
'''


def test_the_fixture_is_green_on_a_good_candidate_and_red_on_a_bad_one(pytester, monkeypatch, tmp_path):
    monkeypatch.delenv("GAUNTLET_DATABASE_URL", raising=False)
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    monkeypatch.syspath_prepend(str(REPO_ROOT))
    pytester.makepyfile(test_team=TEAM_TEST)
    installed = any(e.value == "core.testing.pytest_plugin" for e in entry_points(group="pytest11"))
    load = [] if installed else ["-p", "core.testing.pytest_plugin"]  # an editable install not yet refreshed
    result = pytester.runpytest_subprocess(*load, "-p", "no:cacheprovider", "-o", f"pythonpath={REPO_ROOT}")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_rag?bad-candidate?*", "*significant regression*"])


def test_pyproject_registers_the_plugin_for_pytest() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["entry-points"]["pytest11"] == {"gauntlet": "core.testing.pytest_plugin"}
