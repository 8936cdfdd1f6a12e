"""Issue 44's protocol packages joined the documented way (docs/architecture.md, "How to add a protocol"): each is
discovered inside core/protocols from its own package (no register_package, no edit elsewhere), lists its page view
and builder, declares its decision metrics with a headline one carrying a meaning, is in the docs index, and has a
docs page with a "How it differs from its source" table."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import plugins
from core.config import REPO_ROOT
from core.protocols import PACKAGE_OF, PROTOCOLS, decision_metrics
from core.protocols.index import docs_index

NEW = ["injection", "conversation", "citation", "long_context"]


@pytest.mark.parametrize("name", NEW)
def test_joined_by_the_documented_path(name: str) -> None:
    package = f"core.protocols.{name}"
    assert PACKAGE_OF[name] == package and package in plugins.builtin_packages()
    protocol = PROTOCOLS.get(name)
    assert protocol.page_views and protocol.builder is not None
    assert (name.replace("_", "-"), f"{package}.command") in [(c, m) for c, m, _ in plugins.protocol_commands()]
    rows = decision_metrics(name)
    assert [r for r in rows if r.role == "headline"] and all(r.meaning for r in rows)
    assert f"| `{name}` |" in docs_index() and f"| `{name}` |" in Path(REPO_ROOT, "docs", "protocols.md").read_text()


@pytest.mark.parametrize("name", NEW)
def test_its_docs_page_says_how_it_differs(name: str) -> None:
    doc = Path(REPO_ROOT, PROTOCOLS.get(name).doc)
    text = doc.read_text(encoding="utf-8")
    table = text.split("## How it differs from its source", 1)[1]
    assert table.count("\n|") >= 4, f"{doc.name}: the section holds no table"


def test_one_run_holding_all_four_and_enterprise_rag_reports_a_headline_metric_of_each(
        session_url_factory, tmp_path, monkeypatch) -> None:
    """One run over EnterpriseRAG's fixture and the four protocols' instances, answered by one scripted model over
    the openai SDK: `gauntlet report` has a section for each protocol holding at least one of its headline metrics
    with a value or a counted state, which is what a decision across protocols reads (decision_metrics)."""
    import asyncio
    import json

    from typer.testing import CliRunner

    from core.cli import app
    from core.generation import runner, runs
    from core.generation.ratelimit import ManualClock
    from core.ingest.io import import_file
    from core.pipeline import score_and_summarise
    from core.protocols.citation.builder import build as citation_build
    from core.protocols.conversation.builder import build as conversation_build
    from core.protocols.injection.builder import build as injection_build
    from core.protocols.long_context.builder import build as long_build
    from core.store.db import make_engine
    from core.testing.fake_server import ScriptRule
    from tests.factories import scripted_models
    from tests.long_context.test_long_context import lara_copy

    fixtures = Path(REPO_ROOT, "tests", "fixtures")
    files = [fixtures / "mini.jsonl",
             injection_build(fixtures / "injection" / "qa.jsonl", tmp_path / "inj", fmt="qa").out,
             conversation_build(fixtures / "conversation" / "turns.jsonl", tmp_path / "conv", fmt="turns").out,
             citation_build(fixtures / "citation" / "records.jsonl", tmp_path / "cite", fmt="records").out,
             long_build(lara_copy(tmp_path / "lara"), tmp_path / "lc").out]
    url = session_url_factory()
    engine = make_engine(url)
    for path in files:
        assert import_file(engine, path).created
    domains = ["Energy", "Legal", "Injection", "Conversations", "Citations", "LaRA book"]
    with scripted_models(engine, {"all-in-one": [ScriptRule(match="", reply="It is 90 days [1].")]}, 128):
        run_id = runs.create_run(engine, runs.RunOptions(models=["all-in-one"], domains=domains))
        assert asyncio.run(runner.execute_run(engine, run_id, clock=ManualClock())).failed == 0
        asyncio.run(score_and_summarise(engine, run_id, ["heuristic"]))
    engine.dispose()
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", url)
    result = CliRunner().invoke(app, ["report", str(run_id), "--format", "json"])
    assert result.exit_code == 0, result.output
    sections = json.loads(result.stdout)["protocols"]
    for protocol in ("enterprise_rag", *NEW):
        headline = {r.id for r in decision_metrics(protocol) if r.role == "headline"}
        rows = [r for r in sections.get(protocol, {}).get("metrics", []) if r["metric"] in headline]
        assert rows, f"{protocol}: no headline metric in the report ({sorted(sections)})"
