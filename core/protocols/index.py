"""The docs index of the protocols (docs/protocols.md), derived from the registry: one row per protocol with its
package, conditions, metrics, command, page and documentation. Regenerate: `python -m core.protocols.index`."""

from __future__ import annotations

import sys
from pathlib import Path

from core import plugins
from core.protocols import PACKAGE_OF, PROTOCOLS

INDEX_FILE = Path(__file__).resolve().parents[2] / "docs" / "protocols.md"
HEADER = """# Protocols

Generated from the protocol registry by `python -m core.protocols.index` (tests/test_protocol_registry.py checks it is
current). Each protocol is one package, `core/protocols/<id>/`; `docs/architecture.md` explains the layout and how to
add one.

| id | title | package | conditions | metrics | command | pages | docs |
|---|---|---|---|---|---|---|---|
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|") or "-"


def index_row(name: str) -> str:
    """One protocol's row of the index."""
    protocol, package = PROTOCOLS.get(name), PACKAGE_OF[name]
    command = plugins.command_of(package)
    cells = [f"`{name}`", protocol.title, f"`{package}`", str(len(protocol.conditions)),
             ", ".join(f"`{m}`" for m in protocol.metrics), f"`gauntlet {command[0]}`" if command else "",
             ", ".join(page.title for page in protocol.declared_pages()), f"[{Path(protocol.doc).name}]({Path(protocol.doc).name})"
             if protocol.doc else ""]
    return "| " + " | ".join(_cell(c) for c in cells) + " |\n"


def docs_index(builtin_only: bool = False) -> str:
    """The whole docs/protocols.md of the registered protocols, by id."""
    return HEADER + "".join(index_row(name) for name in PROTOCOLS.names()
                            if not builtin_only or PACKAGE_OF.get(name) in plugins.builtin_packages())


if __name__ == "__main__":
    INDEX_FILE.write_text(docs_index(builtin_only=True), encoding="utf-8")
    sys.stdout.write(f"wrote {INDEX_FILE}\n")
