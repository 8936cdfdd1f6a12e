"""AppTest: the Browse benchmark page filters instances and opens one with its constraints and documents."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.ingest.io import import_file
from tests.pages.signin import sign_in

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "browse_benchmark.py")


@pytest.fixture
def loaded(engine):
    import_file(engine, FIXTURES / "mini.jsonl")
    return engine


def open_page(role: str = "viewer") -> AppTest:
    at = sign_in(AppTest.from_file(PAGE, default_timeout=30), role)
    at.run()
    assert not at.exception, at.exception
    return at


FILTER_CASES = [
    pytest.param("browse_modes", ["gap"], 1, id="mode-gap"),
    pytest.param("browse_domains", ["Legal"], 1, id="domain-legal"),
    pytest.param("browse_domains", ["Energy"], 3, id="domain-energy"),
]


@pytest.mark.parametrize(("key", "value", "count"), FILTER_CASES)
def test_filters_narrow_the_list(loaded, key, value, count) -> None:
    at = open_page()
    assert "4 instances" in at.caption[0].value
    at.multiselect(key=key).set_value(value).run()
    assert f"{count} instances" in at.caption[0].value


def test_search_matches_document_text(loaded) -> None:
    at = open_page()
    at.text_input(key="browse_search").set_value("14 substations").run()
    assert "2 instances" in at.caption[0].value


def test_open_conflict_instance_shows_bundle_and_sanitised_html(loaded) -> None:
    at = open_page()
    at.selectbox(key="browse_open").set_value("energy-conflict-t1").run()
    assert not at.exception
    markdown = "\n".join(m.value for m in at.markdown)
    assert "Knowledge interaction protocol" in markdown
    assert "enterprise:no_emoji" in markdown
    assert any("Inspection interval 18 months" in e.value for e in at.error)
    expanders = [e.label for e in at.expander]
    assert any(label.startswith("[doc 3]") and "conflicting" in label for label in expanders)
    html_bodies = [m.value for m in at.markdown if "Field bulletin" in m.value]
    assert html_bodies and all("<script" not in b and "onclick" not in b for b in html_bodies)


def test_signed_out_visitor_gets_the_sign_in_form_only(loaded) -> None:
    at = AppTest.from_file(PAGE, default_timeout=30)
    at.run()
    assert [t.value for t in at.title] == ["Sign in to RAG Gauntlet"]
    assert not at.dataframe
