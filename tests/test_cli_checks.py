"""`gauntlet ifeval` and `gauntlet checkers` through the Typer app."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from core.cli import app

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "ifeval"


def test_ifeval_command_prints_report_and_writes_verdicts(tmp_path) -> None:
    assert SHARED.is_dir(), f"shared IFEval files not found at {SHARED}"
    rows = [json.loads(x) for x in (SHARED / "input_data.jsonl").read_text().splitlines()[:20]]
    responses = [json.loads(x) for x in (SHARED / "input_response_data_gpt4.jsonl").read_text().splitlines()]
    by_prompt = {r["prompt"]: r for r in responses}
    inputs, outputs = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    inputs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    outputs.write_text("".join(json.dumps(by_prompt[r["prompt"]]) + "\n" for r in rows))
    verdicts = tmp_path / "verdicts.jsonl"
    result = CliRunner().invoke(
        app, ["ifeval", "--input-data", str(inputs), "--responses", str(outputs), "--verdicts-out", str(verdicts)]
    )
    assert result.exit_code == 0, result.output
    assert "prompt-level accuracy" in result.output and "instruction-level accuracy" in result.output
    written = [json.loads(x) for x in verdicts.read_text().splitlines()]
    assert [w["key"] for w in written] == [r["key"] for r in rows]
    assert all(len(w["strict"]) == len(w["instruction_id_list"]) == len(w["loose"]) for w in written)


def test_checkers_command_lists_ifeval_and_enterprise_ids() -> None:
    result = CliRunner().invoke(app, ["checkers"])
    assert result.exit_code == 0
    assert "detectable_format:number_bullet_lists" in result.output and "enterprise:citation_count" in result.output
