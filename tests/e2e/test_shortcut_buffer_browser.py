"""ui/shortcut_buffer.js in Debian chromium, on a page that mimics Streamlit's markup (the app's stApp script state
and a button's "Shortcut Alt + A" hint): a shortcut pressed before its button is drawn is clicked once the button
appears; a press the page already answers, a plain key, or a press whose run ended without the button, is not."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.e2e.harness import ROOT, chromium, new_context

SCRIPT = ROOT / "ui" / "shortcut_buffer.js"
PAGE = """<html><head></head><body>
<div data-testid="stApp" data-test-script-state="notRunning"><div id="main"></div></div>
<script>
window.clicks = [];
window.setState = (s) => document.querySelector('[data-testid=stApp]').setAttribute('data-test-script-state', s);
window.draw = (label, hint, disabled) => {
  const b = document.createElement('button');
  b.disabled = !!disabled;
  b.innerHTML = `<span>${label}</span><kbd aria-label="Shortcut ${hint}">${hint}</kbd>`;
  b.addEventListener('click', () => window.clicks.push(label));
  document.getElementById('main').appendChild(b);
  return b;
};
</script></body></html>"""


@dataclass(frozen=True)
class Case:
    steps: tuple[str, ...]  # JS statements and ("press X") key presses, in order
    clicks: list[str]


CASES = {
    "pressed-before-the-button-is-drawn": Case(
        ("setState('running')", "press Alt+A", "draw('Accept', 'Alt + A')", "setState('notRunning')"), ["Accept"]),
    "pressed-on-a-stale-page-before-the-run-starts": Case(
        ("press Alt+A", "setState('running')", "draw('Accept', 'Alt + A')", "setState('notRunning')"), ["Accept"]),
    "drawn-disabled-then-enabled": Case(
        ("setState('running')", "press Alt+A", "window.b = draw('Accept', 'Alt + A', true)", "b.disabled = false",
         "setState('notRunning')"), ["Accept"]),
    "the-button-already-answers-it": Case(("draw('Accept', 'Alt + A')", "press Alt+A"), []),
    "another-shortcut-is-not-clicked": Case(
        ("setState('running')", "press Alt+A", "draw('Reject', 'Alt + X')", "setState('notRunning')"), []),
    "the-run-after-the-press-ended-without-the-button": Case(
        ("press Alt+A", "setState('running')", "setState('notRunning')", "draw('Accept', 'Alt + A')"), []),
    "a-plain-key-is-never-kept": Case(("setState('running')", "press a", "draw('A', 'A')", "setState('notRunning')"),
                                      []),
}


@pytest.mark.browser
@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_a_shortcut_pressed_before_its_button_is_drawn_is_kept(case: Case) -> None:
    with chromium() as browser:
        context = new_context(browser)
        page = context.new_page()
        page.set_content(PAGE)
        page.add_script_tag(path=str(SCRIPT))
        for step in case.steps:
            if step.startswith("press "):
                page.keyboard.press(step.removeprefix("press "))
            else:
                page.evaluate(step)
        page.evaluate("() => new Promise(r => setTimeout(r, 0))")  # let the observer's callbacks run
        if case.clicks:
            page.wait_for_function(f"window.clicks.length >= {len(case.clicks)}")
        else:  # nothing may click later either: the buffer must be empty once the observer has run
            page.wait_for_function("() => new Promise(r => requestAnimationFrame(() => r(true)))")
        assert page.evaluate("window.clicks") == case.clicks
        context.close()
