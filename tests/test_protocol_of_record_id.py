"""Issue 36's criterion, as a test: outside its package the protocol of record's id appears only where the registry
names the default (core/plugins.py) and in the frozen migration history (0021's copy of the declarations as they
stood at that revision: a migration must not read the live registry, or re-running it would change history)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "core" / "protocols" / "enterprise_rag"
ALLOWED = {"core/plugins.py", "core/store/migrations/versions/0021_response_metric.py"}


def test_the_literal_id_stays_in_its_package() -> None:
    found = sorted(str(path.relative_to(REPO)) for root in ("core", "ui", "pages")
                   for path in (REPO / root).rglob("*") if path.is_file() and path.suffix != ".pyc"
                   and PACKAGE not in path.parents and b"enterprise_rag" in path.read_bytes())
    assert [f for f in found if f not in ALLOWED] == []
    assert "DEFAULT_PROTOCOL = \"enterprise_rag\"" in (REPO / "core" / "plugins.py").read_text(encoding="utf-8")
