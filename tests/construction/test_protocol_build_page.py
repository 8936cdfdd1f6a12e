"""AppTest: Build benchmark imports a file of any layout from a server path (records, rejects with line and field,
the named set) and builds each protocol's benchmark with its options, then imports it as a named set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import Session, select
from streamlit.testing.v1 import AppTest

from core.ingest.sets import benchmark_sets
from core.services.protocol_builds import build_tabs
from core.store.models import Instance
from tests.workspace_factories import principal, seeded_db

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "build_benchmark.py")
SHARED = ROOT.parent / "shared" / "datasets"
RAMDOCS = ROOT / "tests" / "fixtures" / "importers" / "ramdocs.jsonl"


@pytest.fixture
def seeded(tmp_path, monkeypatch):
    s = seeded_db(tmp_path)
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", s.url)
    monkeypatch.setenv("GAUNTLET_BUILD_DIR", str(tmp_path / "built"))
    monkeypatch.setenv("GAUNTLET_IMPORT_ROOTS", f"{tmp_path}:{ROOT / 'tests' / 'fixtures'}:{SHARED}")
    return s


def page_as(who: str, tab: str | None = None) -> AppTest:
    """The page as `who`, on `tab`'s build tab (only the chosen tab's form is drawn); None: "Import a file"."""
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.session_state["gauntlet_principal"] = principal(who)
    if tab is not None:
        at.session_state["build_tab"] = build_tabs()[tab]
    return at.run()


@pytest.mark.parametrize(("bad_line", "skip", "shown", "imported"), [
    pytest.param(False, False, "3 records read: 3 valid, 0 rejected", 3, id="clean-file"),
    pytest.param(True, True, "4 records read: 3 valid, 1 rejected", 3, id="rejects-left-out"),
    pytest.param(True, False, "3 problem(s) in 1 record(s): nothing can be imported", 0, id="rejects-stop-the-import"),
])
def test_a_server_file_imports_as_a_named_set_with_its_rejects(seeded, tmp_path, bad_line, skip, shown, imported):
    path = RAMDOCS
    if bad_line:
        rows = [json.loads(line) for line in RAMDOCS.read_text(encoding="utf-8").splitlines()]
        path = tmp_path / "ramdocs_bad.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in [*rows, {"documents": []}]), encoding="utf-8")
    at = page_as("admin")
    at.selectbox(key="import_format").set_value("ramdocs")
    at.toggle(key="import_skip_invalid").set_value(skip)
    at.text_input(key="import_path").set_value(str(path)).run()
    assert not at.exception, at.exception
    assert any(shown in m.value for m in at.markdown), [m.value for m in at.markdown]
    if bad_line:
        problems = at.dataframe[0].value
        assert set(problems["line"]) == {4} and "question" in set(problems["field"])
    if not imported:
        assert not [b for b in at.button if b.key == "import_run"]
        return
    name = next(t for t in at.text_input if t.key.startswith("import_set_name_"))
    name.set_value("ramdocs slice").run()
    at.button(key="import_run").click().run()
    assert not at.exception, at.exception
    assert any(s.value.startswith("Imported set 'ramdocs slice'") for s in at.success), [e.value for e in at.error]
    assert [s.instances for s in benchmark_sets(seeded.engine) if s.name == "ramdocs slice"] == [imported]


@pytest.mark.parametrize(("protocol", "source", "limit"), [
    pytest.param("kb_corruption", SHARED / "mmlu" / "ragstress_eval700_stratified_seed42.jsonl", 3, id="kb_corruption"),
    pytest.param("misleading_evidence", SHARED / "medqa-usmle-4opt" / "medqa_us_4opt_test_first500.jsonl", 4,
                 id="misleading_evidence"),
    pytest.param("domainrag", SHARED / "domainrag", 1, id="domainrag"),
])
def test_each_protocol_builds_and_imports_as_a_named_set(seeded, protocol, source, limit):
    assert source.exists(), f"shared data missing: {source}"
    at = page_as("admin", protocol)
    at.text_input(key=f"build_{protocol}_source").set_value(str(source))
    if protocol == "misleading_evidence":
        at.selectbox(key=f"build_{protocol}_format").set_value("medqa")
    at.number_input(key=f"build_{protocol}_limit").set_value(limit)
    next(b for b in at.button if b.proto.form_id == f"build_{protocol}").click().run()
    assert not at.exception, at.exception
    built = [s.value for s in at.success if s.value.startswith("Built ")]
    assert built and f"{protocol} instances" in built[0], [e.value for e in at.error]
    assert any(p.proto.text.startswith("Built ") for p in at.get("progress"))
    at.button(key=f"build_{protocol}_import").click().run()
    assert not at.exception, at.exception
    assert any(s.value.startswith("Imported:") for s in at.success), [e.value for e in at.error]
    with Session(seeded.engine) as session:
        protocols = set(session.exec(select(Instance.protocol).where(Instance.uid.not_in(
            ["E-noisy", "E-gap", "E-conflict", "M-noisy"]))).all())
    assert protocols == {protocol}


def test_tabs_come_from_declarations_own_build_tabs_first(seeded) -> None:
    """Each tab after "Import a file" is a protocol's declaration: its own build tab (`build_panel`) first, then the
    builders' forms, in build_tabs' order; the page names no protocol."""
    from core.protocols import PROTOCOLS
    from core.services.protocol_builds import builders

    tabs = build_tabs()
    panels = [n for n in PROTOCOLS.names() if PROTOCOLS.get(n).build_panel is not None]
    assert panels and list(tabs)[:len(panels)] == panels and set(tabs) == {*panels, *builders()}
    assert [t.label for t in page_as("admin").tabs] == ["Import a file", *tabs.values()]
    assert "enterprise" not in Path(PAGE).read_text(encoding="utf-8").lower()
