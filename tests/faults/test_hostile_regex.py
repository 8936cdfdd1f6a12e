"""A hostile checker regex cannot hang scoring: validate compiles every regex from a benchmark file (and rejects
invalid ones with their field path); a catastrophic-backtracking pattern that compiles is matched under a time
limit and `gauntlet score` finishes, recording a checker error for that constraint."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time

import pytest
from sqlmodel import Session, select

from core.config import REPO_ROOT
from core.generation import runner, runs
from core.ingest.io import import_file, validate_lines
from core.scoring.checkers import build_checker
from core.scoring.checkers.guard import RegexTimeout
from core.store.models import Constraint, Verdict
from core.testing.fake_server import FakeLLMServer, ScriptRule
from tests.factories import add_model
from tests.faults.conftest import figure, gauntlet
from tests.providers.conftest import point_sdks_at

SAMPLE = REPO_ROOT / "data" / "sample" / "enterprise_rag_sample.jsonl"
EVIL = r"(a+)+$"
REPLY = "a" * 40 + "!"  # exponential backtracking for EVIL in Python's re


def instance_with(checker_id: str, kwargs: dict) -> dict:
    record = json.loads(SAMPLE.read_text(encoding="utf-8").splitlines()[0])
    record["constraints"].append({"id": "hostile", "text": "Cite your sources.", "category": "knowledge_protocol",
                                  "sub_dimension": "citation", "judge_method": "rule", "checker_id": checker_id,
                                  "checker_kwargs": kwargs})
    return record


@pytest.mark.parametrize("checker_id, kwargs, field", [
    pytest.param("enterprise:citation_count", {"pattern": "([unclosed"}, "pattern", id="citation-pattern"),
    pytest.param("keywords:existence", {"keywords": ["fine", "a)b"]}, "keywords", id="keywords-existence"),
    pytest.param("keywords:frequency", {"keyword": "*x", "frequency": 1, "relation": "at least"}, "keyword",
                 id="keywords-frequency"),
    pytest.param("keywords:forbidden_words", {"forbidden_words": ["(?<bad"]}, "forbidden_words",
                 id="forbidden-words"),
    pytest.param("detectable_content:postscript", {"postscript_marker": "P.S.["}, "postscript_marker",
                 id="postscript-marker"),
    pytest.param("detectable_format:multiple_sections", {"section_spliter": "Section(", "num_sections": 2},
                 "section_spliter", id="section-splitter"),
])
def test_validate_rejects_a_regex_that_does_not_compile(checker_id, kwargs, field):
    report = validate_lines((json.dumps(instance_with(checker_id, kwargs)) + "\n").encode())
    assert not report.ok and not report.instances
    messages = [str(error) for error in report.errors]
    assert any(f"checker_kwargs.{field}" in m and "not a valid regex" in m for m in messages), messages


def test_a_runaway_regex_is_stopped_at_the_time_limit(monkeypatch):
    monkeypatch.setenv("GAUNTLET_REGEX_TIME_LIMIT_S", "0.3")
    checker = build_checker("enterprise:citation_count", {"pattern": EVIL})
    started = time.monotonic()
    with pytest.raises(RegexTimeout, match="ran over the 0.3 s limit"):
        checker.check(REPLY)
    assert time.monotonic() - started < 2


def test_score_finishes_with_a_checker_error_instead_of_hanging(engine, db_url, monkeypatch, tmp_path):
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    path = tmp_path / "hostile.jsonl"
    path.write_text(json.dumps(instance_with("enterprise:citation_count", {"pattern": EVIL})) + "\n", encoding="utf-8")
    report = import_file(engine, path)
    assert report.ok, report.errors
    add_model(engine, "gpt-x", "openai")
    with FakeLLMServer([ScriptRule(match="", reply=REPLY)]) as server:
        point_sdks_at(monkeypatch, server)
        run_id = runs.create_run(engine, runs.RunOptions(models=["gpt-x"]))
        assert asyncio.run(runner.execute_run(engine, run_id)).status == "done"
    env = {"GAUNTLET_DATABASE_URL": db_url, "GAUNTLET_REGEX_TIME_LIMIT_S": "0.5",
           "GAUNTLET_SECRETS_FILE": str(tmp_path / "none.toml"), "PATH": "/usr/bin:/bin"}
    started = time.monotonic()
    scored = subprocess.run(gauntlet("score", str(run_id), "--judge", "heuristic"), cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    seconds = time.monotonic() - started
    with Session(engine) as session:
        hostile = session.exec(select(Constraint.id).where(Constraint.cid == "hostile")).one()
        verdict = session.exec(select(Verdict).where(Verdict.constraint_id == hostile)).one()
    figure(f"hostile regex: gauntlet score exited {scored.returncode} in {seconds:.1f} s (limit 0.5 s); verdict "
           f"{verdict.status}: {verdict.reason}")
    assert scored.returncode == 0, scored.stdout + scored.stderr
    assert verdict.status == "error" and verdict.passed is None
    assert "RegexTimeout" in verdict.reason and "ran over the 0.5 s limit" in verdict.reason
    assert "judge errors (excluded from denominators): {'constraint': 1}" in scored.stdout
