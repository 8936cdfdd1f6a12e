"""A stranger cannot turn the sign-in throttle against the team (issue 41, item 3). Behind a reverse proxy with no
trusted proxies configured every sign-in comes from one address (the proxy's): a stranger's wrong passwords on the
team's accounts, on unknown accounts and at a high rate from that address never refuse a right password from a
browser that signed in before (its device cookie), and failures on real accounts do not refuse the address at all."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta

import pytest

from core.review.auth import LIMITS, LoginThrottled, authenticate, device_token, trusted_device, username_key
from tests.workspace_factories import PASSWORDS, seeded_db

T0 = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
PROXY = "127.0.0.1"  # every browser behind the team's proxy, as the app sees it without GAUNTLET_TRUSTED_PROXIES
TEAM = ["alice", "bob", "carol", "ana"]


@pytest.fixture
def seeded(tmp_path):
    return seeded_db(tmp_path)


def stranger(engine, seconds: int) -> dict[str, int]:
    """One try a second for `seconds` from the proxy's address, cycling through the team's accounts with wrong
    passwords and unknown accounts: how many were checked and how many refused."""
    outcome = {"checked": 0, "refused": 0}
    for i in range(seconds):
        name = TEAM[(i // 2) % len(TEAM)] if i % 2 else f"guess{i}"
        try:
            authenticate(engine, name, "wrong-password", now=T0 + timedelta(seconds=i), address=PROXY)
            outcome["checked"] += 1
        except LoginThrottled:
            outcome["refused"] += 1
    return outcome


def test_a_browser_that_signed_in_before_is_never_locked_out_by_a_stranger_behind_the_same_proxy(seeded):
    devices = {name: device_token(seeded.engine, name) for name in TEAM}  # each signed in once, some time ago
    attack = stranger(seeded.engine, 600)  # ten minutes, one try a second
    after = T0 + timedelta(seconds=600)
    with pytest.raises(LoginThrottled, match="for this account from this address"):  # a new browser must wait ...
        authenticate(seeded.engine, "alice", PASSWORDS["alice"], now=after, address=PROXY)
    for name in TEAM:  # ... yet every browser that signed in before gets in at once
        principal = authenticate(seeded.engine, name, PASSWORDS[name], now=after, address=PROXY, device=devices[name])
        assert principal is not None and principal.username == name
    assert attack["checked"] < 600 // 4, attack  # the stranger checked few passwords


def test_failures_on_team_accounts_alone_do_not_refuse_a_teammate_behind_the_same_proxy(seeded):
    for i in range(40):  # wrong passwords for three teammates' accounts, a few seconds apart
        with contextlib.suppress(LoginThrottled):
            authenticate(seeded.engine, TEAM[i % 3], "wrong-password", now=T0 + timedelta(seconds=3 * i), address=PROXY)
    assert authenticate(seeded.engine, "ana", PASSWORDS["ana"], now=T0 + timedelta(seconds=121), address=PROXY)


def test_a_device_is_limited_on_its_own(seeded):
    device = device_token(seeded.engine, "alice")
    for i in range(LIMITS["device"]):
        assert authenticate(seeded.engine, "alice", "wrong", now=T0 + timedelta(seconds=i), address=PROXY,
                            device=device) is None
    with pytest.raises(LoginThrottled, match="for this account in this browser"):
        authenticate(seeded.engine, "alice", PASSWORDS["alice"], now=T0 + timedelta(seconds=10), address=PROXY,
                     device=device)
    # the browser's own failures did not count against the account for other browsers
    assert authenticate(seeded.engine, "alice", PASSWORDS["alice"], now=T0 + timedelta(seconds=10),
                        address="198.51.100.4")


@pytest.mark.parametrize("token", [
    pytest.param(lambda engine: device_token(engine, "bob"), id="another-accounts-device"),
    pytest.param(lambda engine: "d1.forged.0000", id="forged"),
    pytest.param(lambda engine: device_token(engine, "alice").rsplit(".", 1)[0] + ".ab", id="bad-signature"),
    pytest.param(lambda engine: "", id="none"),
])
def test_only_a_device_cookie_issued_for_the_account_is_trusted(seeded, token):
    assert trusted_device(seeded.engine, token(seeded.engine), username_key("alice")) is None


def test_a_device_cookie_is_trusted_under_any_spelling_of_the_name(seeded):
    device = device_token(seeded.engine, "Alice")
    assert trusted_device(seeded.engine, device, username_key(" ALICE ")) is not None
