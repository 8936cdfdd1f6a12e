"""Browser sessions that survive a reload: signed, expiring, revocable tokens kept in an HttpOnly cookie.

A token reads `v1.<row id>.<secret>.<expiry epoch>.<signature>`: the signature is an HMAC-SHA256 over the rest with a
key generated once per database (table app_secret), the database keeps only the SHA-256 of the secret. A token is
valid while its signature matches, it has not expired (absolute lifetime, and idle limit), it was not revoked and its
account is still active. Sign-in never puts a session token in a URL: the app issues a one-minute, single-use handoff
code that the cookie endpoint (ui.serve) redeems for the session token it sets as the cookie. The code is bound to the
sign-in nonce of the browser that signed in (an HttpOnly, SameSite=Strict cookie the server set before the sign-in), and
redeemed only with that nonce: another site cannot hand its own code to a visitor's browser (login CSRF).

Cookies are named per deployment (cookie_names: a suffix derived from the database's signing key), so a second
service on another port of the same host (browsers do not separate cookies by port) neither reads nor overwrites
ours under its own name, and a token it plants under our name fails our signature unless our server issued it.
Served over HTTPS, every cookie is a `__Host-` cookie (Secure, Path=/, no Domain): a plain-HTTP service on the same
host never receives it and cannot set or overwrite it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select, update

from core.store.db import saved_id
from core.store.models import AppSecret, SessionToken, User

COOKIE_NAME = "gauntlet_session"  # the stem of the session cookie's name (cookie_names adds the deployment's suffix)
NONCE_COOKIE = "gauntlet_signin_nonce"
DEVICE_COOKIE = "gauntlet_device"  # a browser that signed in before (core.review.auth.device_token)
DEVICE_LIFETIME = timedelta(days=180)
HOST_PREFIX = "__Host-"
SESSION_LIFETIME = timedelta(hours=12)
IDLE_LIMIT = timedelta(hours=8)
HANDOFF_LIFETIME = timedelta(minutes=1)
TOUCH_EVERY = timedelta(minutes=1)  # last_seen is written at most this often
SIGNING_KEY = "session_signing_key"
VERSION = "v1"


@dataclass(frozen=True)
class SessionInfo:
    """A valid session: its row id, account and start."""

    id: int
    username: str
    created_at: datetime


def _now(now: datetime | None) -> datetime:
    return (now or datetime.now(UTC)).astimezone(UTC)


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def signing_key(engine: Engine) -> bytes:
    """The database's session-signing key, created on first use (concurrent creators agree on the stored one)."""
    with Session(engine) as session:
        row = session.get(AppSecret, SIGNING_KEY)
        if row is None:
            try:
                session.add(AppSecret(name=SIGNING_KEY, value=secrets.token_hex(32)))
                session.commit()
            except IntegrityError:
                session.rollback()
            row = session.get_one(AppSecret, SIGNING_KEY)
        return bytes.fromhex(row.value)


@dataclass(frozen=True)
class CookieNames:
    """This deployment's cookie names for one scheme: `secure` (HTTPS) names carry the `__Host-` prefix."""

    session: str
    nonce: str
    device: str
    secure: bool

    @property
    def path(self) -> str | None:
        """The Path a `__Host-` cookie must have ("/"); None: the app's own base path."""
        return "/" if self.secure else None


def deployment_id(engine: Engine) -> str:
    """A short id of this deployment, derived from its database's signing key (not the key itself)."""
    return hmac.new(signing_key(engine), b"cookie names", hashlib.sha256).hexdigest()[:12]


def cookie_names(engine: Engine, secure: bool) -> CookieNames:
    """This deployment's cookie names, `__Host-`-prefixed when served over HTTPS."""
    prefix, suffix = HOST_PREFIX if secure else "", deployment_id(engine)
    session, nonce, device = (f"{prefix}{stem}_{suffix}" for stem in (COOKIE_NAME, NONCE_COOKIE, DEVICE_COOKIE))
    return CookieNames(session=session, nonce=nonce, device=device, secure=secure)


def _sign(key: bytes, body: str) -> str:
    return hmac.new(key, body.encode(), hashlib.sha256).hexdigest()


def _create(engine: Engine, username: str, kind: str, lifetime: timedelta, now: datetime, bound_to: str = "") -> str:
    secret = secrets.token_urlsafe(32)
    expires = now + lifetime
    with Session(engine) as session:
        row = SessionToken(kind=kind, username=username, token_hash=_digest(secret), created_at=now,
                           expires_at=expires, last_seen=now, bound_to=bound_to)
        session.add(row)
        session.commit()
        body = f"{VERSION}.{row.id}.{secret}.{int(expires.timestamp())}"
    return f"{body}.{_sign(signing_key(engine), body)}"


def _parse(engine: Engine, token: str | None, now: datetime) -> tuple[int, str] | None:
    """(row id, secret) of a well-formed, correctly signed, unexpired token; None otherwise."""
    parts = (token or "").split(".")
    if len(parts) != 5 or parts[0] != VERSION or not parts[1].isdigit() or not parts[3].isdigit():
        return None
    body, signature = ".".join(parts[:4]), parts[4]
    if not hmac.compare_digest(_sign(signing_key(engine), body), signature):
        return None
    if int(parts[3]) <= now.timestamp():
        return None
    return int(parts[1]), parts[2]


def _live_row(session: Session, token: str | None, kind: str, now: datetime, engine: Engine) -> SessionToken | None:
    parsed = _parse(engine, token, now)
    if parsed is None:
        return None
    row = session.get(SessionToken, parsed[0])
    if row is None or row.kind != kind or row.revoked_at is not None or _aware(row.expires_at) <= now:
        return None
    if not hmac.compare_digest(row.token_hash, _digest(parsed[1])):
        return None
    return row


def new_nonce() -> str:
    """A browser's sign-in nonce (the cookie NONCE_COOKIE), set before it signs in."""
    return secrets.token_urlsafe(32)


def issue_handoff(engine: Engine, username: str, nonce: str, now: datetime | None = None) -> str:
    """A single-use code, valid HANDOFF_LIFETIME, that the cookie endpoint exchanges for a session of `username`, only
    in the browser whose sign-in nonce is `nonce` (ValueError without one)."""
    if not nonce:
        raise ValueError("a sign-in handoff needs the browser's sign-in nonce")
    return _create(engine, username, "handoff", HANDOFF_LIFETIME, _now(now), bound_to=_digest(nonce))


def redeem_handoff(engine: Engine, code: str | None, nonce: str | None, now: datetime | None = None) -> str | None:
    """The new session token for a valid, unused handoff code (which is used up) presented with the nonce of the
    browser it was issued to; None otherwise (a code from another browser is left as it is)."""
    now = _now(now)
    with Session(engine) as session:
        row = _live_row(session, code, "handoff", now, engine)
        if row is None or not nonce or not hmac.compare_digest(row.bound_to, _digest(nonce)):
            return None
        used = session.exec(update(SessionToken).where(col(SessionToken.id) == row.id,
                                                       col(SessionToken.revoked_at).is_(None))
                            .values(revoked_at=now, revoked_reason="used")).rowcount
        session.commit()
        username = row.username
    if used != 1 or not _active(engine, username):
        return None
    return _create(engine, username, "session", SESSION_LIFETIME, now)


def _active(engine: Engine, username: str) -> bool:
    with Session(engine) as session:
        user = session.exec(select(User).where(User.username == username)).first()
    return user is not None and user.active


def resolve(engine: Engine, token: str | None, now: datetime | None = None) -> SessionInfo | None:
    """The session a cookie value stands for, its activity refreshed; None when invalid, expired, idle past
    IDLE_LIMIT, revoked, or its account is gone or disabled."""
    now = _now(now)
    with Session(engine) as session:
        row = _live_row(session, token, "session", now, engine)
        if row is None or now - _aware(row.last_seen) > IDLE_LIMIT:
            return None
        if now - _aware(row.last_seen) > TOUCH_EVERY:
            row.last_seen = now
            session.add(row)
            session.commit()
        info = SessionInfo(saved_id(row), row.username, _aware(row.created_at))
    return info if _active(engine, info.username) else None


def revoked_reason(engine: Engine, token: str | None) -> str:
    """Why a correctly signed session token was revoked ('' when it was not, or the token is not one of ours)."""
    parsed = _parse(engine, token, datetime.fromtimestamp(0, UTC))
    if parsed is None:
        return ""
    with Session(engine) as session:
        row = session.get(SessionToken, parsed[0])
    if row is None or not hmac.compare_digest(row.token_hash, _digest(parsed[1])):
        return ""
    return row.revoked_reason if row.revoked_at is not None else ""


def is_live(engine: Engine, token: str | None, now: datetime | None = None) -> bool:
    """True when `token` is a live session (valid, unexpired, not idle past the limit, not revoked)."""
    now = _now(now)
    with Session(engine) as session:
        row = _live_row(session, token, "session", now, engine)
        return row is not None and now - _aware(row.last_seen) <= IDLE_LIMIT


def revoke(engine: Engine, token: str | None, reason: str = "signed out", now: datetime | None = None) -> bool:
    """Revoke the session of a cookie value (sign-out); True when one was live."""
    now = _now(now)
    with Session(engine) as session:
        row = _live_row(session, token, "session", now, engine)
        if row is None:
            return False
        row.revoked_at, row.revoked_reason = now, reason
        session.add(row)
        session.commit()
    return True


def revoke_user_sessions(engine: Engine, username: str, reason: str, now: datetime | None = None) -> int:
    """Revoke every live session and handoff of `username` (role or password changed, account disabled)."""
    with Session(engine) as session:
        count = session.exec(update(SessionToken).where(col(SessionToken.username) == username,
                                                        col(SessionToken.revoked_at).is_(None))
                             .values(revoked_at=_now(now), revoked_reason=reason)).rowcount
        session.commit()
    return int(count or 0)


def live_sessions(engine: Engine, username: str, now: datetime | None = None) -> int:
    """How many unrevoked, unexpired sessions `username` has."""
    now = _now(now)
    with Session(engine) as session:
        rows = session.exec(select(SessionToken).where(SessionToken.username == username,
                                                       SessionToken.kind == "session",
                                                       col(SessionToken.revoked_at).is_(None))).all()
    return sum(1 for r in rows if _aware(r.expires_at) > now and now - _aware(r.last_seen) <= IDLE_LIMIT)
