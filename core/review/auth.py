"""Accounts, roles and sessions: argon2 password hashes, login (throttled, constant-cost), idle expiry, and the write
check every write path calls."""

from __future__ import annotations

import hashlib
import hmac
import math
import re
import secrets
import unicodedata
from collections.abc import Collection
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from sqlalchemy import case, or_
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, delete, func, select, update

from core.permissions import ROLES, NotPermitted, require
from core.review.sessions import resolve as resolve_session
from core.review.sessions import revoke_user_sessions, signing_key
from core.store.db import table_of
from core.store.models import AccountChange, LoginFailure, User

SESSION_IDLE_LIMIT = timedelta(hours=8)
MIN_PASSWORD_LENGTH = 8
USERNAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{1,63}")  # matched whole (fullmatch: no trailing \n)
MAX_FAILURES = 5  # attempts per account-and-address (and per trusted device) before each next one must wait ...
FAILURE_WINDOW = timedelta(minutes=15)  # ... a counter is forgotten this long after its last counted attempt
FIRST_DELAY = timedelta(seconds=30)  # the wait once a limit is reached, doubling with each further attempt ...
MAX_DELAY = timedelta(minutes=15)  # ... up to this
# Attempts counted per scope before delays start. An address is limited only for attempts on unknown accounts
# ("unknown") or at a high rate ("rate"), so a stranger behind the team's proxy (one shared address) cannot lock
# the team out; a browser that signed in to the account before (its device cookie) is limited on its own ("device")
# and is never refused for others' failures.
LIMITS = {"pair": MAX_FAILURES, "account": 2 * MAX_FAILURES, "device": MAX_FAILURES, "unknown": 2 * MAX_FAILURES,
          "rate": 100}

_hasher = PasswordHasher()


class AuthError(Exception):
    """Base class of account and permission errors; the message is safe to show to the user."""


class PermissionDenied(AuthError, NotPermitted):
    """The signed-in user's role does not allow this action."""


class SessionExpired(AuthError):
    """The session has been idle longer than the limit; the user must sign in again."""


THROTTLED_WHERE = {"account": "for this account", "pair": "for this account from this address",
                   "device": "for this account in this browser", "unknown": "for unknown accounts from this address",
                   "rate": "from this address"}


class LoginThrottled(AuthError):
    """Too many failed sign-ins in one scope (THROTTLED_WHERE): refused without checking, for `retry_after`."""

    def __init__(self, scope: str, retry_after: timedelta) -> None:
        seconds = max(1, math.ceil(retry_after.total_seconds()))
        wait = f"{seconds} seconds" if seconds < 60 else \
            f"{math.ceil(seconds / 60)} minute{'s' if math.ceil(seconds / 60) > 1 else ''}"
        super().__init__(f"Too many failed sign-ins {THROTTLED_WHERE[scope]}. Try again in {wait}.")
        self.scope = scope
        self.retry_after = retry_after


class AccountChanged(ValueError):
    """An account edit read an older version of the account than the stored one: nothing was saved."""

    def __init__(self, user: User) -> None:
        by = user.changed_by or "someone"
        at = f"{user.changed_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC" if user.changed_at else "an unknown time"
        super().__init__(f"{user.username} was changed by {by} at {at} after you opened it: reload")
        self.version = user.version


@dataclass(frozen=True)
class Principal:
    """The signed-in user as the app sees it: who, which role and domains, when they logged in and were last active."""

    username: str
    role: str
    domains: tuple[str, ...]
    login_at: datetime
    last_seen: datetime


def now_utc() -> datetime:
    return datetime.now(UTC)


def hash_password(password: str) -> str:
    """An argon2id hash of `password` (salted; the plain text is never stored)."""
    return _hasher.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    """True when `password` matches `password_hash`; False for a mismatch or a malformed/empty hash."""
    if not password_hash:
        return False
    try:
        return _hasher.verify(password_hash, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def generate_password() -> str:
    """A random URL-safe password (about 96 bits)."""
    return secrets.token_urlsafe(12)


def normalize_username(raw: str) -> str:
    """A username as stored: NFKC-normalised, surrounding whitespace removed; ValueError for control/format chars."""
    name = unicodedata.normalize("NFKC", raw or "").strip()
    if any(unicodedata.category(ch).startswith("C") for ch in name):
        raise ValueError("username: must not contain control or format characters (newlines, tabs, zero-width ...)")
    return name


def username_key(raw: str) -> str:
    """What usernames are compared by: NFKC, stripped, casefolded ("ALICE", " alice\\n" and fullwidth alice are one)."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", raw or "").strip().casefold())


def validate_new_user(username: str, role: str, password: str | None) -> None:
    """Raise ValueError naming the field when the new account's username, role or password is unacceptable."""
    if not USERNAME_PATTERN.fullmatch(normalize_username(username)):
        raise ValueError("username: 2-64 characters, letters, digits and _ . @ - (starting with a letter or digit)")
    if role not in ROLES:
        raise ValueError(f"role: must be one of {', '.join(ROLES)}, got {role!r}")
    if password is not None and len(password) < MIN_PASSWORD_LENGTH:
        raise ValueError(f"password: at least {MIN_PASSWORD_LENGTH} characters")


def create_user(
    engine: Engine,
    username: str,
    role: str,
    password: str | None = None,
    domains: list[str] | tuple[str, ...] = (),
    email: str | None = None,
    display_name: str = "",
    actor: str = "cli",
) -> User:
    """Create an account; `password=None` makes an SSO-only account (no password login). Raises ValueError if the
    name, once normalised and casefolded, is taken (so "Alice" or "alice\\n" cannot stand beside "alice"). The
    creation and its role are written to the audit log as done by `actor`."""
    validate_new_user(username, role, password)
    username = normalize_username(username)
    clean_domains = sorted({d.strip() for d in domains if d and d.strip()})
    with Session(engine) as session:
        taken = _users_by_key(session, username_key(username))
        if taken:
            raise ValueError(f"username: {username!r} already exists (as {taken[0].username!r})")
        user = User(
            username=username,
            role=role,
            domains=clean_domains,
            email=(email or None) and email.strip().lower(),
            display_name=display_name or username,
            password_hash=hash_password(password) if password else "",
            changed_by=actor,
            changed_at=now_utc(),
        )
        session.add(user)
        session.add(AccountChange(actor=actor, username=username, field="created", after=role))
        session.commit()
        session.refresh(user)
        return user


def update_user(
    engine: Engine,
    username: str,
    *,
    role: str | None = None,
    domains: list[str] | None = None,
    email: str | None = None,
    active: bool | None = None,
    password: str | None = None,
    actor: str = "cli",
    version: int | None = None,
) -> User:
    """Change an account's role, domains, email, active flag or password; raises ValueError for bad values.

    Only fields that differ from the stored ones are written, in one UPDATE conditional on the version read (bumped
    by it), so a concurrent edit is never overwritten; `version` is the one the caller read the account at, and when
    the account has changed since, AccountChanged ("changed by X at T: reload") and nothing is written. Each change is
    written to the audit log (account_change: `actor`, when, before, after; a password change is logged without any
    value) in the same transaction, and a role or password change, or disabling the account, revokes its sessions.
    """
    with Session(engine) as session:
        user = session.exec(select(User).where(User.username == username)).first()
        if user is None:
            raise ValueError(f"username: no account {username!r}")
        if version is not None and version != user.version:
            raise AccountChanged(user)
        changes = _account_changes(user, role, domains, email, active, password)
        if not changes:
            return user
        _write_changes(session, user, changes, password, actor)
        session.add_all(AccountChange(actor=actor, username=user.username, field=field, before=_shown(before),
                                      after=_shown(after)) for field, (before, after) in changes.items())
        session.commit()
        user = session.exec(select(User).where(User.id == user.id)).one()
    revoking: list[str] = [f for f in ("role", "password") if f in changes]
    revoking += ["active"] if active is False and "active" in changes else []
    if revoking:
        revoke_user_sessions(engine, username, f"{' and '.join(revoking)} changed by {actor}")
    return user


def _write_changes(session: Session, user: User, changes: dict[str, tuple[object, object]], password: str | None,
                   actor: str) -> None:
    """UPDATE only the changed columns of `user`, if it is still at the version read (else AccountChanged)."""
    values = {("password_hash" if f == "password" else f): (hash_password(password or "") if f == "password" else after)
              for f, (_, after) in changes.items()}
    written = session.exec(
        update(User).where(col(User.id) == user.id, col(User.version) == user.version)
        .values(**values, version=user.version + 1, changed_by=actor, changed_at=now_utc())
        .execution_options(synchronize_session=False)
    ).rowcount
    if written != 1:
        session.rollback()
        raise AccountChanged(session.exec(select(User).where(User.id == user.id)).one())


def _account_changes(user: User, role: str | None, domains: list[str] | None, email: str | None,
                     active: bool | None, password: str | None) -> dict[str, tuple[object, object]]:
    """{field: (before, after)} of the requested values that differ from `user`'s (validated)."""
    if role is not None and role not in ROLES:
        raise ValueError(f"role: must be one of {', '.join(ROLES)}, got {role!r}")
    if password is not None and len(password) < MIN_PASSWORD_LENGTH:
        raise ValueError(f"password: at least {MIN_PASSWORD_LENGTH} characters")
    wanted: dict[str, object] = {"role": role, "active": active}
    if domains is not None:
        wanted["domains"] = sorted({d.strip() for d in domains if d and d.strip()})
    if email is not None:
        wanted["email"] = email.strip().lower() or None
    changes = {f: (getattr(user, f), v) for f, v in wanted.items()
               if (v is not None or f == "email") and v != getattr(user, f)}
    if password is not None:
        changes["password"] = ("", "changed")
    return changes


def _shown(value: object) -> str:
    """An audit-log value as text: lists comma-separated, None as ''."""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return "" if value is None else str(value)


def account_changes(engine: Engine, username: str | None = None, limit: int = 200) -> list[AccountChange]:
    """The audit log of account changes, newest first (of one account when `username` is given)."""
    query = select(AccountChange).order_by(col(AccountChange.id).desc()).limit(limit)
    if username is not None:
        query = query.where(AccountChange.username == username)
    with Session(engine) as session:
        return list(session.exec(query).all())


def list_users(engine: Engine) -> list[User]:
    """All accounts ordered by username."""
    with Session(engine) as session:
        return list(session.exec(select(User).order_by(User.username)).all())


def get_user(engine: Engine, username: str) -> User | None:
    with Session(engine) as session:
        return session.exec(select(User).where(User.username == username)).first()


def _principal(user: User, at: datetime) -> Principal:
    return Principal(user.username, user.role, tuple(user.domains or ()), at, at)


def _users_by_key(session: Session, key: str) -> list[User]:
    return [u for u in session.exec(select(User).order_by(col(User.id))).all() if username_key(u.username) == key]


def _login_user(engine: Engine, typed: str) -> User | None:
    """The account a typed username means: the exact normalised name, else the one account with its key."""
    with Session(engine) as session:
        matches = _users_by_key(session, username_key(typed))
    exact = [u for u in matches if u.username == unicodedata.normalize("NFKC", typed or "").strip()]
    return (exact or matches)[0] if len(exact) == 1 or len(matches) == 1 else None


@cache
def _dummy_hash() -> str:
    """A hash nobody knows the password of, with the current parameters: unknown users cost one verification too."""
    return _hasher.hash(secrets.token_urlsafe(16))


def delay_after(attempts: int, limit: int) -> timedelta:
    """How long after the last counted attempt the next one must wait, once `attempts` are counted in a scope whose
    limit is `limit`: nothing below the limit, then FIRST_DELAY doubling per further attempt, up to MAX_DELAY."""
    if attempts < limit:
        return timedelta(0)
    return min(MAX_DELAY, FIRST_DELAY * 2 ** min(attempts - limit, 16))


def _allowed(limit: int, now: datetime):
    """The SQL condition under which a counter may count one more attempt now: its window elapsed, it is under its
    limit, or its growing delay (delay_after) has passed since its last counted attempt."""
    at, failures = col(LoginFailure.at), col(LoginFailure.failures)
    steps = [(failures == n) & (at <= now - delay_after(n, limit)) for n in range(limit, limit + 6)]
    return or_(at <= now - FAILURE_WINDOW, failures < limit, *steps, at <= now - MAX_DELAY)


def _reserve(session: Session, scope: str, key: str, now: datetime) -> None:
    """Count one attempt for `key` in `scope` before its password is checked, in one conditional statement (insert
    the counter, or restart an elapsed window, or add one when allowed: _allowed); LoginThrottled otherwise."""
    elapsed = col(LoginFailure.at) <= now - FAILURE_WINDOW
    limit = LIMITS[scope]
    counted = session.connection().execute(
        _upsert(session)(table_of(LoginFailure))
        .values(scope=scope, key=key, at=now, failures=1)
        .on_conflict_do_update(
            index_elements=["scope", "key"],
            set_={"failures": case((elapsed, 1), else_=col(LoginFailure.failures) + 1), "at": now},
            where=_allowed(limit, now),
        )
        .execution_options(preserve_rowcount=True)
    ).rowcount
    if counted != 1:
        row = session.exec(select(LoginFailure).where(LoginFailure.scope == scope, LoginFailure.key == key)).one()
        raise LoginThrottled(scope, row.at.astimezone(UTC) + delay_after(row.failures, limit) - now)


def _upsert(session: Session):
    """The INSERT construct of the session's dialect (SQLite or PostgreSQL: both have ON CONFLICT ... DO UPDATE)."""
    return {"sqlite": sqlite_insert, "postgresql": postgresql_insert}[session.get_bind().dialect.name]


def attempt_scopes(account: str, address: str | None, known: bool, device: str | None) -> list[tuple[str, str]]:
    """The (scope, key) counters one sign-in attempt is counted in: a browser that signed in to this account before
    (a valid `device` id) only in its own; any other in the account's, the account-and-address's, the address's
    high-rate one and, for an unknown account, the address's unknown-account one."""
    if device:
        return [("device", device)]
    scopes = [("account", account)]
    if address:
        scopes += [("pair", f"{account}|{address}"), ("rate", address)]
        if not known:
            scopes.append(("unknown", address))
    return scopes


def _reserve_attempt(engine: Engine, scopes: list[tuple[str, str]], now: datetime) -> None:
    """Reserve this attempt in every scope; all or none (LoginThrottled naming the first that refused)."""
    with Session(engine) as session:
        for scope, key in scopes:
            _reserve(session, scope, key, now)
        session.commit()
    _forget_elapsed(engine, now)


def _forget_elapsed(engine: Engine, now: datetime) -> None:
    """Delete counters whose window has passed (skipping rows another sign-in holds, so this never waits on one)."""
    with Session(engine) as session:
        elapsed = select(LoginFailure.id).where(col(LoginFailure.at) <= now - FAILURE_WINDOW)
        session.exec(delete(LoginFailure).where(col(LoginFailure.id).in_(elapsed.with_for_update(skip_locked=True))))
        session.commit()


def _release(engine: Engine, scopes: list[tuple[str, str]]) -> None:
    """A successful sign-in: clear the account's, the pair's and the device's counts, and take this attempt back
    from the address's high-rate count."""
    with Session(engine) as session:
        for scope, key in scopes:
            match = (col(LoginFailure.scope) == scope) & (col(LoginFailure.key) == key)
            if scope == "rate":
                session.exec(update(LoginFailure).where(match, col(LoginFailure.failures) > 0)
                             .values(failures=col(LoginFailure.failures) - 1))
            else:
                session.exec(delete(LoginFailure).where(match))
        session.commit()


def device_token(engine: Engine, username: str) -> str:
    """A device cookie value for a browser that just signed in as `username`: a random id signed (HMAC-SHA256, the
    database's session key) together with the account, so it vouches for this browser and this account only."""
    ident = secrets.token_urlsafe(18)
    return f"d1.{ident}.{_device_signature(engine, username_key(username), ident)}"


def _device_signature(engine: Engine, account: str, ident: str) -> str:
    return hmac.new(signing_key(engine), f"device|{account}|{ident}".encode(), hashlib.sha256).hexdigest()


def trusted_device(engine: Engine, token: str | None, account: str) -> str | None:
    """The device id of a device cookie issued for `account` (the casefolded name) by this deployment; None for
    anything else (another account's, another deployment's, forged, absent)."""
    parts = (token or "").split(".")
    if len(parts) != 3 or parts[0] != "d1" or not parts[1]:
        return None
    if not hmac.compare_digest(_device_signature(engine, account, parts[1]), parts[2]):
        return None
    return parts[1]


def authenticate(
    engine: Engine, username: str, password: str, now: datetime | None = None, address: str | None = None,
    device: str | None = None,
) -> Principal | None:
    """A new session principal when the username/password pair is right and the account active, else None.

    Every attempt is counted before the password is checked, in one conditional update per counter (attempt_scopes):
    per account (LIMITS["account"]) and per account-and-address (LIMITS["pair"]); per address only for attempts on
    unknown accounts (LIMITS["unknown"]) or at a high rate (LIMITS["rate"]); a browser presenting a valid device
    cookie for the account (`device`, from device_token) only in its own counter, so others' failures never refuse
    it. Once a counter reaches its limit, each further attempt must wait a growing delay (delay_after: 30 s doubling
    to 15 min) after the last counted one, and is refused (LoginThrottled, saying how long) without checking the
    password, so N concurrent attempts check at most the limit. A counter is forgotten 15 minutes after its last
    counted attempt; a successful sign-in clears the account's, the pair's and the device's. A wrong password and an
    unknown or disabled user cost the same (one argon2 verification). The address is the connection's peer or what a
    trusted proxy forwarded (core.review.addresses); unknown (no browser connection), only the account is counted.
    """
    now = (now or now_utc()).astimezone(UTC)
    account, address = username_key(username)[:200], (address or "")[:200] or None
    user = _login_user(engine, username)
    scopes = attempt_scopes(account, address, user is not None, trusted_device(engine, device, account))
    _reserve_attempt(engine, scopes, now)
    usable = user is not None and user.active and bool(user.password_hash)
    if not verify_password(user.password_hash if usable and user is not None else _dummy_hash(), password or "") or not usable:
        return None
    assert user is not None  # usable implies a user
    _release(engine, scopes)
    if _hasher.check_needs_rehash(user.password_hash):
        _rehash(engine, user, password)
    return _principal(user, now)


def _rehash(engine: Engine, user: User, password: str) -> None:
    """Store the same password under the current argon2 parameters (not a change: no audit, sessions kept, version
    unchanged), unless the password was changed meanwhile."""
    with Session(engine) as session:
        session.exec(update(User).where(col(User.id) == user.id, col(User.password_hash) == user.password_hash)
                     .values(password_hash=hash_password(password)))
        session.commit()


def session_principal(engine: Engine, token: str | None, now: datetime | None = None) -> Principal | None:
    """The principal of a valid session cookie (core.review.sessions), with the account's current role and domains."""
    info = resolve_session(engine, token, now)
    user = get_user(engine, info.username) if info else None
    if info is None or user is None:
        return None
    return replace(_principal(user, now or now_utc()), login_at=info.created_at)


def principal_for_email(engine: Engine, email: str | None, now: datetime | None = None) -> Principal | None:
    """The session principal of the active account whose email matches (single sign-on), else None."""
    if not email:
        return None
    with Session(engine) as session:
        user = session.exec(select(User).where(func.lower(User.email) == email.strip().lower())).first()
    if user is None or not user.active:
        return None
    return _principal(user, now or now_utc())


def ensure_first_admin(engine: Engine) -> str | None:
    """When no account exists, create 'admin' with a random password and return how to sign in; else None."""
    with Session(engine) as session:
        if session.exec(select(func.count()).select_from(User)).one() > 0:
            return None
    password = generate_password()
    create_user(engine, "admin", "admin", password=password, display_name="Administrator")
    return (
        "Created the first account: username 'admin', password "
        f"'{password}'. Sign in on the app's login page and change it on the Users page."
    )


def is_expired(principal: Principal, now: datetime | None = None, idle_limit: timedelta = SESSION_IDLE_LIMIT) -> bool:
    """True when the session has been idle (no activity) for longer than `idle_limit`."""
    return (now or now_utc()) - principal.last_seen > idle_limit


def touch(principal: Principal, now: datetime | None = None) -> Principal:
    """The same session with its last activity moved to `now`."""
    return replace(principal, last_seen=now or now_utc())


def check_access(
    engine: Engine,
    principal: Principal | None,
    roles: Collection[str],
    now: datetime | None = None,
) -> Principal:
    """Re-check before a write: signed in, not expired, account still active and its current role in `roles`.

    Returns the principal refreshed from the database (role or domains changed by an admin take effect at once).
    """
    if principal is None:
        raise PermissionDenied("Sign in first.")
    if is_expired(principal, now):
        raise SessionExpired("Your session expired after 8 hours without activity; sign in again. Nothing was saved.")
    user = get_user(engine, principal.username)
    if user is None or not user.active:
        raise PermissionDenied("This account is disabled.")
    if user.role not in roles:
        raise PermissionDenied(f"The role {user.role!r} may not do this.")
    return replace(principal, role=user.role, domains=tuple(user.domains or ()))


def authorize(engine: Engine, principal: Principal | None, action: str, now: datetime | None = None) -> Principal:
    """The server-side check of every write: a live session of an active account whose current role may do `action`.

    The role is read from the database (a change by an admin takes effect at once) and judged by the permission table;
    a refusal is a PermissionDenied (an AuthError and a PermissionError) with a readable reason.
    """
    current = check_access(engine, principal, ROLES, now)
    try:
        return require(current, action)
    except NotPermitted as refusal:
        raise PermissionDenied(str(refusal)) from None
