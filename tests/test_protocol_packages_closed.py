"""Issue 44's criterion, as a test: the four protocols it adds (conversation, injection, citation, long_context) are
closed packages. Outside `core/protocols/<id>/`, nothing in core, ui, pages, app.py, data or bench names what one of
them declares: its package, its own metric ids, its expert label kinds (`Protocol.labels`), its judge-check suites
(`Protocol.judge_suites`) or its id as a string. Shared code reads the declarations instead (the registry, the label
form and import, Judge alignment, `gauntlet judge check`). The names come from the registry, so a metric, label kind
or suite the package adds later is covered without an edit here.

The one exception is a name clash, not a dependency: 'citation' is also one of EnterpriseRAG's constraint
sub-dimensions (knowledge_protocol / citation). A line that says so (`"sub_dimension": "citation"`,
`sub_dimension == "citation"`, `"knowledge_protocol", "citation"`) passes, and so do the files that list the
sub-dimensions one a line (SUB_DIMENSION_LISTS). Vendored model assets (core/assets) are not read."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core.protocols import PACKAGE_OF, get_protocol

REPO = Path(__file__).resolve().parents[1]
FOUR = ("conversation", "injection", "citation", "long_context")
ROOTS = ("core", "ui", "pages", "app.py", "data", "bench")
SUFFIXES = {".py", ".json", ".jsonl", ".toml", ".yaml", ".yml", ".md", ".txt", ".csv"}
SUB_DIMENSION_LISTS = {  # file -> where it lists EnterpriseRAG's sub-dimensions, 'citation' among them, one a line
    "core/store/schema.py": "SubDimension and SUB_DIMENSIONS_BY_CATEGORY",
    "data/schema/instance.schema.json": "the sub_dimension enum",
    "data/sample/_kit.py": "the sample kit's sub-dimension list",
    "data/sample/_web.py": "a sample constraint: its sub-dimension, then its rule checker",
    "bench/bench_judge_calls.py": "a benchmark's (category, sub-dimension) constraints",
    "bench/bench_scoring.py": "a benchmark's sub-dimensions",
}
SUB_DIMENSION_LINE = re.compile(r"""sub_dimension["']?\s*(?::|==)\s*["']citation["']|["']knowledge_protocol["'],\s*["']citation["']""")
SKIPPED = ("core/assets",)


def declared_names(protocol_id: str) -> dict[str, re.Pattern[str]]:
    """What the protocol's package declares, each with the pattern that finds it in text."""
    protocol = get_protocol(protocol_id)
    package = PACKAGE_OF[protocol_id]
    own = [m for m in (*protocol.metrics, *protocol.aggregates) if m.startswith(f"{protocol_id}.")]
    names = {package: rf"\b{re.escape(package)}\b", package.replace(".", "/"): rf"\b{re.escape(package.replace('.', '/'))}\b",
             **{m: rf"\b{re.escape(m)}\b" for m in own},
             **{k.name: rf"\b{re.escape(k.name)}\b" for k in protocol.labels},
             **{s.name: rf"(?<![\w-]){re.escape(s.name)}(?![\w-])" for s in protocol.judge_suites},
             f'"{protocol_id}"': rf"[\"']{re.escape(protocol_id)}[\"']"}
    return {name: re.compile(pattern) for name, pattern in names.items()}


def scanned_files() -> list[Path]:
    """Every text file under the roots."""
    out = []
    for root in ROOTS:
        path = REPO / root
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        out += [p for p in files if p.suffix in SUFFIXES and "__pycache__" not in p.parts
                and not str(p.relative_to(REPO)).startswith(SKIPPED)]
    return out


def leaks(protocol_id: str, files: list[Path]) -> list[str]:
    """'file:line: name' for every declared name of the protocol found outside its package."""
    package_dir = REPO / Path(*PACKAGE_OF[protocol_id].split("."))
    found = []
    for path in files:
        if package_dir in path.parents:
            continue
        rel = str(path.relative_to(REPO))
        for number, line in enumerate(path.read_text("utf-8", errors="replace").splitlines(), start=1):
            for name, pattern in declared_names(protocol_id).items():
                clash = name == '"citation"' and (rel in SUB_DIMENSION_LISTS or SUB_DIMENSION_LINE.search(line))
                if pattern.search(line) and not clash:
                    found.append(f"{rel}:{number}: {name}")
    return found


@pytest.fixture(scope="module")
def files() -> list[Path]:
    return scanned_files()


@pytest.mark.parametrize("protocol_id", FOUR)
def test_nothing_outside_the_package_names_what_it_declares(protocol_id: str, files: list[Path]) -> None:
    assert leaks(protocol_id, files) == []


def test_the_names_cover_the_declarations() -> None:
    """The scan looks for the metric ids, label kinds and suites the packages declare, so it can fail."""
    names = {n for p in FOUR for n in declared_names(p)}
    assert {"citation.recall", "citation_support", "alce-citations", "injection.attack_success",
            "conversation.later_turn_drop", "long_context.accuracy", '"long_context"'} <= names


LEAKS = [  # a line as it would be written outside the package -> what the scan reports
    pytest.param("citation", 'CITATION_PROTOCOL = "citation"', '"citation"', id="the-id-compared"),
    pytest.param("citation", "    citation_support: dict[Text, str] | None = None", "citation_support",
                 id="a-label-field-in-the-shared-model"),
    pytest.param("citation", "from core.protocols.citation.metrics import cited_documents", "core.protocols.citation",
                 id="an-import-of-the-package"),
    pytest.param("citation", '"alce-citations": "module:check"', "alce-citations", id="a-suite-listed"),
    pytest.param("injection", 'floor = {"injection.attack_success": 0.02}', "injection.attack_success",
                 id="a-metric-id"),
    pytest.param("long_context", "if protocol == 'long_context':", '"long_context"', id="another-id-compared"),
]


def test_the_sub_dimension_of_the_same_name_is_no_leak(tmp_path, monkeypatch) -> None:
    path = REPO / "core" / "leak_probe.py"
    copy = tmp_path / "leak_probe.py"
    copy.write_text('if c.sub_dimension == "citation":\n{"sub_dimension": "citation"}\nif kind == "citation":\n')
    real = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: real(copy if self == path else self, *a, **k))
    assert leaks("citation", [path]) == ['core/leak_probe.py:3: "citation"']


@pytest.mark.parametrize(("protocol_id", "line", "reported"), LEAKS)
def test_a_leak_is_reported(protocol_id: str, line: str, reported: str, tmp_path, monkeypatch) -> None:
    path = REPO / "core" / "leak_probe.py"  # a path outside the package; its text is read from the copy below
    copy = tmp_path / "leak_probe.py"
    copy.write_text(line + "\n", encoding="utf-8")
    real = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: real(copy if self == path else self, *a, **k))
    assert f"core/leak_probe.py:1: {reported}" in leaks(protocol_id, [path])
