"""Helpers of the UX browser tests: full-height screenshots at 1440 px, plotly figure data and label boxes, toasts."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.e2e.harness import charts_drawn, new_context, settle, shot, shot_on_failure, sign_in

WIDTH = 1440
SCROLLERS = "[data-testid=stMain], [data-testid=stAppViewContainer], [data-testid=stSidebarContent]"


def full_shot(page, folder: str, name: str) -> Path:
    """A screenshot of the whole page at 1440 px wide: the viewport grows to the height of Streamlit's scrolling
    main area (a plain full-page screenshot stops at the first screen), then returns to 1000 px."""
    height = page.evaluate(f"""() => Math.max(document.body.scrollHeight,
        ...[...document.querySelectorAll('{SCROLLERS}')].map(e => e.scrollHeight))""")
    page.set_viewport_size({"width": WIDTH, "height": min(int(height) + 40, 16_000)})
    charts_drawn(page)
    path = shot(page, folder, name)  # after fonts and two frames, with a generous timeout
    page.set_viewport_size({"width": WIDTH, "height": 1000})
    return path


def goto(page, url: str) -> None:
    """Open `url` and wait for the script run to end."""
    page.goto(url)
    settle(page)


def figure_data(page, index: int = 0) -> list[dict]:
    """The traces of the index-th plotly chart on the page as plotly resolved them (colours, text, custom data)."""
    page.wait_for_selector(".js-plotly-plot .main-svg", state="attached", timeout=30_000)
    page.wait_for_function("(i) => document.querySelectorAll('.js-plotly-plot').length > i && "
                           "document.querySelectorAll('.js-plotly-plot')[i]._fullData", arg=index, timeout=30_000)
    return page.evaluate("""(i) => [...document.querySelectorAll('.js-plotly-plot')][i]._fullData.map(t => ({
        name: t.name, type: t.type, text: t.text, customdata: t.customdata, y: t.y,
        line: t.line ? t.line.color : null, marker: t.marker ? t.marker.color : null, yaxis: t.yaxis}))""", index)


def label_boxes(page, index: int = 0) -> list[dict]:
    """Bounding boxes of every visible text of a plotly chart: axis labels and ticks, titles, annotations, legend."""
    return page.evaluate("""(i) => {
        const plot = [...document.querySelectorAll('.js-plotly-plot')][i];
        return [...plot.querySelectorAll('text')].filter(t => t.textContent.trim()).map(t => {
            const r = t.getBoundingClientRect();
            return {text: t.textContent, cls: (t.parentElement.getAttribute('class') || '') + '/' + (t.getAttribute('class') || ''),
                    left: r.left, right: r.right, top: r.top, bottom: r.bottom};
        }).filter(b => b.right > b.left && b.bottom > b.top);
    }""", index)


def overlaps(boxes: list[dict], tolerance: float = 1.0) -> list[tuple[str, str]]:
    """Pairs of texts whose boxes intersect by more than `tolerance` px both ways."""
    found = []
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            dx = min(a["right"], b["right"]) - max(a["left"], b["left"])
            dy = min(a["bottom"], b["bottom"]) - max(a["top"], b["top"])
            if dx > tolerance and dy > tolerance:
                found.append((a["text"], b["text"]))
    return found


def toasts(page) -> list[str]:
    """Texts of the toasts on screen."""
    return [t.inner_text() for t in page.locator("[data-testid=stToast]").all()]


def no_exception(page) -> None:
    errors = page.locator("[data-testid=stException]")
    assert not errors.count(), errors.first.inner_text()


# The cookies of each sign-in through the form, by (browser, server URL, user): a module's browser and servers are its
# own, so a state never outlives the module's server nor reaches another module's.
_SIGNED_IN: dict[tuple[object, str, str], dict] = {}


@contextmanager
def signed_in(browser, url: str, user: str, password: str) -> Iterator:
    """A page of a new browser context signed in as `user` (closed afterwards), open at `url`: through the sign-in
    form the first time in this browser on this server, then with that sign-in's cookies in a fresh context (the app
    must show the user signed in on opening `url`)."""
    state = _SIGNED_IN.get((browser, url, user))
    page = new_context(browser, storage_state=state).new_page()
    try:
        with shot_on_failure(page):
            if state is None:
                sign_in(page, url, user, password)
                _SIGNED_IN[(browser, url, user)] = page.context.storage_state()
            else:
                goto(page, url)
                page.get_by_text(f"Signed in as {user}").wait_for(timeout=30_000)
            yield page
    finally:
        page.context.close()
