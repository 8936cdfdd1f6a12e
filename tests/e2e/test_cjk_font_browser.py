"""CJK legible everywhere (issue 28, item 8): the app serves its own CJK font (static/fonts/gauntlet-cjk.woff2) from
this origin, and chromium draws Chinese and Japanese glyphs with it in a browser whose fontconfig holds no CJK font.

The pixel check: with no CJK font, every CJK character is drawn as the same empty box, so two different strings of
the same length give identical pictures; with the font, they differ. The control run blocks the font file and must
give the identical boxes (the check can fail, and the sandboxed fontconfig really has no CJK font)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.e2e.harness import OffHost, launch, require_chromium, serve, settle, shared_playwright

pytestmark = pytest.mark.browser
FONT_PATH = "/app/static/fonts/gauntlet-cjk.woff2"
LATIN_FONT_DIRS = ["/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/truetype/liberation"]


@pytest.fixture(scope="module")
def served(session_url_factory):
    with serve(session_url_factory()) as app:
        yield app.url


def _fontconfig(folder: Path) -> dict[str, str]:
    """An environment whose fontconfig lists only Latin font folders: no system CJK font, whatever is installed."""
    dirs = "".join(f"<dir>{d}</dir>" for d in LATIN_FONT_DIRS if Path(d).is_dir())
    conf = folder / "fonts.conf"
    conf.write_text(f"<?xml version='1.0'?><fontconfig>{dirs}<cachedir>{folder / 'cache'}</cachedir></fontconfig>")
    return {**os.environ, "FONTCONFIG_FILE": str(conf)}


def _pictures(page, texts: list[str]) -> list[bytes]:
    """Screenshots of each text drawn at 40 px in the app's main area (so in the theme's font)."""
    pictures = []
    for i, text in enumerate(texts):
        page.evaluate("""([id, text]) => { const p = document.createElement('p'); p.id = id; p.textContent = text;
            p.style.cssText = 'font-size:40px;display:inline-block;padding:4px;margin:0;background:#fff';
            document.querySelector('[data-testid=stMain]').prepend(p); }""", [f"cjk{i}", text])
        page.evaluate("""(text) => document.fonts.load('40px gauntlet-cjk', text).catch(() => [])
            .then(() => document.fonts.ready).then(() => new Promise(done => requestAnimationFrame(done)))""", text)
        pictures.append(page.locator(f"#cjk{i}").screenshot())
    return pictures


@pytest.mark.parametrize(("blocked", "legible"), [
    pytest.param(False, True, id="served-font-draws-glyphs"),
    pytest.param(True, False, id="control-font-blocked-draws-boxes"),
])
def test_cjk_glyphs_render_with_no_system_cjk_font(served, tmp_path, blocked, legible):
    require_chromium()
    fetched: list[tuple[str, int, str]] = []
    browser = launch(shared_playwright(), env=_fontconfig(tmp_path))  # its own chromium: a font setup of its own
    try:
        context = browser.new_context(viewport={"width": 1000, "height": 800})
        off_host = OffHost()
        context.route("**/*", off_host.route)
        if blocked:
            context.route(f"**{FONT_PATH}", lambda route: route.abort())
        page = context.new_page()
        page.on("response", lambda r: fetched.append((r.url, r.status, r.headers.get("content-security-policy", ""))))
        page.goto(served)
        settle(page)
        page.get_by_role("textbox", name="Username").wait_for()
        han, other_han, kana, other_kana, boxes = _pictures(page, ["漢字中文", "問題回答", "かなカナ", "ひらがな", "\ue000\ue001\ue002\ue003"])
    finally:
        browser.close()
    assert off_host.blocked == []
    fonts = [(status, csp) for url, status, csp in fetched if url.endswith(FONT_PATH)]
    if legible:
        assert fonts and fonts[0][0] == 200 and "font-src 'self'" in fonts[0][1]  # from this origin, under the CSP
        assert han != other_han and kana != other_kana  # distinct glyphs
        assert boxes not in (han, other_han)  # and not the empty boxes of characters no font has
    else:
        assert han == other_han and kana == other_kana  # the same boxes: no system CJK font to fall back on
