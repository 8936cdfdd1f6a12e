"""Layers without cycles: no import cycle between core/ subpackages, nor between single modules of core/, ui/ and
pages/, counting imports made inside functions.

Nodes are core's subpackages (core.store, core.scoring, ...) and its top-level modules (core.config, core.cli, ...).
An edge A -> B is any `import` / `from ... import` in a file of A naming a module of B, wherever it sits in the file
(imports under `if TYPE_CHECKING:` are type hints only and left out). A cycle is a strongly connected component of
more than one node; the failure lists the edges inside it with the file:line of every import that makes them.
At module scale the nodes are modules: `from p import x` is an edge to p.x when that is a module, else to p (a
package's __init__), and `import a.b` an edge to a.b.
The layer order is the ```layers block of docs/layers.md: an edge to a higher row, or to a package it does not
place, fails with its file:line too.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

from tests.test_layering import _runtime_nodes

REPO = Path(__file__).resolve().parents[1]
Edges = dict[tuple[str, str], list[str]]


def module_name(path: Path, root: Path) -> str:
    """Dotted module name of a .py file under `root` (a package's __init__ names the package)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


# A protocol package is a vertical slice (docs/layers.md): its declaration sits in core.protocols, and each of its
# job modules in the layer of that job (`<job>.py`, or `<job>_<part>.py` for a part of a job split off).
PROTOCOL_PARTS = {"builder": "core.construction", "analysis": "core.analysis", "command": "core.commands",
                  "views": "core.analysis", "paper": "core.analysis", "metrics": "core.scoring", "judge": "core.scoring",
                  "checkers": "core.scoring"}

FRAMEWORK = {"core.protocols.paper"}  # the paper-table model every protocol declares with: core.protocols itself


def split_off_job(parts: list[str]) -> str:
    """The job of a module split off a job module (`builder_passages.py`: builder), '' for any other name (a name
    imported from a module, such as `paper_prompt`, is no module file)."""
    job = parts[-1].split("_", 1)[0]
    return job if (REPO / Path(*parts)).with_suffix(".py").is_file() else ""


def layer(module: str) -> str | None:
    """The graph node a core module belongs to: `core.<first part>` (a protocol package's job module: its job's
    layer), or None outside core / for core itself."""
    parts = module.split(".")
    job = parts[-1] if parts[-1] in PROTOCOL_PARTS else split_off_job(parts)
    if parts[:2] == ["core", "protocols"] and len(parts) > 2 and job in PROTOCOL_PARTS and module not in FRAMEWORK:
        return PROTOCOL_PARTS[job]
    return f"core.{parts[1]}" if parts[0] == "core" and len(parts) > 1 else None


def imported_modules(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """Absolute names of the modules an import statement loads (`from p import x` counts p.x as well as p)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = module if is_package else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        base = base.rpartition(".")[0]
    target = ".".join(p for p in (base if node.level else "", node.module or "") if p)
    return [target, *(f"{target}.{alias.name}" for alias in node.names)]


def import_edges(sources: dict[str, tuple[str, bool, str]]) -> Edges:
    """Edges between layers with where they come from; `sources` maps file label -> (module, is_package, code)."""
    edges: Edges = defaultdict(list)
    for label, (module, is_package, code) in sources.items():
        here = layer(module)
        for node in _runtime_nodes(ast.parse(code)):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            targets = {layer(name) for name in imported_modules(node, module, is_package)}
            for there in sorted(t for t in targets if t and here and t != here):
                edges[(here, there)].append(f"{label}:{node.lineno}")
    return dict(edges)


def cycles(edges: Edges) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan), each sorted, sorted by first node."""
    graph: dict[str, list[str]] = defaultdict(list)
    for a, b in edges:
        graph[a].append(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted({n for edge in edges for n in edge}):
        if node not in index:
            visit(node)
    return sorted(found)


def describe(component: list[str], edges: Edges) -> str:
    """One cycle and the imports that close it, one edge a line."""
    inside = sorted((a, b) for a, b in edges if a in component and b in component)
    lines = [f"{a} -> {b}: {', '.join(edges[(a, b)])}" for a, b in inside]
    return "cycle " + " / ".join(component) + "\n  " + "\n  ".join(lines)


def core_sources() -> dict[str, tuple[str, bool, str]]:
    """Every core/**/*.py as file label -> (module, is_package, code)."""
    return {
        str(path.relative_to(REPO)): (module_name(path, REPO), path.name == "__init__.py", path.read_text("utf-8"))
        for path in sorted((REPO / "core").rglob("*.py"))
    }


def module_edges(sources: dict[str, tuple[str, bool, str]]) -> Edges:
    """Edges between the modules of `sources` (file label -> (module, is_package, code)) with where they come from."""
    known = {module for module, _, _ in sources.values()}
    edges: Edges = defaultdict(list)
    for label, (module, is_package, code) in sources.items():
        for node in _runtime_nodes(ast.parse(code)):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            base, *named = imported_modules(node, module, is_package)
            if isinstance(node, ast.Import):
                targets = {base, *named}
            else:
                targets = {n for n in named if n in known} | ({base} if not named or any(n not in known for n in named)
                                                               else set())
            for there in sorted(t for t in targets if t in known and t != module):
                edges[(module, there)].append(f"{label}:{node.lineno}")
    return dict(edges)


def app_sources(roots: tuple[str, ...] = ("core", "ui", "pages")) -> dict[str, tuple[str, bool, str]]:
    """Every .py under `roots` as file label -> (module, is_package, code)."""
    return {
        str(path.relative_to(REPO)): (module_name(path, REPO), path.name == "__init__.py", path.read_text("utf-8"))
        for root in roots for path in sorted((REPO / root).rglob("*.py"))
    }


def test_modules_of_core_ui_and_pages_import_no_cycle() -> None:
    edges = module_edges(app_sources())
    found = cycles(edges)
    assert not found, "\n".join(describe(component, edges) for component in found)


MODULE_GRAPHS = [
    pytest.param({"core__a__x": "from core.a import y\n", "core__a__y": "def f():\n    from core.a.x import g\n"},
                 [["core.a.x", "core.a.y"]], id="inside-one-package"),
    pytest.param({"core__a__x": "from core.a import y\n", "core__a__y": "import core.a.z\n", "core__a__z": "x = 1\n"},
                 [], id="chain"),
    pytest.param({"ui__a": "from ui import b\n", "ui__b": "from .a import f\n"}, [["ui.a", "ui.b"]],
                 id="relative-across-ui"),
    pytest.param({"core__a__x": "from core.a.y import f\n",
                  "core__a__y": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from core.a.x import g\n"},
                 [], id="type-checking-only-left-out"),
    pytest.param({"core__a__x": "HOOK = 'core.a.y:f'\n", "core__a__y": "from core.a.x import HOOK\n"}, [],
                 id="string-hook-is-no-edge"),
]


@pytest.mark.parametrize(("files", "expected"), MODULE_GRAPHS)
def test_module_cycles_in_synthetic_graphs(files: dict[str, str], expected: list[list[str]]) -> None:
    assert cycles(module_edges(_sources(**files))) == expected


def test_core_subpackages_import_no_cycle() -> None:
    edges = import_edges(core_sources())
    found = cycles(edges)
    assert not found, "\n".join(describe(component, edges) for component in found)


def documented_layers(text: str) -> dict[str, int]:
    """Node -> row of the ```layers block in docs/layers.md (rows top to bottom; the bottom row is 0)."""
    block = text.split("```layers\n", 1)[1].split("```", 1)[0]
    rows = [line.split() for line in block.splitlines() if line.strip()]
    return {node: len(rows) - 1 - i for i, row in enumerate(rows) for node in row}


def upward_imports(edges: Edges, rows: dict[str, int]) -> list[str]:
    """Edges to a higher row than their source, and edges naming a node the rows do not place, with file:line."""
    unplaced = sorted({n for edge in edges for n in edge} - set(rows))
    upward = sorted((a, b) for a, b in edges if a in rows and b in rows and rows[b] > rows[a])
    return [f"{node}: not placed in docs/layers.md" for node in unplaced] + [
        f"{a} -> {b} points up: {', '.join(edges[(a, b)])}" for a, b in upward
    ]


def test_core_imports_point_down_the_documented_layers() -> None:
    rows = documented_layers((REPO / "docs" / "layers.md").read_text("utf-8"))
    found = upward_imports(import_edges(core_sources()), rows)
    assert not found, "\n".join(found)


def _sources(**files: str) -> dict[str, tuple[str, bool, str]]:
    """Synthetic modules for the tables below: keyword `core__a__x` is the module core/a/x.py."""
    return {key.replace("__", "/") + ".py": (key.replace("__", "."), False, code) for key, code in files.items()}


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param({"core__a__x": "from core.b import y\n", "core__b__y": "import core.c.z\n"}, [], id="chain"),
        pytest.param(
            {"core__a__x": "from core.b.y import f\n", "core__b__y": "def f():\n    from core.a import x\n"},
            [["core.a", "core.b"]],
            id="import-inside-function",
        ),
        pytest.param(
            {"core__a__x": "from ..b import y\n", "core__b__y": "from ..a.x import g\n"},
            [["core.a", "core.b"]],
            id="relative-imports",
        ),
        pytest.param(
            {"core__a__x": "from core import config\n", "core__config": "from core.a import x\n"},
            [["core.a", "core.config"]],
            id="top-level-module-is-a-node",
        ),
        pytest.param(
            {
                "core__a__x": "from core.b import y\n",
                "core__b__y": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from core.a import x\n",
            },
            [],
            id="type-checking-only-left-out",
        ),
        pytest.param(
            {"core__a__x": "from core.b import y\n", "core__b__y": "from core.c import z\n", "core__c__z": "import core.a\n"},
            [["core.a", "core.b", "core.c"]],
            id="three-node-cycle",
        ),
        pytest.param({"core__a__x": "from .y import f\nimport core.a.z\n"}, [], id="same-layer-is-no-edge"),
    ],
)
def test_cycles_found_in_synthetic_graphs(files: dict[str, str], expected: list[list[str]]) -> None:
    assert cycles(import_edges(_sources(**files))) == expected


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param({"core__a__x": "from core.b import y\n"}, [], id="down"),
        pytest.param({"core__c__x": "from core.d import y\n"}, [], id="peer-in-one-row"),
        pytest.param(
            {"core__b__y": "def f():\n    from core.a import x\n"},
            ["core.b -> core.a points up: core/b/y.py:2"],
            id="up-inside-function",
        ),
        pytest.param(
            {"core__a__x": "import core.e.z\n"}, ["core.e: not placed in docs/layers.md"], id="unplaced-package"
        ),
    ],
)
def test_upward_imports_in_synthetic_graphs(files: dict[str, str], expected: list[str]) -> None:
    rows = documented_layers("text\n```layers\ncore.a\ncore.c core.d\ncore.b\n```\nmore\n")
    assert upward_imports(import_edges(_sources(**files)), rows) == expected


def test_cycle_report_names_file_and_line() -> None:
    edges = import_edges(_sources(core__a__x="import os\nfrom core.b import y\n", core__b__y="import core.a.x\n"))
    assert describe(["core.a", "core.b"], edges) == (
        "cycle core.a / core.b\n  core.a -> core.b: core/a/x.py:2\n  core.b -> core.a: core/b/y.py:1"
    )


WRITE_CALLS = {"commit", "flush", "add_all"}  # session methods that write (merge is also a pandas method)
WRITE_STATEMENTS = {"insert", "update", "delete"}  # statements imported from sqlalchemy / sqlmodel


def writes(code: str) -> list[str]:
    """What in `code` writes to the database: a session write call, an add on a session, or an imported write
    statement, each with its line."""
    found = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = ast.unparse(node.func.value)
            if node.func.attr in WRITE_CALLS or (node.func.attr == "add" and "session" in owner.lower()):
                found.append(f"{owner}.{node.func.attr}(): line {node.lineno}")
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in {"sqlalchemy", "sqlmodel"}:
            found += [f"imports {a.name}: line {node.lineno}" for a in node.names if a.name in WRITE_STATEMENTS]
    return found


@pytest.mark.parametrize(("code", "expected"), [
    pytest.param("with Session(e) as session:\n    session.add(r)\n    session.commit()\n",
                 ["session.add(): line 2", "session.commit(): line 3"], id="session-write"),
    pytest.param("from sqlalchemy import select, update\n", ["imports update: line 1"], id="write-statement"),
    pytest.param("table.insert(0, 'rank', x)\nrow.update(a=1)\nseen.add(k)\n", [], id="pandas-and-dict-calls"),
])
def test_writes_found_in_code(code: str, expected: list[str]) -> None:
    assert writes(code) == expected


def test_analysis_layer_never_writes() -> None:
    found = [f"{label}: {w}" for label, (module, _, code) in core_sources().items()
             if layer(module) == "core.analysis" for w in writes(code)]
    assert not found, "\n".join(found)
