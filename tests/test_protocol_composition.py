"""Each protocol's own composition (Browse benchmark and `gauntlet stats`), never mode shares mixed across protocols or
0.000-constraint rows, and a named benchmark set for every CLI import (issue 28 item 6)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine
from streamlit.testing.v1 import AppTest
from typer.testing import CliRunner

from core.cli import app
from core.ingest.composition import protocol_composition
from core.ingest.sets import benchmark_sets
from core.protocols.enterprise_rag.composition import composition
from tests.pages.signin import sign_in

FIXTURES = Path(__file__).resolve().parent / "fixtures"
REPO = Path(__file__).resolve().parents[1]
MINI, CRAG = FIXTURES / "mini.jsonl", FIXTURES / "importers" / "crag.jsonl"


def invoke(*args: str):
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture
def mixed(db_url):
    """The EnterpriseRAG mini set and a CRAG import (reference QA) in one database."""
    invoke("import", str(MINI))
    invoke("import", str(CRAG), "--format", "crag", "--set", "CRAG sample")
    return db_url


def test_enterprise_tables_count_only_enterprise_instances(mixed):
    table5, table6 = composition(create_engine(mixed))
    assert table5[-1].instances == 4 and sum(m.count for m in table6) == 4
    assert sum(m.ratio for m in table6) == pytest.approx(1.0, abs=0.002)
    assert all(r.avg_constraints > 0 for r in table5)


def test_each_protocol_has_its_own_composition_the_default_first(mixed):
    enterprise, crag = protocol_composition(create_engine(mixed))
    assert enterprise.instances == 4 and not enterprise.rows
    assert [t.key for t in enterprise.tables] == ["domain", "mode"]
    assert enterprise.tables[0].rows[-1]["domain"] == "All" and enterprise.tables[0].rows[-1]["instances"] == 4
    assert crag.protocol == "reference_qa" and crag.instances > 0
    types = [r for r in crag.rows if r.facet == "question type"]
    assert sum(r.count for r in types) == crag.instances and sum(r.share for r in types) == pytest.approx(1.0, abs=0.01)


def test_stats_prints_each_protocol_apart(mixed):
    out = invoke("stats").output
    assert "reference_qa (" in out and "question type" in out and "0.00      0.00" not in out
    assert "Table 5: per domain" in out and "Table 6: per mode" in out and "avg_constraints" in out


@pytest.mark.parametrize(("args", "name"), [
    pytest.param((str(MINI),), "mini (jsonl)", id="default-name-from-file-and-format"),
    pytest.param((str(MINI), "--set", "My set"), "My set", id="named-with-set"),
    pytest.param((str(CRAG), "--format", "crag"), "crag (crag)", id="public-format"),
])
def test_every_import_creates_a_named_set(db_url, args, name):
    assert f"benchmark set {name!r}" in invoke("import", *args).output
    sets = benchmark_sets(create_engine(db_url))
    assert [s.name for s in sets] == [name] and sets[0].instances > 0


def test_browse_shows_each_protocol_and_offers_the_sets(mixed, monkeypatch):
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", mixed)
    at = sign_in(AppTest.from_file(str(REPO / "pages" / "browse_benchmark.py"), default_timeout=60), "analyst").run()
    assert not at.exception, at.exception
    titles = [m.value for m in at.markdown if m.value.startswith("**")]
    assert titles[0].startswith("**EnterpriseRAG** · 4 instances") and any("4 instances" not in t for t in titles[1:])
    assert "enterprise" not in (REPO / "pages" / "browse_benchmark.py").read_text(encoding="utf-8").lower()
    modes = at.dataframe[1].value
    assert modes["count"].sum() == 4
    offered = at.selectbox(key="browse_set").options
    assert offered[0] == "all sets" and {o.split(" (import")[0] for o in offered[1:]} == {"mini (jsonl)", "CRAG sample"}
