"""Where the protocol packages are, read without importing them: every subpackage of core.protocols, plus the extra
packages registered by name (a plug-in outside core, a test's toy protocol).

This module imports nothing from core and nothing heavy: the CLI lists a protocol package's command (its
`command.py`, module-level COMMAND and HELP strings) from here without importing the package, so `gauntlet --help`
stays light. core.protocols imports the packages listed here; each registers its protocol when imported.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

PROTOCOLS_PACKAGE = "core.protocols"
DEFAULT_PROTOCOL = "enterprise_rag"  # the protocol of record: an instance naming none is one of its instances
PROTOCOLS_DIR = Path(__file__).resolve().parent / "protocols"
EXTRA_PACKAGES: list[str] = []  # dotted names, in registration order


def builtin_packages() -> list[str]:
    """Dotted names of the subpackages of core.protocols (folders with an __init__.py), sorted."""
    return [f"{PROTOCOLS_PACKAGE}.{p.parent.name}" for p in sorted(PROTOCOLS_DIR.glob("*/__init__.py"))]


def protocol_packages() -> list[str]:
    """Every protocol package: core.protocols' own, then the extra ones in registration order."""
    return [*builtin_packages(), *EXTRA_PACKAGES]


def add_package(package: str) -> None:
    """Record an extra protocol package by dotted name; a package listed already raises ValueError."""
    if package in protocol_packages():
        raise ValueError(f"protocol package {package!r} is registered already")
    EXTRA_PACKAGES.append(package)


def remove_package(package: str) -> None:
    """Forget an extra protocol package (a test's toy protocol, once the test is done)."""
    EXTRA_PACKAGES.remove(package)


def package_dir(package: str) -> Path:
    """The folder of a protocol package, found without importing it (its parent package is imported)."""
    if package.startswith(PROTOCOLS_PACKAGE + "."):
        return PROTOCOLS_DIR / package.rpartition(".")[2]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"no protocol package {package!r}", name=package)
    return Path(next(iter(spec.submodule_search_locations)))


def string_constants(path: Path, names: tuple[str, ...]) -> dict[str, str]:
    """The module-level `NAME = "text"` assignments of a Python file for the wanted names, read with ast."""
    found: dict[str, str] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            found.update({t.id: node.value.value for t in node.targets if isinstance(t, ast.Name) and t.id in names})
    return found


def command_of(package: str) -> tuple[str, str, str] | None:
    """(command, module, help) of a protocol package's CLI (`command.py` with COMMAND and HELP), or None."""
    path = package_dir(package) / "command.py"
    if not path.is_file():
        return None
    found = string_constants(path, ("COMMAND", "HELP"))
    if set(found) != {"COMMAND", "HELP"}:
        raise ValueError(f"{path} must set the module-level strings COMMAND and HELP")
    return found["COMMAND"], f"{package}.command", found["HELP"]


def protocol_commands() -> list[tuple[str, str, str]]:
    """(command, module, help) of every protocol package that has a CLI."""
    return [row for package in protocol_packages() if (row := command_of(package))]
