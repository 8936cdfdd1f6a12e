"""Browser (Debian chromium): a page on another origin cannot open the app's WebSocket (cross-site WebSocket hijacking),
whether it is served from another port of the same host (same site: the visitor's SameSite cookies would be sent) or
as localhost while the app is at 127.0.0.1 (both admitted by Streamlit's own check); the app's own page, in the same
browser, still connects and renders its sign-in form."""

from __future__ import annotations

import pytest

from tests.e2e.harness import chromium, serve, settle, shot
from tests.e2e.test_login_csrf_browser import attacker_site, loopback_context
from tests.workspace_factories import seeded_db

pytestmark = pytest.mark.browser
FOLDER = "ws-origin"
LOOPBACK = {"127.0.0.1", "localhost"}
# the attacker's page: open the app's stream and record what happens (the socket's events, in order)
HIJACK = """url => new Promise(resolve => {
    const events = [];
    const socket = new WebSocket(url);
    socket.onopen = () => { events.push("open"); socket.close(); };
    socket.onerror = () => events.push("error");
    socket.onclose = () => { events.push("close"); resolve(events); };
})"""


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    seeded = seeded_db(tmp_path_factory.mktemp("ws-origin"))
    with serve(seeded.url) as served:
        yield served.url


@pytest.mark.parametrize("attacker_host", [pytest.param("127.0.0.1", id="same-host-another-port"),
                                           pytest.param("localhost", id="localhost-another-port")])
def test_another_origin_cannot_open_the_apps_websocket(app, attacker_host):
    stream = app.replace("http://", "ws://", 1) + "/_stcore/stream"
    with chromium() as browser:
        context = loopback_context(browser, LOOPBACK)
        page = context.new_page()
        try:
            page.goto(app)  # the visitor has the app open: its page connects and renders the sign-in form
            settle(page)
            page.get_by_role("textbox", name="Username").wait_for()
            with attacker_site(attacker_host, app + "/") as attacker:
                page.goto(attacker)
                events = page.evaluate(HIJACK, stream)
            assert "open" not in events and events[-1] == "close", events
            page.goto(app)  # the app's own page still connects afterwards, and so does the same script run there
            settle(page)
            page.get_by_role("textbox", name="Username").wait_for()
            assert page.evaluate(HIJACK, stream)[0] == "open"
        finally:
            shot(page, FOLDER, f"last-{attacker_host}")
