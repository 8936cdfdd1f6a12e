"""Sign-in hardening: throttling with growing delays per account and address (stored, so it survives a restart), no username
enumeration by timing, and usernames that only look different (case, width, whitespace, controls) are one name."""

from __future__ import annotations

import statistics
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.review.auth import (
    LIMITS,
    MAX_FAILURES,
    LoginThrottled,
    authenticate,
    create_user,
    normalize_username,
)
from core.store.db import make_engine
from tests.workspace_factories import PASSWORDS, seeded_db

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
ADDRESS = "203.0.113.7"  # a documentation address: only ever a string in the database


@pytest.fixture
def seeded(tmp_path, monkeypatch):
    s = seeded_db(tmp_path)
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", s.url)
    return s


def _fail(engine, username: str, times: int, start: datetime = T0, address: str = ADDRESS) -> None:
    for i in range(times):
        assert authenticate(engine, username, "wrong-password", now=start + timedelta(seconds=i), address=address) is None


@pytest.mark.parametrize("username", ["alice", "mallory"], ids=["real-account", "unknown-account"])
def test_five_failures_from_one_address_make_each_next_try_wait_longer(seeded, username):
    _fail(seeded.engine, username, MAX_FAILURES)  # T0 .. T0+4 s
    with pytest.raises(LoginThrottled, match=r"for this account from this address\. Try again in 24 seconds"):
        authenticate(seeded.engine, username, "wrong-password", now=T0 + timedelta(seconds=10), address=ADDRESS)
    assert authenticate(seeded.engine, username, "wrong-password", now=T0 + timedelta(seconds=34), address=ADDRESS) \
        is None  # 30 s after the fifth: counted, and the next delay doubles
    with pytest.raises(LoginThrottled, match=r"Try again in 54 seconds"):
        authenticate(seeded.engine, username, "wrong-password", now=T0 + timedelta(seconds=40), address=ADDRESS)
    result = authenticate(seeded.engine, username, PASSWORDS.get(username, "x"), now=T0 + timedelta(seconds=94),
                          address=ADDRESS)
    assert (result is not None) is (username == "alice")


def test_another_address_is_not_held_up_by_one_address_failures(seeded):
    _fail(seeded.engine, "alice", MAX_FAILURES)
    assert authenticate(seeded.engine, "alice", PASSWORDS["alice"], now=T0 + timedelta(seconds=10),
                        address="198.51.100.1")


def test_failures_on_real_accounts_do_not_lock_their_address(seeded):
    for i, name in enumerate(["alice", "bob", "carol", "trent"]):
        _fail(seeded.engine, name, MAX_FAILURES, T0 + timedelta(seconds=10 * i))
    assert authenticate(seeded.engine, "ana", PASSWORDS["ana"], now=T0 + timedelta(minutes=2), address=ADDRESS)


def test_an_address_is_limited_for_attempts_on_unknown_accounts(seeded):
    for i in range(LIMITS["unknown"]):
        _fail(seeded.engine, f"nobody{i}", 1, T0 + timedelta(seconds=i))
    with pytest.raises(LoginThrottled, match="for unknown accounts from this address"):
        authenticate(seeded.engine, "nobody-else", "x", now=T0 + timedelta(seconds=20), address=ADDRESS)
    assert authenticate(seeded.engine, "ana", PASSWORDS["ana"], now=T0 + timedelta(seconds=20), address=ADDRESS)


def test_twenty_five_wrong_passwords_then_the_right_one_is_refused(seeded):
    refused = 0
    for i in range(25):
        try:
            authenticate(seeded.engine, "alice", "wrong-password", now=T0 + timedelta(seconds=i), address=ADDRESS)
        except LoginThrottled:
            refused += 1
    assert refused == 25 - MAX_FAILURES
    with pytest.raises(LoginThrottled):
        authenticate(seeded.engine, "alice", PASSWORDS["alice"], now=T0 + timedelta(seconds=30), address=ADDRESS)
    # refused attempts are not counted: the delay runs from the fifth failure, not from the last try
    assert authenticate(seeded.engine, "alice", PASSWORDS["alice"], now=T0 + timedelta(seconds=35), address=ADDRESS)


def test_throttle_survives_a_restart(seeded):
    _fail(seeded.engine, "alice", MAX_FAILURES)
    seeded.engine.dispose()
    with pytest.raises(LoginThrottled):
        authenticate(make_engine(seeded.url), "alice", PASSWORDS["alice"], now=T0 + timedelta(seconds=10),
                     address=ADDRESS)


def test_success_clears_the_account_failures(seeded):
    _fail(seeded.engine, "alice", MAX_FAILURES - 1)
    assert authenticate(seeded.engine, "alice", PASSWORDS["alice"], now=T0 + timedelta(seconds=10), address="a")
    _fail(seeded.engine, "alice", MAX_FAILURES - 1, T0 + timedelta(seconds=20), address="b")
    assert authenticate(seeded.engine, "alice", PASSWORDS["alice"], now=T0 + timedelta(seconds=30), address="c")


def _seconds(engine, username: str, address: str) -> float:
    start = time.perf_counter()
    assert authenticate(engine, username, "wrong-password", address=address) is None
    return time.perf_counter() - start


def test_unknown_user_and_wrong_password_take_comparable_time(seeded):
    _seconds(seeded.engine, "warm-up", "warm-up")  # the first unknown user also hashes the dummy password once
    unknown = [_seconds(seeded.engine, f"nobody{i}", f"u{i}") for i in range(3)]
    wrong = [_seconds(seeded.engine, name, f"w{i}") for i, name in enumerate(["alice", "bob", "carol"])]
    ratio = statistics.median(wrong) / statistics.median(unknown)
    assert 1 / 3 < ratio < 3, f"wrong password {statistics.median(wrong):.3f} s vs unknown {statistics.median(unknown):.3f} s"


@pytest.mark.parametrize(
    "username",
    [
        pytest.param("alice\n", id="trailing-newline"),
        pytest.param("  alice ", id="surrounding-spaces"),
        pytest.param("ALICE", id="case"),
        pytest.param("\uff41\uff4c\uff49\uff43\uff45", id="fullwidth"),
        pytest.param("alice\u00a0", id="no-break-space"),
    ],
)
def test_lookalike_of_an_existing_name_is_rejected(seeded, username):
    with pytest.raises(ValueError, match="already exists"):
        create_user(seeded.engine, username, "expert", password="long-enough-1")


@pytest.mark.parametrize(
    "username",
    [pytest.param("al\u200bice", id="zero-width-space"), pytest.param("al\x00ice", id="nul"),
     pytest.param("ali\tce", id="tab"), pytest.param("al\u202eice", id="bidi-override")],
)
def test_control_and_format_characters_are_rejected(seeded, username):
    with pytest.raises(ValueError, match="username"):
        create_user(seeded.engine, username, "expert", password="long-enough-1")


@pytest.mark.parametrize("typed", ["alice", " alice\n", "Alice", "\uff41lice"], ids=["exact", "spaces", "case", "width"])
def test_sign_in_compares_normalised_names(seeded, typed):
    principal = authenticate(seeded.engine, typed, PASSWORDS["alice"], address="a")
    assert principal is not None and principal.username == "alice"


def test_new_names_are_stored_normalised(seeded):
    create_user(seeded.engine, " Dora\n", "viewer", password="long-enough-1")
    assert normalize_username(" Dora\n") == "Dora"
    assert authenticate(seeded.engine, "dora", "long-enough-1", address="a").username == "Dora"


def test_login_page_says_how_long_to_wait(seeded):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30).run()
    for _ in range(LIMITS["account"] + 1):  # AppTest has no client address: the account's limit applies
        at.text_input(key="login_username").set_value("alice")
        at.text_input(key="login_password").set_value("wrong-password")
        at.button[0].click().run()
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "Too many failed sign-ins" in errors[0] and "Try again in" in errors[0], errors
    assert "gauntlet_principal" not in at.session_state


def test_unknown_addresses_are_not_one_shared_lock(seeded) -> None:
    """Five wrong passwords for one account from an unknown address do not lock another account out."""
    for i in range(5):
        assert authenticate(seeded.engine, "alice", "wrong-password", now=T0 + timedelta(seconds=i)) is None
    assert authenticate(seeded.engine, "ana", PASSWORDS["ana"], now=T0 + timedelta(seconds=10)) is not None
