"""Browser (Debian chromium): sessions stay with their server (issue 41, item 2). Browsers do not separate cookies by
port, so another service on another port of the same host sees and sets cookies for the app's host name.

Chromium treats 127.0.0.1 and localhost as secure origins even over plain HTTP (it sends them Secure cookies), so
the app and the other service are both reached by a host name mapped to 127.0.0.1 (HOST), as a deployment is.

- Served over HTTPS, the app's cookies are `__Host-` cookies (Secure, Path=/): a plain-HTTP service on another port
  receives none of them, so it has nothing to replay, and it cannot plant a session cookie the app would read (the
  browser refuses a `__Host-` cookie from an insecure origin, and the app ignores the unprefixed names there).
- Two deployments on two ports of one host each keep their own session: their cookie names differ (derived from
  each one's signing key), and neither accepts the other's token (signed with another secret).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from core.review import sessions
from tests.e2e.harness import (
    chromium,
    launch,
    require_chromium,
    self_signed_certificate,
    serve,
    settle,
    shared_playwright,
    shot,
    sign_in,
)
from tests.workspace_factories import PASSWORDS, seeded_db

pytestmark = pytest.mark.browser
FOLDER = "cookie-binding"
STEMS = (sessions.COOKIE_NAME, sessions.NONCE_COOKIE, sessions.DEVICE_COOKIE)
HOST = "gauntlet.test"  # resolved to 127.0.0.1 by the browser


@contextmanager
def named_host_chromium():
    """Headless Debian chromium that resolves HOST to 127.0.0.1."""
    require_chromium()
    browser = launch(shared_playwright(), extra_args=[f"--host-resolver-rules=MAP {HOST} 127.0.0.1"])
    try:
        yield browser
    finally:
        browser.close()


def on_host(url: str) -> str:
    """`url` (on 127.0.0.1) as the browser addresses it, by HOST."""
    return url.replace("127.0.0.1", HOST)


@contextmanager
def other_service(plant: list[str] | None = None) -> Iterator[tuple[str, list[str]]]:
    """A plain-HTTP service on another port of 127.0.0.1: it records the Cookie header of every request and answers
    with the Set-Cookie headers `plant`."""
    received: list[str] = []

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            received.append(self.headers.get("Cookie") or "")
            self.send_response(200)
            for cookie in plant or []:
                self.send_header("Set-Cookie", cookie)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(b"<!doctype html><title>Another service</title><p>hello")

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://{HOST}:{server.server_address[1]}/", received
    finally:
        server.shutdown()
        server.server_close()


def context_for(browser):
    context = browser.new_context(viewport={"width": 1440, "height": 1000}, ignore_https_errors=True)
    context.set_default_timeout(20_000)
    return context


def gauntlet_cookies(header: str) -> dict[str, str]:
    """The app's cookies in a Cookie header (any deployment's, prefixed or not)."""
    pairs = (part.strip().split("=", 1) for part in header.split(";") if "=" in part)
    return {name: value for name, value in pairs if name.removeprefix(sessions.HOST_PREFIX).startswith(STEMS)}


def signed_in_as(page, name: str) -> bool:
    return page.get_by_text(f"Signed in as {name}").count() > 0


@pytest.fixture(scope="module")
def https_app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tls")
    seeded = seeded_db(folder)
    with serve(seeded.url, tls=self_signed_certificate(folder)) as served:
        yield on_host(served.url), seeded


def test_a_service_on_another_port_gets_no_session_to_replay(https_app):
    url, _ = https_app
    with named_host_chromium() as browser, other_service() as (elsewhere, received):
        victim = context_for(browser)
        page = victim.new_page()
        sign_in(page, url, "alice", PASSWORDS["alice"])
        names = {c["name"]: c for c in victim.cookies() if c["name"] in gauntlet_cookies(f"{c['name']}=x")}
        assert len(names) == 3 and all(name.startswith(sessions.HOST_PREFIX) and c["secure"] and c["path"] == "/"
                   for name, c in names.items()), names
        page.goto(elsewhere)
        stolen = {name: value for header in received for name, value in gauntlet_cookies(header).items()}
        assert stolen == {}, f"the other port's service received {sorted(stolen)}"

        replay = context_for(browser)  # the attacker replays whatever it received, in a fresh browser
        replay.add_cookies([{"name": n, "value": v, "url": url} for n, v in stolen.items()] or [])
        attacker = replay.new_page()
        attacker.goto(url)
        settle(attacker)
        shot(attacker, FOLDER, "replayed")
        attacker.get_by_role("textbox", name="Username").wait_for()
        assert not signed_in_as(attacker, "alice")


def test_a_service_on_another_port_cannot_plant_the_attackers_session(https_app):
    url, _ = https_app
    with named_host_chromium() as browser:
        own = context_for(browser)  # the attacker signs in as bob and takes his own session cookie
        sign_in(own.new_page(), url, "bob", PASSWORDS["bob"])
        bobs = [c for c in own.cookies() if sessions.COOKIE_NAME in c["name"]]
        assert bobs
        token = bobs[0]["value"]
        names = {c["name"] for c in bobs} | {c["name"].removeprefix(sessions.HOST_PREFIX) for c in bobs} | \
            {sessions.COOKIE_NAME}
        plant = [f"{name}={token}; Path=/" for name in sorted(names)]
        with other_service(plant) as (elsewhere, _):
            victim = context_for(browser)
            page = victim.new_page()
            page.goto(url)  # the victim has been here before, and is signed out
            settle(page)
            page.goto(elsewhere)  # the other port's service plants bob's session under every name it can think of
            page.goto(url)
            settle(page)
            shot(page, FOLDER, "after-planting")
            page.get_by_role("textbox", name="Username").wait_for()
            assert not signed_in_as(page, "bob")
            submit = page.get_by_role("textbox", name="Username")
            submit.fill("alice")
            page.get_by_role("textbox", name="Password").fill(PASSWORDS["alice"])
            page.get_by_role("button", name="Sign in").click()
            page.get_by_text("Signed in as alice").wait_for(timeout=30_000)
            page.reload()
            settle(page)
            assert signed_in_as(page, "alice") and not signed_in_as(page, "bob")


def test_two_deployments_on_two_ports_keep_their_own_sessions(tmp_path):
    first, second = seeded_db(tmp_path / "first"), seeded_db(tmp_path / "second")
    with serve(first.url) as one, serve(second.url) as two, chromium() as browser:
        context = context_for(browser)
        page_one, page_two = context.new_page(), context.new_page()
        sign_in(page_one, one.url, "alice", PASSWORDS["alice"])
        sign_in(page_two, two.url, "bob", PASSWORDS["bob"])
        for page, who in ((page_one, "alice"), (page_two, "bob")):
            page.reload()
            settle(page)
            shot(page, FOLDER, f"two-deployments-{who}")
            page.get_by_text(f"Signed in as {who}").wait_for(timeout=30_000)
        session_names = {c["name"] for c in context.cookies() if c["name"].startswith(sessions.COOKIE_NAME)}
        assert len(session_names) == 2, session_names
