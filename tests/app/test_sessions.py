"""Session tokens (core.review.sessions): signed, expiring, revocable; a sign-in handoff code is single-use; sessions
end on sign-out and when an account's role or password changes or it is disabled; the cookie endpoint in ui.serve."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import Session, select
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from core.config import REPO_ROOT as ROOT
from core.review import sessions
from core.review.auth import session_principal, update_user
from core.store.db import make_engine
from core.store.models import SessionToken
from tests.workspace_factories import seeded_db
from ui.serve import SessionCookies, plain_http_warning, safe_next

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@pytest.fixture
def engine(tmp_path, monkeypatch):
    seeded = seeded_db(tmp_path)
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", seeded.url)
    return seeded.engine


NONCE = "browser-nonce-of-the-signing-in-browser"


def new_session(engine, who: str = "alice", at: datetime = T0) -> str:
    return sessions.redeem_handoff(engine, sessions.issue_handoff(engine, who, NONCE, at), NONCE, at)


def test_a_handoff_code_is_used_once(engine):
    code = sessions.issue_handoff(engine, "alice", NONCE, T0)
    token = sessions.redeem_handoff(engine, code, NONCE, T0 + timedelta(seconds=5))
    assert token and sessions.resolve(engine, token, T0 + timedelta(seconds=6)).username == "alice"
    assert sessions.redeem_handoff(engine, code, NONCE, T0 + timedelta(seconds=7)) is None
    assert sessions.resolve(engine, code, T0) is None  # a handoff code is not a session


@pytest.mark.parametrize("nonce", [pytest.param("another-browsers-nonce", id="another-browser"),
                                   pytest.param("", id="no-nonce"), pytest.param(None, id="no-cookie")])
def test_a_handoff_code_is_redeemed_only_in_the_browser_it_was_issued_to(engine, nonce):
    code = sessions.issue_handoff(engine, "alice", NONCE, T0)
    assert sessions.redeem_handoff(engine, code, nonce, T0 + timedelta(seconds=5)) is None
    assert sessions.redeem_handoff(engine, code, NONCE, T0 + timedelta(seconds=6))  # not used up by the refusal


def test_a_handoff_needs_a_nonce(engine):
    with pytest.raises(ValueError, match="nonce"):
        sessions.issue_handoff(engine, "alice", "", T0)


def _tamper(token: str, part: int, value: str) -> str:
    parts = token.split(".")
    parts[part] = value
    return ".".join(parts)


RESOLVE_CASES = [
    pytest.param(lambda t: t, timedelta(minutes=5), "alice", id="valid"),
    pytest.param(lambda t: _tamper(t, 4, "0" * 64), timedelta(minutes=5), None, id="forged-signature"),
    pytest.param(lambda t: _tamper(t, 2, "guessed-secret"), timedelta(minutes=5), None, id="other-secret"),
    pytest.param(lambda t: _tamper(t, 3, str(int((T0 + timedelta(days=30)).timestamp()))), timedelta(minutes=5), None,
                 id="extended-expiry"),
    pytest.param(lambda t: t, sessions.SESSION_LIFETIME + timedelta(seconds=1), None, id="expired"),
    pytest.param(lambda t: "", timedelta(0), None, id="empty"),
    pytest.param(lambda t: "v1.1.x.1.y", timedelta(0), None, id="malformed"),
]


@pytest.mark.parametrize(("change", "later", "expected"), RESOLVE_CASES)
def test_resolve(engine, change, later, expected):
    token = change(new_session(engine))
    info = sessions.resolve(engine, token, T0 + later)
    assert (info.username if info else None) == expected


def test_idle_sessions_end_and_activity_keeps_them(engine):
    token = new_session(engine)
    for hours in (6, 11):  # active every 5-6 hours: never idle for 8, and within the 12-hour lifetime
        assert sessions.resolve(engine, token, T0 + timedelta(hours=hours))
    idle = new_session(engine)
    assert sessions.resolve(engine, idle, T0 + sessions.IDLE_LIMIT + timedelta(minutes=1)) is None


def test_only_hashes_are_stored(engine):
    token = new_session(engine)
    secret = token.split(".")[2]
    with Session(engine) as session:
        rows = session.exec(select(SessionToken)).all()
    assert rows and all(secret not in (r.token_hash, r.username) for r in rows)


@pytest.mark.parametrize(
    ("change", "ends", "reason"),
    [
        pytest.param({"role": "viewer"}, True, "role changed by cli", id="role"),
        pytest.param({"password": "another-pass-1"}, True, "password changed by cli", id="password"),
        pytest.param({"active": False}, True, "active changed by cli", id="disabled"),
        pytest.param({"domains": ["Energy", "Medical"]}, False, "", id="domains"),
        pytest.param({"role": "expert"}, False, "", id="same-role"),
    ],
)
def test_account_changes_end_sessions(engine, change, ends, reason):
    token = new_session(engine, at=datetime.now(UTC))
    update_user(engine, "alice", **change)
    assert (sessions.resolve(engine, token) is None) is ends
    assert sessions.revoked_reason(engine, token) == reason


def test_sign_out_revokes_one_session(engine):
    first, second = new_session(engine, at=datetime.now(UTC)), new_session(engine, at=datetime.now(UTC))
    assert sessions.live_sessions(engine, "alice") == 2
    assert sessions.revoke(engine, first) and not sessions.revoke(engine, first)
    assert sessions.resolve(engine, first) is None and sessions.resolve(engine, second)
    assert sessions.revoked_reason(engine, first) == "signed out"


def test_the_session_principal_has_the_current_domains(engine):
    token = new_session(engine, at=datetime.now(UTC))
    update_user(engine, "alice", domains=["Medical"])
    principal = session_principal(engine, token)
    assert (principal.username, principal.role, principal.domains) == ("alice", "expert", ("Medical",))


# --------------------------------------------------------------------------- the cookie endpoint (ui.serve)


@pytest.fixture
def client(engine):
    inner = Starlette(routes=[Route("/{path:path}", lambda request: PlainTextResponse("app"))])
    return TestClient(SessionCookies(inner), base_url="http://127.0.0.1:8501", follow_redirects=False)


def _names(engine, secure: bool = False) -> sessions.CookieNames:
    return sessions.cookie_names(engine, secure)


def _with_nonce(client, engine) -> str:
    """Load a page as a browser does: the server gives this browser a sign-in nonce (HttpOnly, SameSite=Strict)."""
    page = client.get("/", headers={"accept": "text/html"})
    cookie, name = page.headers["set-cookie"], _names(engine).nonce
    assert cookie.startswith(f"{name}=") and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert "set-cookie" not in client.get("/", headers={"accept": "text/html"}).headers  # one nonce per browser
    return client.cookies[name]


def test_the_endpoint_sets_an_httponly_strict_cookie_and_returns(client, engine):
    names = _names(engine)
    code = sessions.issue_handoff(engine, "ana", _with_nonce(client, engine))
    response = client.get("/_gauntlet/session", params={"code": code, "next": "/judge_alignment"})
    assert response.status_code == 303 and response.headers["location"] == "/judge_alignment"
    cookie, device = response.headers.get_list("set-cookie")
    assert cookie.startswith(f"{names.session}=v1.") and "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert device.startswith(f"{names.device}=d1.") and "HttpOnly" in device and "Max-Age=15552000" in device
    token = response.cookies[names.session]
    assert sessions.resolve(engine, token).username == "ana"
    again = client.get("/_gauntlet/session", params={"code": code})
    assert "set-cookie" not in again.headers  # the code was used up

    client.cookies.set(names.session, token)
    assert sessions.revoke(engine, token)  # the app signs out over its WebSocket, then sends the browser here
    out = client.get("/_gauntlet/signout")
    assert out.status_code == 303 and f'{names.session}=""' in out.headers["set-cookie"]
    assert "Max-Age=0" in out.headers["set-cookie"] and sessions.resolve(engine, token) is None
    assert client.get("/anything").text == "app"


def test_another_browsers_code_sets_no_cookie(client, engine):
    _with_nonce(client, engine)
    attackers = sessions.issue_handoff(engine, "bob", "the-attackers-own-nonce")
    response = client.get("/_gauntlet/session", params={"code": attackers, "next": "/"})
    assert response.status_code == 303 and "set-cookie" not in response.headers


@pytest.mark.parametrize(
    ("fetch_site", "revoked", "cleared"),
    [
        pytest.param("same-origin", False, False, id="live-session-is-kept"),
        pytest.param("cross-site", False, False, id="cross-site-link"),
        pytest.param("same-site", False, False, id="other-origin-same-site"),
        pytest.param("cross-site", True, False, id="cross-site-changes-no-cookie"),
        pytest.param("same-origin", True, True, id="ended-session-is-cleared"),
    ],
)
def test_the_signout_endpoint_only_clears_an_ended_session(client, engine, fetch_site, revoked, cleared):
    token = new_session(engine, at=datetime.now(UTC))
    if revoked:
        sessions.revoke(engine, token)
    client.cookies.set(_names(engine).session, token)
    out = client.get("/_gauntlet/signout", params={"next": "/"}, headers={"sec-fetch-site": fetch_site})
    assert out.status_code == 303 and ("set-cookie" in out.headers) is cleared
    assert sessions.is_live(engine, token) is not revoked


def test_a_handoff_started_by_another_origin_sets_no_cookie(client, engine):
    code = sessions.issue_handoff(engine, "ana", _with_nonce(client, engine))
    response = client.get("/_gauntlet/session", params={"code": code}, headers={"sec-fetch-site": "cross-site"})
    assert "set-cookie" not in response.headers


@pytest.mark.parametrize(
    ("target", "expected"),
    [pytest.param("/users", "/users", id="page"), pytest.param("//evil.example/x", "/", id="other-host"),
     pytest.param("https://evil.example", "/", id="absolute"), pytest.param("/\\evil", "/", id="backslash"),
     pytest.param(None, "/", id="missing"), pytest.param("/a\nb", "/", id="control")],
)
def test_the_endpoint_only_returns_into_the_app(target, expected):
    assert safe_next(target, "") == expected


# --------------------------------------------------------------------------- cookies bound to their server (issue 41)


def test_over_https_every_cookie_is_a_host_prefixed_secure_cookie(engine):
    inner = Starlette(routes=[Route("/{path:path}", lambda request: PlainTextResponse("app"))])
    client = TestClient(SessionCookies(inner), base_url="https://127.0.0.1:8443", follow_redirects=False)
    names = _names(engine, secure=True)
    nonce = client.get("/", headers={"accept": "text/html"}).headers["set-cookie"]
    assert nonce.startswith(f"__Host-{sessions.NONCE_COOKIE}_") and "Secure" in nonce and "Path=/;" in nonce
    code = sessions.issue_handoff(engine, "ana", client.cookies[names.nonce])
    set_cookies = client.get("/_gauntlet/session", params={"code": code}).headers.get_list("set-cookie")
    assert [c.split("=", 1)[0] for c in set_cookies] == [names.session, names.device]
    assert all("; Secure" in c and "Path=/;" in c and "Domain" not in c for c in set_cookies), set_cookies


def test_cookie_names_are_per_deployment(engine, backend_url_factory):
    other = make_engine(backend_url_factory())
    try:
        ours, theirs = _names(engine), _names(other)
        assert ours.session != theirs.session and ours.session.startswith(f"{sessions.COOKIE_NAME}_")
        assert _names(engine) == ours  # stable for the deployment
        assert sessions.resolve(other, new_session(engine, at=datetime.now(UTC))) is None  # not its secret
    finally:
        other.dispose()


@pytest.mark.parametrize(("args", "trusted", "warned"), [
    pytest.param([], (), True, id="default-binds-every-interface"),
    pytest.param(["--server.address", "0.0.0.0"], (), True, id="all-interfaces"),
    pytest.param(["--server.address=192.0.2.10"], (), True, id="lan-address"),
    pytest.param(["--server.address", "127.0.0.1"], (), False, id="loopback"),
    pytest.param(["--server.address", "localhost"], (), False, id="localhost"),
    pytest.param(["--server.sslCertFile", "c.pem", "--server.address", "0.0.0.0"], (), False, id="own-tls"),
    pytest.param(["--server.address", "0.0.0.0"], ("127.0.0.1/32",), False, id="behind-a-trusted-proxy"),
])
def test_plain_http_on_a_reachable_address_warns_at_start(monkeypatch, args, trusted, warned):
    monkeypatch.delenv("STREAMLIT_SERVER_ADDRESS", raising=False)
    monkeypatch.delenv("STREAMLIT_SERVER_SSLCERTFILE", raising=False)
    warning = plain_http_warning(args, trusted)
    assert (warning is not None) is warned
    assert warning is None or ("plain HTTP" in warning and "GAUNTLET_TRUSTED_PROXIES" in warning)


def test_the_documented_deployment_starts_without_the_plain_http_warning(monkeypatch):
    from core.review.addresses import parse_trusted_proxies
    from tests.docs_blocks import bash_commands

    (command,) = bash_commands(ROOT / "docs" / "deployment.md", "Start the app behind the proxy")
    words = command.split()
    env = dict(word.split("=", 1) for word in words[: words.index("python")])
    args = words[words.index("ui.serve") + 1 :]
    monkeypatch.delenv("STREAMLIT_SERVER_ADDRESS", raising=False)
    assert plain_http_warning(args, parse_trusted_proxies(env["GAUNTLET_TRUSTED_PROXIES"])) is None
    assert plain_http_warning(args, ()) is None  # loopback only: nothing to warn about even without the proxy
    assert plain_http_warning([a for a in args if a not in ("--server.address", "127.0.0.1")], ()) is not None


@pytest.mark.parametrize(
    ("secure", "prefix"),
    [pytest.param(False, "gauntlet_session_", id="http"), pytest.param(True, "__Host-gauntlet_session_", id="https")],
)
def test_page_runs_read_the_cookie_names_once_per_database(engine, monkeypatch, secure, prefix):
    from ui import auth

    auth._deployment_names.clear()
    reads = []
    real_key = sessions.signing_key
    monkeypatch.setattr(sessions, "signing_key", lambda e: reads.append(1) or real_key(e))
    names = [auth._deployment_names(engine.url.render_as_string(hide_password=False), secure) for _ in range(3)]
    assert names == [sessions.cookie_names(engine, secure)] * 3 and names[0].session.startswith(prefix)
    assert len(reads) == 2  # the first page run, then the direct cookie_names above: never again per run
    auth._deployment_names.clear()
