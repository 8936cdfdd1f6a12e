"""Accounts, password hashing, first admin, session expiry and the write check."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from core.review.auth import (
    PermissionDenied,
    Principal,
    SessionExpired,
    authenticate,
    check_access,
    create_user,
    ensure_first_admin,
    hash_password,
    is_expired,
    principal_for_email,
    update_user,
    verify_password,
)
from core.store.db import make_engine, upgrade
from tests.workspace_factories import PASSWORDS, principal, seeded_db

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def seeded(tmp_path):
    return seeded_db(tmp_path)


@pytest.fixture
def empty_engine(tmp_path):
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    upgrade(url)
    return make_engine(url)


def test_hash_is_argon2_and_verifies():
    h = hash_password("s3cret-pass")
    assert h.startswith("$argon2id$") and "s3cret-pass" not in h
    assert verify_password(h, "s3cret-pass")
    assert not verify_password(h, "wrong-pass")
    assert not verify_password("", "anything")
    assert not verify_password("not-a-hash", "anything")


@pytest.mark.parametrize(
    "name, username, password, expected_role",
    [
        ("right password", "alice", PASSWORDS["alice"], "expert"),
        ("admin", "admin", PASSWORDS["admin"], "admin"),
        ("wrong password", "alice", "nope-nope-nope", None),
        ("unknown user", "mallory", "whatever-1", None),
        ("empty password", "alice", "", None),
    ],
)
def test_authenticate(seeded, name, username, password, expected_role):
    p = authenticate(seeded.engine, username, password)
    assert (p.role if p else None) == expected_role, name


def test_authenticate_refuses_disabled_account(seeded):
    update_user(seeded.engine, "bob", active=False)
    assert authenticate(seeded.engine, "bob", PASSWORDS["bob"]) is None


@pytest.mark.parametrize(
    "name, username, role, password, message",
    [
        ("bad role", "zed", "superuser", "long-enough", "role"),
        ("short password", "zed", "expert", "short", "password"),
        ("bad username", "a b", "expert", "long-enough", "username"),
        ("taken", "alice", "expert", "long-enough", "already exists"),
    ],
)
def test_create_user_rejects(seeded, name, username, role, password, message):
    with pytest.raises(ValueError, match=message):
        create_user(seeded.engine, username, role, password=password)


def test_sso_maps_email_case_insensitively(seeded):
    p = principal_for_email(seeded.engine, "Carol@Example.com")
    assert p is not None and p.username == "carol" and p.domains == ("Medical",)
    assert principal_for_email(seeded.engine, "nobody@example.com") is None


def test_ensure_first_admin_creates_once(empty_engine):
    message = ensure_first_admin(empty_engine)
    assert message and "admin" in message
    password = message.split("password '")[1].split("'")[0]
    assert authenticate(empty_engine, "admin", password).role == "admin"
    assert ensure_first_admin(empty_engine) is None


@pytest.mark.parametrize(
    "name, idle, expired",
    [("fresh", timedelta(minutes=5), False), ("just under 8h", timedelta(hours=7, minutes=59), False),
     ("over 8h idle", timedelta(hours=8, minutes=1), True)],
)
def test_idle_expiry(name, idle, expired):
    p = Principal("alice", "expert", ("Energy",), NOW - timedelta(days=1), NOW - idle)
    assert is_expired(p, NOW) is expired, name


@pytest.mark.parametrize(
    "name, who, roles, idle, error",
    [
        ("expert may label", "alice", {"expert", "admin"}, timedelta(0), None),
        ("viewer may not label", "vic", {"expert", "admin"}, timedelta(0), PermissionDenied),
        ("analyst may not adjudicate", "ana", {"admin"}, timedelta(0), PermissionDenied),
        ("expired session may not write", "alice", {"expert"}, timedelta(hours=9), SessionExpired),
    ],
)
def test_check_access(seeded, name, who, roles, idle, error):
    p = principal(who, datetime.now(UTC) - idle)
    if error is None:
        assert check_access(seeded.engine, p, roles).username == who
    else:
        with pytest.raises(error):
            check_access(seeded.engine, p, roles)


def test_check_access_sees_role_changes_at_once(seeded):
    p = principal("alice")
    update_user(seeded.engine, "alice", role="viewer")
    with pytest.raises(PermissionDenied):
        check_access(seeded.engine, p, {"expert"})
    with pytest.raises(PermissionDenied):
        check_access(seeded.engine, None, {"expert"})
