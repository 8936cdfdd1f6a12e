"""AppTest: Build benchmark and Gold labels & adjudication draw only the chosen tab (stateful st.tabs): every tab is
listed, the chosen one's widgets are drawn and no other tab's are, and choosing another tab draws that one."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.services.protocol_builds import build_tabs, builders
from tests.app.test_write_matrix import ROOT
from tests.construction.test_construction_page import seeded  # noqa: F401  (the fixture: seeded database, build dir)
from tests.workspace_factories import principal

pytestmark = pytest.mark.usefixtures("seeded")
BUILD = "pages/build_benchmark.py"
ADJUDICATE = "pages/adjudicate.py"
# Adjudicate's tab -> a widget key only that tab draws
ADJUDICATE_MARKS = {"Draw a sample": "sample_run", "Disagreements": "adj_all", "Verification disagreements": "vadj_pick",
                    "Expert progress": None, "Export / import": "labels_export", "Plan the next labels": "plan_open"}


def _build_marks() -> dict[str, str]:
    """Build benchmark's tab -> a widget key only that tab draws (a builder's source box; EnterpriseRAG's domains)."""
    tabs = build_tabs()
    return {"Import a file": "import_format", tabs["enterprise_rag"]: "build_domains",
            **{tabs[p]: f"build_{p}_source" for p in builders()}}


def _keys(at: AppTest) -> set[str]:
    return {w.key for w in at._tree if getattr(w, "key", None)}


def _open(page: str, tab_key: str, tab: str | None) -> AppTest:
    at = AppTest.from_file(str(ROOT / page), default_timeout=60)
    at.session_state["gauntlet_principal"] = principal("admin")
    if tab is not None:
        at.session_state[tab_key] = tab
    at.run()
    assert not at.exception, at.exception
    return at


CASES = [
    pytest.param(BUILD, "build_tab", None, "Import a file", id="build-opens-on-import"),
    pytest.param(BUILD, "build_tab", "EnterpriseRAG", "EnterpriseRAG", id="build-enterprise"),
    pytest.param(BUILD, "build_tab", "Misleading evidence", "Misleading evidence", id="build-misleading-evidence"),
    pytest.param(BUILD, "build_tab", "Conversations", "Conversations", id="build-conversations"),
    pytest.param(ADJUDICATE, "adj_tab", None, "Draw a sample", id="adjudicate-opens-on-sample"),
    pytest.param(ADJUDICATE, "adj_tab", "Disagreements", "Disagreements", id="adjudicate-disagreements"),
    pytest.param(ADJUDICATE, "adj_tab", "Verification disagreements", "Verification disagreements",
                 id="adjudicate-verification"),
    pytest.param(ADJUDICATE, "adj_tab", "Expert progress", "Expert progress", id="adjudicate-progress"),
    pytest.param(ADJUDICATE, "adj_tab", "Export / import", "Export / import", id="adjudicate-export"),
    pytest.param(ADJUDICATE, "adj_tab", "Plan the next labels", "Plan the next labels", id="adjudicate-plan"),
]


@pytest.mark.parametrize(("page", "tab_key", "chosen", "drawn"), CASES)
def test_only_the_chosen_tab_is_drawn(page, tab_key, chosen, drawn):
    marks = _build_marks() if page == BUILD else ADJUDICATE_MARKS
    at = _open(page, tab_key, chosen)
    assert [t.label for t in at.tabs] == list(marks)  # every tab stays listed
    keys = _keys(at)
    assert {tab for tab, key in marks.items() if key in keys} == ({drawn} if marks[drawn] else set())
    if drawn == "Expert progress":
        assert [s.value for s in at.subheader] == ["Per-expert progress"]


def test_a_tab_switch_draws_the_new_tab_and_keeps_the_choice():
    at = _open(ADJUDICATE, "adj_tab", None)
    at.session_state["adj_tab"] = "Verification disagreements"
    at.run()
    assert "vadj_pick" in _keys(at) and "sample_run" not in _keys(at)
    at.run()  # a rerun (a widget change, a save) stays on the chosen tab
    assert "vadj_pick" in _keys(at)
