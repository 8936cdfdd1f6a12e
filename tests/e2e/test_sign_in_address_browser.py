"""Browser (Debian chromium): the sign-in throttle behind a reverse proxy that shares one address. Without trusted
proxies every browser on this machine reaches the app from 127.0.0.1, as every user behind a proxy does from the
proxy's address: a stranger's wrong passwords there make new browsers wait for the attacked account only, never lock
out a teammate or a browser that signed in before (its device cookie); an X-Forwarded-For header counts only when
the server is told the connecting peer is a trusted proxy. The module runs one app server per trusted-proxies setting
(each on its own seeded database); its tests try distinct accounts, so no test's failures count against another's."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest

from core.review.auth import LIMITS, MAX_FAILURES
from tests.e2e.harness import chromium, new_context, serve, settle, submit_sign_in
from tests.workspace_factories import PASSWORDS, seeded_db

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def app(tmp_path_factory) -> Iterator[Callable[[str], str]]:
    """The URL of the module's app server trusting the proxies given (started on first use, on its own seeded
    database), stopped when the module ends."""
    started: dict[str, str] = {}
    with ExitStack() as stack:

        def url(trusted: str) -> str:
            if trusted not in started:
                seeded = seeded_db(tmp_path_factory.mktemp("sign_in_address"))
                started[trusted] = stack.enter_context(serve(seeded.url, GAUNTLET_TRUSTED_PROXIES=trusted)).url
            return started[trusted]

        yield url


def _browser(browser, url: str, forwarded: str | None = None):
    context = new_context(browser)
    if forwarded:
        context.set_extra_http_headers({"X-Forwarded-For": forwarded})
    page = context.new_page()
    page.goto(url)
    settle(page)
    return page


def test_a_stranger_behind_the_shared_address_cannot_lock_the_team_out(app):
    served = app("")
    with chromium() as browser:
        known = _browser(browser, served)  # alice signed in with this browser before (it keeps a device cookie)
        submit_sign_in(known, "alice", PASSWORDS["alice"])
        known.get_by_text("Signed in as alice").wait_for(timeout=30_000)
        known.get_by_role("button", name="Sign out").click()
        known.get_by_role("textbox", name="Username").wait_for(timeout=30_000)

        stranger = _browser(browser, served)
        for i in range(LIMITS["unknown"] + 1):
            submit_sign_in(stranger, f"guess{i}", "wrong-password")
        stranger.get_by_text("Too many failed sign-ins for unknown accounts from this address.").wait_for()
        for _ in range(MAX_FAILURES + 1):  # the next try on alice from this address must wait 30 s
            submit_sign_in(stranger, "alice", "wrong-password")
        stranger.get_by_text("Too many failed sign-ins for this account from this address.").wait_for()

        new = _browser(browser, served)  # a new browser must wait for the attacked account ...
        submit_sign_in(new, "alice", PASSWORDS["alice"])
        new.get_by_text("Too many failed sign-ins for this account from this address.").wait_for()
        teammate = _browser(browser, served)  # ... not for the others
        submit_sign_in(teammate, "ana", PASSWORDS["ana"])
        teammate.get_by_text("Signed in as ana").wait_for(timeout=30_000)
        submit_sign_in(known, "alice", PASSWORDS["alice"])  # and alice's own browser gets in at once
        known.get_by_text("Signed in as alice").wait_for(timeout=30_000)


CASES = [
    pytest.param("", "198.51.100.1", "198.51.100.2", True, id="forwarded-address-ignored-without-trusted-proxy"),
    pytest.param("127.0.0.1", "198.51.100.1", "198.51.100.2", False, id="trusted-proxy-forwards-each-client"),
]


@pytest.mark.parametrize(("trusted", "first", "second", "refused"), CASES)
def test_per_address_throttle(app, trusted, first, second, refused):
    served = app(trusted)
    with chromium() as browser:
        guesser = _browser(browser, served, first)
        for _ in range(MAX_FAILURES):  # five wrong passwords for bob from the first address
            submit_sign_in(guesser, "bob", "wrong-password")
        other = _browser(browser, served, second)
        submit_sign_in(other, "bob", PASSWORDS["bob"])
        if refused:
            other.get_by_text("Too many failed sign-ins for this account from this address.").wait_for()
        else:
            other.get_by_text("Signed in as bob").wait_for(timeout=30_000)
