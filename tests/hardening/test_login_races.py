"""The sign-in throttle under concurrency: attempts released together (a barrier) check at most the limit of the
scope that stops them (LIMITS: per account, per account-and-address, per address for unknown accounts), on both
backends; and the address a sign-in is throttled by (peer, trusted proxies)."""

from __future__ import annotations

import os
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlmodel import Session, select

from core.review import auth
from core.review.addresses import client_address, parse_trusted_proxies
from core.review.auth import LIMITS, LoginThrottled, authenticate
from core.store.models import LoginFailure
from tests.workspace_factories import PASSWORDS, seeded_db


@pytest.fixture
def seeded(tmp_path):
    return seeded_db(tmp_path)


@pytest.fixture
def checks(monkeypatch) -> Counter:
    """Counts the password verifications authenticate performs."""
    counted, lock, verify = Counter(), threading.Lock(), auth.verify_password

    def counting(password_hash: str, password: str) -> bool:
        with lock:
            counted["checks"] += 1
        return verify(password_hash, password)

    monkeypatch.setattr(auth, "verify_password", counting)
    return counted


def _together(engine, attempts: list[tuple[str, str, str | None]]) -> Counter:
    """Run the (username, password, address) attempts in threads released at once; outcomes counted."""
    barrier = threading.Barrier(len(attempts))

    def attempt(username: str, password: str, address: str | None) -> str:
        barrier.wait()
        try:
            return "signed in" if authenticate(engine, username, password, address=address) else "wrong"
        except LoginThrottled as refused:
            return f"refused {refused.scope}"

    with ThreadPoolExecutor(len(attempts)) as pool:
        return Counter(pool.map(lambda a: attempt(*a), attempts))


ACCOUNT, PAIR, UNKNOWN = LIMITS["account"], LIMITS["pair"], LIMITS["unknown"]
RACES = [
    pytest.param([("alice", "wrong-password", f"198.51.100.{i}") for i in range(24)],
                 {"wrong": ACCOUNT, "refused account": 24 - ACCOUNT}, ACCOUNT, id="24-wrong-one-account"),
    pytest.param([(f"user{i}", "wrong-password", "203.0.113.7") for i in range(24)],
                 {"wrong": UNKNOWN, "refused unknown": 24 - UNKNOWN}, UNKNOWN, id="24-unknown-accounts-one-address"),
    pytest.param([("alice", "wrong-password", "127.0.0.1") for _ in range(10)],
                 {"wrong": PAIR, "refused pair": 10 - PAIR}, PAIR, id="10-tabs-one-browser"),
    pytest.param([("alice", "wrong-password", None) for _ in range(12)],
                 {"wrong": ACCOUNT, "refused account": 12 - ACCOUNT}, ACCOUNT, id="12-wrong-unknown-address"),
]


@pytest.mark.parametrize(("attempts", "expected", "limit"), RACES)
def test_concurrent_attempts_check_at_most_the_limit(seeded, checks, attempts, expected, limit):
    outcomes = _together(seeded.engine, attempts)
    assert outcomes == Counter(expected)
    assert checks["checks"] == limit
    with Session(seeded.engine) as session:
        assert max(session.exec(select(LoginFailure.failures)).all()) == limit


def test_concurrent_right_passwords_after_failures_one_short_of_the_limit_check_one(seeded, checks):
    _together(seeded.engine, [("alice", "wrong-password", f"198.51.100.{i}") for i in range(ACCOUNT - 1)])
    outcomes = _together(seeded.engine, [("alice", PASSWORDS["alice"], f"192.0.2.{i}") for i in range(8)])
    assert outcomes == Counter({"signed in": 1, "refused account": 7})
    assert checks["checks"] == ACCOUNT


PROXIES = "127.0.0.1, 10.0.0.0/8, ::1"
ADDRESS_CASES = [
    pytest.param("127.0.0.1", None, "", "127.0.0.1", id="loopback-browser-is-throttled-as-itself"),
    pytest.param("::1", None, "", "::1", id="loopback-v6"),
    pytest.param("127.0.0.1", "198.51.100.9", "", "127.0.0.1", id="forwarded-ignored-without-trusted-proxies"),
    pytest.param("192.0.2.5", "198.51.100.9", PROXIES, "192.0.2.5", id="forwarded-ignored-from-untrusted-peer"),
    pytest.param("127.0.0.1", "198.51.100.9", PROXIES, "198.51.100.9", id="trusted-loopback-proxy"),
    pytest.param("10.1.2.3", "198.51.100.9", PROXIES, "198.51.100.9", id="trusted-proxy-in-network"),
    pytest.param("127.0.0.1", "1.2.3.4, 198.51.100.9", PROXIES, "198.51.100.9", id="client-claim-left-of-proxy-ignored"),
    pytest.param("127.0.0.1", "198.51.100.9, 10.0.0.2", PROXIES, "198.51.100.9", id="chain-of-trusted-proxies"),
    pytest.param("127.0.0.1", "198.51.100.9:4711", PROXIES, "198.51.100.9", id="forwarded-with-port"),
    pytest.param("127.0.0.1", "[2001:db8::7]:443", PROXIES, "2001:db8::7", id="forwarded-v6-with-port"),
    pytest.param("127.0.0.1", "garbage", PROXIES, "127.0.0.1", id="unusable-forwarded-means-the-proxy"),
    pytest.param("127.0.0.1", "", PROXIES, "127.0.0.1", id="trusted-proxy-without-header"),
    pytest.param(None, "198.51.100.9", PROXIES, None, id="no-peer"),
]


@pytest.mark.parametrize(("peer", "forwarded", "trusted", "expected"), ADDRESS_CASES)
def test_client_address(peer, forwarded, trusted, expected):
    assert client_address(peer, forwarded, parse_trusted_proxies(trusted)) == expected


def test_a_bad_trusted_proxy_entry_is_named():
    with pytest.raises(ValueError, match="GAUNTLET_TRUSTED_PROXIES: 'proxy.local' is not an address or network"):
        parse_trusted_proxies("127.0.0.1, proxy.local")


@pytest.mark.parametrize(("setting", "expected"), [pytest.param("", "", id="unset-trusts-none"),
                                                   pytest.param("127.0.0.1,10.0.0.0/8", "127.0.0.1/32,10.0.0.0/8",
                                                                id="configured")])
def test_the_server_honours_forwarded_headers_only_from_trusted_proxies(monkeypatch, setting, expected):
    from ui.serve import trust_configured_proxies

    monkeypatch.setenv("GAUNTLET_TRUSTED_PROXIES", setting)
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", "/nonexistent/secrets.toml")
    monkeypatch.delenv("FORWARDED_ALLOW_IPS", raising=False)
    trust_configured_proxies()
    assert os.environ["FORWARDED_ALLOW_IPS"] == expected
