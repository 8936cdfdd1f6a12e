"""The protocol registry discovers the packages of core/protocols/ and everything protocol-specific is derived from it:
the CLI's protocol commands, the app's navigation, the permission table and the docs index (docs/protocols.md)."""

from __future__ import annotations

import pytest

from core import plugins
from core.cli import all_commands
from core.permissions import AUDIENCES, PAGE_ROLES, RESULTS_READERS, add_page
from core.protocols import PACKAGE_OF, PROTOCOLS, get_protocol, page_protocol, register, register_package
from core.protocols.index import INDEX_FILE, docs_index
from core.registry import UnknownNameError
from ui.navigation import all_pages

PACKAGES = [pytest.param(name, id=name.rpartition(".")[2]) for name in plugins.builtin_packages()]
# (protocol, its page script, page title, its CLI command)
DERIVED = [
    pytest.param("kb_corruption", "pages/stress_tests.py", "Stress tests", "kb-corruption", id="kb_corruption"),
    pytest.param("misleading_evidence", "pages/misleading_evidence.py", "Misleading evidence", "misleading-evidence",
                 id="misleading_evidence"),
    pytest.param("domainrag", "pages/domain_abilities.py", "Domain abilities", "domainrag", id="domainrag"),
    pytest.param("lit_ragbench", "pages/rag_abilities.py", "RAG abilities", "lit-ragbench", id="lit_ragbench"),
]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_package_of_core_protocols_registers_its_protocol(package: str) -> None:
    [name] = [n for n, owner in PACKAGE_OF.items() if owner == package]
    assert name == package.rpartition(".")[2] and name in PROTOCOLS


def test_every_registered_protocol_comes_from_a_package() -> None:
    assert sorted(PACKAGE_OF) == PROTOCOLS.names()


@pytest.mark.parametrize(("protocol", "path", "title", "command"), DERIVED)
def test_page_and_permissions_come_from_the_declaration(protocol: str, path: str, title: str, command: str) -> None:
    page = get_protocol(protocol).page
    assert page is not None and (page.path, page.title) == (path, title)
    assert PAGE_ROLES[path] == AUDIENCES[page.audience] == RESULTS_READERS
    assert [(p.title, p.section) for p in all_pages() if p.path == path] == [(title, "Results")]


@pytest.mark.parametrize(("protocol", "path", "title", "command"), DERIVED)
def test_cli_command_comes_from_the_package(protocol: str, path: str, title: str, command: str) -> None:
    module = f"{PACKAGE_OF[protocol]}.command"
    assert [row[:2] for row in all_commands() if row[1] == module] == [(command, module)]


DUPLICATES = [
    pytest.param(lambda: register(get_protocol("kb_corruption")), "duplicate protocol name 'kb_corruption'",
                 id="protocol-registered-twice"),
    pytest.param(lambda: register_package("core.protocols.domainrag"), "registered already", id="package-twice"),
    pytest.param(lambda: add_page("pages/stress_tests.py", "results"), "in the permission table already",
                 id="page-twice"),
    pytest.param(lambda: add_page("pages/new.py", "public"), "unknown page audience 'public'", id="unknown-audience"),
]


@pytest.mark.parametrize(("action", "message"), DUPLICATES)
def test_registering_twice_raises(action, message: str) -> None:
    before = (PROTOCOLS.names(), dict(PAGE_ROLES), list(plugins.EXTRA_PACKAGES))
    with pytest.raises(ValueError, match=message):
        action()
    assert (PROTOCOLS.names(), dict(PAGE_ROLES), list(plugins.EXTRA_PACKAGES)) == before


def test_docs_index_is_current() -> None:
    assert INDEX_FILE.read_text(encoding="utf-8") == docs_index(builtin_only=True), "run: python -m core.protocols.index"


@pytest.mark.parametrize(("protocol", "path", "title", "command"), DERIVED)
def test_docs_index_lists_command_and_page(protocol: str, path: str, title: str, command: str) -> None:
    [row] = [line for line in docs_index().splitlines() if line.startswith(f"| `{protocol}` |")]
    assert f"`gauntlet {command}`" in row and f"| {title} |" in row


ENTERPRISE_PAGES = [  # (page script, title): EnterpriseRAG's own figure pages, from its declaration
    pytest.param("pages/domains.py", "Domains", id="domains"),
    pytest.param("pages/constraint_errors.py", "Constraint errors", id="constraint_errors"),
    pytest.param("pages/robustness.py", "Robustness", id="robustness"),
    pytest.param("pages/model_pairs.py", "Model pairs", id="model_pairs"),
    pytest.param("pages/data_quality.py", "Data quality", id="data_quality"),
]


@pytest.mark.parametrize(("path", "title"), ENTERPRISE_PAGES)
def test_enterprise_pages_come_from_its_declaration(path: str, title: str) -> None:
    assert page_protocol(path) == page_protocol(f"/somewhere/else/{path}") == "enterprise_rag"
    assert [(p.path, p.title) for p in get_protocol("enterprise_rag").pages if p.path == path] == [(path, title)]
    assert PAGE_ROLES[path] == RESULTS_READERS
    assert [(p.title, p.section) for p in all_pages() if p.path == path] == [(title, "Results")]


def test_a_page_no_protocol_declares_names_the_declared_ones() -> None:
    with pytest.raises(UnknownNameError, match="unknown protocol page 'leaderboard.py'.*domains.py"):
        page_protocol("pages/leaderboard.py")


def test_modes_for_a_metric_it_does_not_declare_are_refused() -> None:
    from dataclasses import replace

    from core.protocols.base import MetricModes

    made_up = replace(get_protocol("enterprise_rag"), name="modes_toy",
                      metric_modes=(MetricModes("faithfulnes", ("noisy",)),), pages=())
    with pytest.raises(UnknownNameError, match="modes to a metric it does not declare.*did you mean: faithfulness"):
        register(made_up)
    assert "modes_toy" not in PROTOCOLS


MODE_SCOPES = [  # (protocol, metric, the ',modes,' the summaries expect a verdict in; '' = every mode or NA outside)
    pytest.param("enterprise_rag", "rejection", ",gap,", id="rejection-gap-only"),
    pytest.param("enterprise_rag", "refusal", ",noisy,", id="refusal-noisy-only"),
    pytest.param("enterprise_rag", "coverage", "", id="coverage-not-applicable-outside"),
    pytest.param("enterprise_rag", "faithfulness", ",noisy,gap,conflict,", id="faithfulness-every-mode"),
    pytest.param("production_rag", "faithfulness", "", id="no-modes-declared"),
]


@pytest.mark.parametrize(("protocol", "metric", "modes"), MODE_SCOPES)
def test_summaries_read_the_declared_metric_modes(protocol: str, metric: str, modes: str) -> None:
    from core.scoring.summaries import _computed_modes

    assert _computed_modes(protocol, metric) == modes
