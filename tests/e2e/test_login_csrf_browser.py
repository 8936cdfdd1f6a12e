"""Browser (Debian chromium): a page on another origin cannot sign a visitor in as the attacker (a link to the
handoff endpoint with the attacker's own unused code) nor sign them out (a link to the sign-out endpoint); the
visitor's own sign-in, reload and sign-out still work. The attacker's page is served from another site (127.0.0.2)
and from another port of the same host (same site, so SameSite=Strict cookies are sent: the nonce binding decides)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest

from core.review import sessions
from tests.e2e.harness import chromium, serve, settle, shot, shot_on_failure, sign_in
from tests.workspace_factories import PASSWORDS, seeded_db

pytestmark = pytest.mark.browser
FOLDER = "login-csrf"
LOOPBACK = {"127.0.0.1", "127.0.0.2"}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    seeded = seeded_db(tmp_path_factory.mktemp("csrf"))
    with serve(seeded.url) as served:
        yield served.url, seeded


@contextmanager
def attacker_site(host: str, link: str) -> Iterator[str]:
    """A page at http://`host`:<free port>/ whose one link points at `link` (on the app's origin)."""
    body = f'<!doctype html><title>Win a prize</title><a id="prize" href="{link}">Claim your prize</a>'.encode()

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer((host, 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def loopback_context(browser, hosts: set[str] = LOOPBACK):
    """A browser context that may reach the app and the attacker's loopback sites (`hosts`), nothing else."""
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    context.set_default_timeout(20_000)
    context.route("**/*", lambda route: route.continue_() if urlsplit(route.request.url).hostname in hosts
                  else route.abort())
    return context


@pytest.fixture(scope="module")
def attackers_browser():
    """The attacker's own browser (context) for the module, which never reaches the handoff endpoint."""
    with chromium() as browser:
        context = loopback_context(browser)
        context.route(lambda u: "/_gauntlet/session?" in u, lambda route: route.abort())
        yield context


def attackers_unused_code(context, url: str) -> str:
    """The attacker signs in as bob in their own browser (`context`) and keeps the handoff code instead of redeeming
    it."""
    page = context.new_page()
    page.goto(url)
    settle(page)
    page.get_by_role("textbox", name="Username").fill("bob")
    page.get_by_role("textbox", name="Password").fill(PASSWORDS["bob"])
    with page.expect_request(lambda request: "/_gauntlet/session?" in request.url, timeout=30_000) as handoff:
        page.get_by_role("button", name="Sign in").click()  # the app sends the browser to the handoff: stopped there
    page.close()
    return handoff.value.url.split("code=", 1)[1].split("&", 1)[0]


def signed_in_as(page, name: str) -> bool:
    return page.get_by_text(f"Signed in as {name}").count() > 0


def session_cookie(context) -> str | None:
    return next((c["value"] for c in context.cookies() if c["name"].startswith(f"{sessions.COOKIE_NAME}_")), None)


def follow_the_attackers_link(page, attacker_host: str, link: str) -> None:
    """Visit the attacker's page, click its link into the app, then reload the app (the session cookie decides)."""
    with attacker_site(attacker_host, link) as attacker:
        page.goto(attacker)
        page.locator("#prize").click()
        page.wait_for_url(lambda u: urlsplit(u).hostname == "127.0.0.1")
        settle(page)
    page.reload()
    settle(page)


ORIGINS = [pytest.param("127.0.0.2", id="another-site"), pytest.param("127.0.0.1", id="same-host-another-port")]


@pytest.mark.parametrize("attacker_host", ORIGINS)
def test_another_origin_cannot_sign_a_visitor_in_as_the_attacker(app, attackers_browser, attacker_host):
    url, seeded = app
    with chromium() as browser:
        context = loopback_context(browser)
        page = context.new_page()
        with shot_on_failure(page, FOLDER):
            sign_in(page, url, "alice", PASSWORDS["alice"])
            code = attackers_unused_code(attackers_browser, url)  # seconds old when the link hands it over (it lives a minute)
            follow_the_attackers_link(page, attacker_host, f"{url}/_gauntlet/session?code={code}&next=/")
            shot(page, FOLDER, f"after-handoff-link-{attacker_host}")
            assert signed_in_as(page, "alice") and not signed_in_as(page, "bob")
            assert sessions.resolve(seeded.engine, session_cookie(context)).username == "alice"
            nonce = next(c for c in context.cookies() if c["name"].startswith(f"{sessions.NONCE_COOKIE}_"))
            assert nonce["httpOnly"] and nonce["sameSite"] == "Strict"


def test_a_signed_out_visitor_is_not_signed_in_as_the_attacker(app, attackers_browser):
    url, _ = app
    with chromium() as browser:
        context = loopback_context(browser)
        page = context.new_page()
        page.goto(url)  # the visitor has been here before (and has a sign-in nonce), but is signed out
        settle(page)
        code = attackers_unused_code(attackers_browser, url)
        follow_the_attackers_link(page, "127.0.0.2", f"{url}/_gauntlet/session?code={code}&next=/")
        page.get_by_role("textbox", name="Username").wait_for()
        assert not signed_in_as(page, "bob") and session_cookie(context) is None


@pytest.mark.parametrize("attacker_host", ORIGINS)
def test_another_origin_cannot_sign_a_visitor_out(app, attacker_host):
    url, seeded = app
    with chromium() as browser:
        context = loopback_context(browser)
        page = context.new_page()
        with shot_on_failure(page, FOLDER):
            sign_in(page, url, "carol", PASSWORDS["carol"])
            follow_the_attackers_link(page, attacker_host, f"{url}/_gauntlet/signout?next=/")
            shot(page, FOLDER, f"after-signout-link-{attacker_host}")
            assert signed_in_as(page, "carol")
            assert sessions.resolve(seeded.engine, session_cookie(context)).username == "carol"

            page.get_by_role("button", name="Sign out").click()  # the visitor's own sign-out still works
            settle(page)
            page.get_by_role("textbox", name="Username").wait_for()
            page.reload()
            settle(page)
            page.get_by_role("textbox", name="Username").wait_for()
            assert session_cookie(context) is None
