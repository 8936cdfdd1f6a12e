"""Browser (Debian chromium): sign-ins from a browser on the same machine are throttled per address too, and an
X-Forwarded-For header counts only when the server is told the connecting peer is a trusted proxy."""

from __future__ import annotations

import pytest

from core.review.auth import MAX_FAILURES
from tests.e2e.harness import chromium, new_context, serve, settle, submit_sign_in
from tests.workspace_factories import PASSWORDS, seeded_db

pytestmark = pytest.mark.browser
ACCOUNTS = ["alice", "bob", "carol", "vic", "admin"]


def _browser(browser, url: str, forwarded: str | None):
    context = new_context(browser)
    if forwarded:
        context.set_extra_http_headers({"X-Forwarded-For": forwarded})
    page = context.new_page()
    page.goto(url)
    settle(page)
    return page


CASES = [
    pytest.param("", None, None, True, id="loopback-browser-is-throttled-by-address"),
    pytest.param("", "198.51.100.1", "198.51.100.2", True, id="forwarded-address-ignored-without-trusted-proxy"),
    pytest.param("127.0.0.1", "198.51.100.1", "198.51.100.2", False, id="trusted-proxy-forwards-each-client"),
]


@pytest.mark.parametrize(("trusted", "first", "second", "refused"), CASES)
def test_per_address_throttle(tmp_path, trusted, first, second, refused):
    seeded = seeded_db(tmp_path)
    with serve(seeded.url, GAUNTLET_TRUSTED_PROXIES=trusted) as served, chromium() as browser:
        guesser = _browser(browser, served.url, first)
        for name in ACCOUNTS[:MAX_FAILURES]:  # one wrong password for each of five accounts: no account is locked
            submit_sign_in(guesser, name, "wrong-password")
        other = _browser(browser, served.url, second)
        submit_sign_in(other, "ana", PASSWORDS["ana"])
        if refused:
            other.get_by_text("Too many failed sign-ins from this address.").wait_for()
        else:
            other.get_by_text("Signed in as ana").wait_for(timeout=30_000)
