"""Untrusted text never makes the browser fetch a remote image: Markdown and HTML images become "[image: URL]" text in
every place the app renders documents, queries, constraints, model responses and notes; the server sends a CSP."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from google.protobuf.json_format import MessageToDict
from streamlit.testing.v1 import AppTest

from core.store.sanitize import html_markdown, inline_code, plain_markdown
from tests.hardening.untrusted import EXFIL, IMAGE, PAYLOADS, poisoned_db
from tests.workspace_factories import principal

ROOT = Path(__file__).resolve().parents[2]
PLACEHOLDER = f"[image: {EXFIL}]"
# an image or a tag that could load a URL (escaped text such as "&lt;img src=..." is shown, not loaded)
ACTIVE_IMAGE = re.compile(r"!\[|<(?:img|style|svg|picture|video|link)\b|<[^>]*\b(?:src|srcset|background|style|poster|data)\s*=",
                          re.IGNORECASE)

SANITISED = [
    pytest.param(IMAGE, PLACEHOLDER, id="inline-image"),
    pytest.param(f'![x]({EXFIL} "title")', PLACEHOLDER, id="image-with-title"),
    pytest.param("![x](<https://evil.example/a b.png>)", "[image: https://evil.example/a b.png]", id="angle-destination"),
    pytest.param("![x](https://evil.example/a(b).png)", r"[image: https://evil.example/a\(b\).png]", id="balanced-parens"),
    pytest.param("![x][r]\n\n[r]: https://evil.example/r.png", r"!\[x][r]", id="reference-image"),
    pytest.param("![r]\n\n[r]: https://evil.example/r.png", r"!\[r]", id="shortcut-reference-image"),
    pytest.param("!![x](u)\n\n[image: u]: https://evil.example/r.png", r"!\[image: u]", id="placeholder-made-a-reference"),
    pytest.param(f"[{IMAGE}](https://evil.example/)", PLACEHOLDER, id="image-inside-a-link"),
    pytest.param(f"![x](https://evil.example/![y]({EXFIL}))", "[image:", id="nested-images"),
]


@pytest.mark.parametrize("text, shown", SANITISED)
@pytest.mark.parametrize("render", [plain_markdown, html_markdown], ids=["plain", "html"])
def test_markdown_images_become_text(render, text, shown):
    out = render(text)
    assert not re.search(r"!\[", out), out
    assert shown in out, out


HTML_IMAGES = [
    pytest.param('<img src="https://evil.example/i.png">', "[image: https://evil.example/i.png]", id="img-src"),
    pytest.param("<IMG SRC=https://evil.example/i.png alt=x>", "[image: https://evil.example/i.png]", id="img-bare-src"),
    pytest.param('<img srcset="https://evil.example/2x.png 2x">', "", id="img-srcset-only"),
    pytest.param('<picture><source srcset="https://evil.example/p.png"></picture>', "", id="picture-source"),
    pytest.param('<div style="background:url(https://evil.example/c.png)">a</div>', "a", id="css-url"),
    pytest.param("<style>@import url(https://evil.example/s.css)</style>b", "b", id="style-import"),
    pytest.param('<table background="https://evil.example/t.png"><tr><td>x</td></tr></table>', "x", id="table-background"),
    pytest.param('<svg><image href="https://evil.example/s.png"/></svg>', "", id="svg-image"),
    pytest.param('<video poster="https://evil.example/v.png"></video>', "", id="video-poster"),
    pytest.param('<link rel="stylesheet" href="https://evil.example/l.css">', "", id="link-stylesheet"),
    pytest.param('<input type="image" src="https://evil.example/i.png">', "", id="input-image"),
    pytest.param('<iframe src="https://evil.example/f"></iframe>', "", id="iframe"),
    pytest.param('<object data="https://evil.example/o"></object>', "", id="object"),
    pytest.param('!<foo>[x](https://evil.example/x.png)', "[image: https://evil.example/x.png]", id="stripped-tag-forms-image"),
]


@pytest.mark.parametrize("markup, shown", HTML_IMAGES)
def test_html_keeps_no_remote_resource(markup, shown):
    out = html_markdown(markup)
    assert not ACTIVE_IMAGE.search(out), out
    assert shown in out


@pytest.mark.parametrize("text", ["c1", "a`b", "``x", "x\ny"])
def test_inline_code_cannot_be_broken_out_of(text):
    fence = re.match(r"`+", inline_code(text)).group()
    assert inline_code(text).endswith(fence) and fence + "`" not in text and "\n" not in inline_code(text)


def _shown_strings(at: AppTest) -> list[str]:
    """Every string the browser renders as Markdown: bodies (markdown, captions, alerts) and labels (widgets,
    expanders, tabs, radio options)."""
    found: list[str] = []

    def collect(value, key=""):
        if isinstance(value, dict):
            for k, v in value.items():
                collect(v, k)
        elif isinstance(value, list):
            for v in value:
                collect(v, key)
        elif isinstance(value, str) and key in ("body", "label", "options"):
            found.append(value)

    def walk(node):
        proto = getattr(node, "proto", None)
        if proto is not None and hasattr(proto, "DESCRIPTOR"):
            collect(MessageToDict(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return found


@pytest.fixture
def poisoned(tmp_path, monkeypatch):
    seeded = poisoned_db(tmp_path)
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", seeded.url)
    monkeypatch.setenv("GAUNTLET_VERIFY_OVERLAP", "0")
    return seeded


def _page(path: str, who: str, **state) -> AppTest:
    at = AppTest.from_file(str(ROOT / path), default_timeout=60)
    at.session_state["gauntlet_principal"] = principal(who)
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def _drilldown_script() -> None:
    from tests.hardening.untrusted import poisoned_db  # noqa: F401  (the script runs in its own module)
    from ui.drilldown import response_detail

    response_detail(1, "heuristic")


PAGES = [
    pytest.param(lambda s: _page("pages/verify_instances.py", "alice"), id="verify-instances"),
    pytest.param(lambda s: _page("pages/label_responses.py", "alice"), id="label-responses"),
    pytest.param(lambda s: _page("pages/adjudicate.py", "admin", adj_tab="Disagreements"), id="adjudicate-labels"),
    pytest.param(lambda s: _page("pages/adjudicate.py", "admin", adj_tab="Verification disagreements"),
                 id="adjudicate-verification"),
    pytest.param(lambda s: _page("pages/browse_benchmark.py", "admin", browse_open="E-noisy"), id="browse-benchmark"),
    pytest.param(lambda s: AppTest.from_function(_drilldown_script, default_timeout=60).run(), id="drilldown"),
]


@pytest.mark.parametrize("open_page", PAGES)
def test_pages_render_untrusted_images_as_text(poisoned, open_page):
    at = open_page(poisoned)
    assert not at.exception, at.exception
    shown = _shown_strings(at)
    assert any(PLACEHOLDER in s for s in shown), shown
    assert [s for s in shown if ACTIVE_IMAGE.search(s)] == []


def test_payload_fixture_reaches_every_kind_of_document():
    assert set(PAYLOADS) == {"markdown", "html", "table"} and all(IMAGE in p for p in PAYLOADS.values())


HEADINGS = [
    pytest.param("<h1>Annual report</h1>", "<h5>Annual report</h5>", id="h1"),
    pytest.param('<H1 class="title" style="font-size:4em">Big</H1>', "<h5>Big</h5>", id="h1-upper-with-attributes"),
    pytest.param("<h2>Scope</h2><p>x</p>", "<h6>Scope</h6>", id="h2"),
    pytest.param("<h3>Detail</h3>", "<h6>Detail</h6>", id="h3"),
    pytest.param("<h6>Note</h6>", "<h6>Note</h6>", id="h6"),
    pytest.param("<div><h1>Nested <b>bold</b></h1></div>", "<h5>Nested <b>bold</b></h5>", id="nested"),
    pytest.param("&lt;h1&gt;literal&lt;/h1&gt;", "&lt;h1&gt;literal&lt;/h1&gt;", id="escaped-text-untouched"),
]


@pytest.mark.parametrize("markup, shown", HEADINGS)
def test_document_headings_never_outrank_the_page(markup, shown):
    """The page's sections are #### (h4): a document's headings render as h5 or h6."""
    out = html_markdown(markup)
    assert not re.search(r"(?i)<h[1-4][\s>]", out), out
    assert shown in out, out
