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
