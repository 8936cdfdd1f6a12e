"""Streamlit's magic is off (.streamlit/config.toml): every page draws with explicit st calls, so no page script may hold
a bare expression statement that magic would have written to the page (it would now silently show nothing)."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]
SILENT = (ast.Call, ast.Yield, ast.YieldFrom, ast.Await)  # statements magic never wrapped


def magic_expressions(source: str) -> list[str]:
    """The expression statements of `source` that Streamlit's magic would write to the page (docstrings excepted)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            found += _shown(block, docstring=field == "body") if isinstance(block, list) else []
    return sorted(found, key=lambda line: int(line.split(":")[0].split()[1]))


def _shown(block: list[ast.stmt], *, docstring: bool) -> list[str]:
    """The statements of one block magic would write (a leading string of a body is a docstring)."""
    found = []
    for i, stmt in enumerate(block):
        if not isinstance(stmt, ast.Expr) or isinstance(stmt.value, SILENT):
            continue
        if docstring and i == 0 and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            continue
        found.append(f"line {stmt.lineno}: {ast.unparse(stmt)[:60]}")
    return found


def test_magic_is_off():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["runner"]["magicEnabled"] is False


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param('"""Doc."""\nimport streamlit as st\nst.title("x")\n', [], id="docstring-and-calls"),
        pytest.param("x = 1\nx\n", ["line 2: x"], id="bare-name"),
        pytest.param("def f():\n    '''Doc.'''\n    'shown'\n", ["line 3: 'shown'"], id="string-after-docstring"),
        pytest.param("if True:\n    1, 2\n", ["line 2: (1, 2)"], id="tuple-in-block"),
        pytest.param("if x:\n    pass\nelse:\n    'no docstring here'\n", ["line 4: 'no docstring here'"],
                     id="string-in-else"),
    ],
)
def test_magic_expressions_are_found(source, expected):
    assert magic_expressions(source) == expected


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_no_page_relies_on_magic(script):
    assert magic_expressions(script.read_text(encoding="utf-8")) == []
