"""The `gauntlet` pytest fixture: a team's test runs a small benchmark set against a baseline and a candidate model
configuration and asserts through the gate, e.g.

    def test_rag(gauntlet):
        outcome = gauntlet.gate("bench.jsonl", baseline=BASELINE, candidate=CANDIDATE, rules="gauntlet-gate.yaml")
        assert outcome.passed, outcome.markdown

Each test gets its own SQLite database under tmp_path (set GAUNTLET_DATABASE_URL to share a cache of paid calls).
Registered as a pytest11 entry point, so installing the product provides the fixture.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml


@dataclass(frozen=True)
class GateOutcome:
    """The gate's exit code, verdict, Markdown summary and JSON document."""

    code: int
    verdict: str
    markdown: str
    document: dict[str, Any]

    @property
    def passed(self) -> bool:
        """True when the gate passed (exit 0)."""
        return self.code == 0


class Gauntlet:
    """Runs the CLI in-process on a private database: import, register, run and score both models, gate."""

    def __init__(self, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.workdir = workdir
        if not os.environ.get("GAUNTLET_DATABASE_URL"):
            monkeypatch.setenv("GAUNTLET_DATABASE_URL", f"sqlite:///{workdir / 'gauntlet.db'}")

    def cli(self, *args: str) -> str:
        """Invoke `gauntlet ARGS` in-process; a non-zero exit other than the gate's raises with the output."""
        from typer.testing import CliRunner

        from core.cli import app

        result = CliRunner().invoke(app, list(args))
        if result.exit_code != 0:
            raise RuntimeError(f"gauntlet {' '.join(args)} exited {result.exit_code}:\n{result.output}")
        return result.output

    def run(self, model: str, domains: list[str], judge: str, repeats: int) -> int:
        """Run and score one registered model on the domains; the run id."""
        out = self.cli("run", "--models", model, "--domains", ",".join(domains), "--judge", judge,
                       "--repeats", str(repeats), "--quiet")
        created = re.search(r"^run (\d+) created$", out, re.M)
        if created is None:
            raise RuntimeError(f"gauntlet run printed no run id:\n{out}")
        return int(created.group(1))

    def gate(self, benchmark: str | Path, *, baseline: dict, candidate: dict, rules: str | Path | dict,
             judge: str = "heuristic", repeats: int = 1) -> GateOutcome:
        """Run the benchmark set with both model configurations and gate the candidate against the baseline."""
        from typer.testing import CliRunner

        from core.cli import app
        from core.commands.gate import model_args

        if isinstance(rules, dict):
            path = self.workdir / "gauntlet-gate.yaml"
            path.write_text(yaml.safe_dump(rules), encoding="utf-8")
            rules = path
        domains = sorted({json.loads(line)["domain"] for line in Path(benchmark).read_text(encoding="utf-8")
                          .splitlines() if line.strip()})
        self.cli("init-db")
        self.cli("import", str(benchmark))
        for config in (baseline, candidate):
            self.cli("models", "add", *model_args(config))
        base, cand = (self.run(c["name"], domains, judge, repeats) for c in (baseline, candidate))
        md, js = self.workdir / "gate.md", self.workdir / "gate.json"
        result = CliRunner().invoke(app, ["gate", str(base), str(cand), "--rules", str(rules), "--judge", judge,
                                          "--markdown", str(md), "--json", str(js)])
        if not js.exists():
            raise RuntimeError(f"gauntlet gate wrote no verdict (exit {result.exit_code}):\n{result.output}")
        document = json.loads(js.read_text(encoding="utf-8"))
        return GateOutcome(result.exit_code, document["verdict"], md.read_text(encoding="utf-8"), document)


@pytest.fixture
def gauntlet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Gauntlet:
    """A Gauntlet on a private database under tmp_path: gauntlet.gate(benchmark, baseline=..., candidate=..., rules=...)."""
    return Gauntlet(tmp_path, monkeypatch)
