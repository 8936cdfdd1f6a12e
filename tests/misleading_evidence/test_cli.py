"""`gauntlet misleading-evidence build` writes importable instances and lists the skipped items; `report` reads the runs."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from core.cli import app
from tests.misleading_evidence.conftest import DATA, SLICES

# One xdist worker builds the session-scoped fixture these modules share (built once, not once per worker)
pytestmark = pytest.mark.xdist_group("misleading_evidence-calibration")


@pytest.mark.parametrize("name", ["hotpotqa", "medqa-zh"])
def test_build_writes_importable_instances_and_lists_skipped(name, tmp_path, db_url) -> None:
    fmt, relative = SLICES[name]
    out = tmp_path / "stress.jsonl"
    result = CliRunner().invoke(app, ["misleading-evidence", "build", str(DATA / relative), "--format", fmt, "--out", str(out),
                                      "--limit", "30", "--seed", "1"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout[:result.stdout.rindex("}") + 1])
    lines = out.read_text(encoding="utf-8").splitlines()
    skipped = [json.loads(x) for x in (tmp_path / "stress.skipped.jsonl").read_text(encoding="utf-8").splitlines()]
    assert summary["items"] == 30 and summary["built"] == len(lines) and summary["skipped"] == len(skipped)
    assert len(lines) + len(skipped) == 30 and all(s["reason"] for s in skipped)
    assert CliRunner().invoke(app, ["validate", str(out)]).exit_code == 0
    imported = CliRunner().invoke(app, ["import", str(out)])
    assert imported.exit_code == 0 and f"imported {len(lines)} new" in imported.output


def test_build_rejects_unknown_format(tmp_path) -> None:
    result = CliRunner().invoke(app, ["misleading-evidence", "build", "x.jsonl", "--format", "mmlu", "--out",
                                      str(tmp_path / "o.jsonl")])
    assert result.exit_code != 0 and "format must be one of hotpotqa, medqa" in result.output


def test_report_json(calibration, monkeypatch) -> None:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", calibration.url)
    result = CliRunner().invoke(app, ["misleading-evidence", "report", str(calibration.run_id), "--audit-a", "ckpt-a",
                                      "--audit-b", "ckpt-b", "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["judge_label"] == "heuristic (lexical, offline)"
    follower = [r for r in doc["misleading_rate"] if r["model"] == "follower" and r["policy"] == "documents"]
    assert [r["mr"] for r in follower] == [1.0] * 9  # 3 positions in each of the 3 datasets
    assert {r["dataset"] for r in follower} == {"HotpotQA (en)", "MedQA (en)", "MedQA (zh)"}
    gap = [r for r in doc["mean_over_models"] if r["measure"] == "policy_gap"]
    assert [r["mean"] for r in gap] == [0.0, 0.0, 0.0]  # no scripted model tells the policies apart
    assert {r["outcome"] for r in doc["audit"]} == {"harmful override", "beneficial correction"}
    table = CliRunner().invoke(app, ["misleading-evidence", "report", str(calibration.run_id)]).output
    assert "judge: heuristic (lexical, offline)" in table and "misleading_rate" in table
