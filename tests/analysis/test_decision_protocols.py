"""One decision across protocols, on the real thing: the bundled EnterpriseRAG sample, a RAGStress slice of the shared
MMLU selection and a DomainRAG slice of the shared release, answered by two scripted models on loopback fake servers
(through the real OpenAI SDK) and the calibration baselines, scored by the heuristic judge. `gauntlet decide` over the
three runs recommends citing metrics of all three protocols, the page's download is the same file (same content
hash), a rules file with a named preset decides on that preset's metrics, and every number of the report equals the
read model's to 1e-12."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from streamlit.runtime.memory_media_file_storage import _calculate_file_id
from typer.testing import CliRunner

from core.analysis import decision, decision_report, picker
from core.analysis.readmodel import decision_scores as keys
from core.cli import app as cli
from core.store.db import make_engine
from tests.analysis.decision_world import HEURISTIC, READER, three_protocol_runs
from tests.analysis.test_decision_report import _same, expected_numbers
from tests.pages.test_dashboards import page_as

# One xdist worker runs this module: its expensive module-scoped fixtures are built once, not once per worker
pytestmark = pytest.mark.xdist_group("decision-protocols")

PROTOCOL_TITLES = ("EnterpriseRAG", "RAGStress (knowledge-base corruption)", "DomainRAG (domain abilities)")


@dataclass(frozen=True)
class World:
    url: str
    run_ids: tuple[int, ...]


@pytest.fixture(scope="module")
def world(tmp_path_factory, session_url_factory) -> World:
    """Three runs, one per protocol, of the same four models (tests/analysis/decision_world.py)."""
    url = session_url_factory()
    return World(url, three_protocol_runs(url, tmp_path_factory.mktemp("three_protocols")))


def _decide(world: World, tmp_path: Path, monkeypatch, *args: str) -> tuple[str, str]:
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    out = tmp_path / "decision.html"
    result = CliRunner().invoke(cli, ["decide", *map(str, world.run_ids), "--out", str(out), *args])
    assert result.exit_code == 0, result.output
    return out.read_text(encoding="utf-8"), result.output


@pytest.fixture(scope="module")
def default_decision(world, tmp_path_factory) -> tuple[str, str]:
    """`gauntlet decide` over the three runs with its defaults, run once: (the file, the CLI's output), read by the
    recommendation test and the page-download test."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        return _decide(world, tmp_path_factory.mktemp("default_decision"), monkeypatch)


def test_the_default_recommends_citing_three_protocols(default_decision) -> None:
    document, output = default_decision
    assert f"Recommended generator: {READER}." in output, output
    cited = [t for t in PROTOCOL_TITLES if f"<h3>{t}</h3>" in document]
    assert cited == list(PROTOCOL_TITLES), cited
    measured = {keys.split_key(k.split("|")[1])[0] for k, v in decision_report.numbers(document).items()
                if k.startswith("evidence|") and k.endswith(f"|{READER}|n") and v > 0}
    assert measured == {"enterprise_rag", "kb_corruption", "domainrag"}, measured


def test_every_number_equals_the_read_model_across_protocols(world) -> None:
    engine = make_engine(world.url)
    every = keys.decision_scores(engine, world.run_ids, HEURISTIC)
    spec = picker.default_spec(every)
    document = decision_report.render_html(decision.decide(engine, world.run_ids, HEURISTIC, spec))
    shown, expected = decision_report.numbers(document), expected_numbers(engine, spec, world.run_ids, HEURISTIC)
    assert set(shown) == set(expected), (sorted(set(shown) - set(expected))[:5], sorted(set(expected) - set(shown))[:5])
    wrong = {k: (shown[k], expected[k]) for k in expected if not _same(shown[k], expected[k])}
    assert not wrong, list(wrong.items())[:5]
    protocols = {k.split("|")[1].partition(":")[0] for k in shown if k.startswith("evidence|") and ":" in k}
    assert {"domainrag", "kb_corruption"} <= protocols
    assert shown["family|tests"] > 0


def test_a_rules_file_with_a_preset_decides_on_its_metrics(world, tmp_path, monkeypatch) -> None:
    rules = tmp_path / "decide.yaml"
    rules.write_text("preset: robustness first\nweights:\n  kb_corruption:corruption_delta: 1\n"
                     "  kb_corruption:mcq_accuracy: 2\n  domainrag:exact_match: 1\nquestion: Which model resists bad "
                     "sources?\n", encoding="utf-8")
    document, _ = _decide(world, tmp_path, monkeypatch, "--rules", str(rules))
    weights = {k.removeprefix("weight|"): v for k, v in decision_report.numbers(document).items()
               if k.startswith("weight|")}
    assert weights == {"kb_corruption:corruption_delta": 1.0, "kb_corruption:mcq_accuracy": 2.0,
                       "domainrag:exact_match": 1.0}
    assert "Which model resists bad sources?" in document


@pytest.mark.parametrize(("text", "message"), [
    pytest.param("weights:\n  kb_corruption:delta: 1\n", "kb_corruption:corruption_delta", id="close-match-named"),
    pytest.param("preset: fastest\n", "unknown preset 'fastest'", id="unknown-preset"),
    pytest.param("weight: {}\n", "unknown rules key(s) weight", id="unknown-key"),
])
def test_a_bad_rules_file_is_a_usage_error_naming_the_entry(world, tmp_path, monkeypatch, text, message) -> None:
    rules = tmp_path / "bad.yaml"
    rules.write_text(text, encoding="utf-8")
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    result = CliRunner().invoke(cli, ["decide", *map(str, world.run_ids), "--out", str(tmp_path / "x.html"),
                                      "--rules", str(rules)])
    assert result.exit_code == 2 and message in result.output


def test_the_page_download_has_the_cli_files_content_hash(world, default_decision, monkeypatch) -> None:
    document, _ = default_decision
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", world.url)
    monkeypatch.setenv("GAUNTLET_FIRST_START", "0")
    at = page_as("pick_generator", "analyst").run()
    assert not at.exception, at.exception
    at.multiselect(key="results_runs_w").set_value(list(world.run_ids)).run()
    assert not at.exception, at.exception
    assert any(f"pk_w_{k}" in at.session_state for k in ("domainrag:exact_match", "kb_corruption:mcq_accuracy"))
    at.button(key="pk_decide").click().run()
    assert not at.exception, at.exception
    url = {b.proto.label: b.proto.url for b in at.get("download_button")}["Download decision report (HTML)"]
    expected = _calculate_file_id(document.encode("utf-8"), "text/html", "decision_report.html")
    assert url.rsplit("/", 1)[-1].split(".")[0] == expected


def test_the_documented_rules_file_is_valid_as_written(tmp_path) -> None:
    """The rules example of docs/decision.md parses, every metric of it known to the registered protocols."""
    from core.analysis import decide_rules
    from core.analysis.gate import read_yaml
    from core.config import REPO_ROOT

    text = (REPO_ROOT / "docs" / "decision.md").read_text(encoding="utf-8")
    block = text.split("--rules decide.yaml`)", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "decide.yaml"
    path.write_text(block, encoding="utf-8")
    rules = decide_rules.parse_rules(read_yaml(path))
    assert rules.preset == "robustness first" and rules.weights == {
        "misleading_evidence:misleading_rate": 2.0, "kb_corruption:corruption_delta": 2.0, "rejection": 1.0}
    assert (rules.floors, rules.budget_per_1k) == ({"rejection": 0.4}, 5.0)
