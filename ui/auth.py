"""Sign-in and session handling for the app: password login, optional OIDC single sign-on, idle expiry, page guards.

A password sign-in also starts a browser session that survives a reload and a new tab: the form issues a one-minute
code, bound to this browser's sign-in nonce cookie, and sends the browser to the cookie endpoint (ui.serve), which
sets the HttpOnly session cookie and comes back; every script run then reads the cookie (st.context.cookies) and
restores the principal from the database, so a revoked session (sign-out, role or password changed, account
disabled) or an expired one signs the tab out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar
from urllib.parse import urlencode, urlsplit

import streamlit as st
from streamlit import runtime
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.runtime.scriptrunner import get_script_run_ctx

import core.protocols  # noqa: F401  (each protocol's page joins the permission table when it registers)
from core.config import database_url
from core.permissions import page_roles
from core.review.addresses import client_address, trusted_proxies
from core.review.annotations import guidelines_text, guidelines_version
from core.review.auth import (
    FAILURE_WINDOW,
    MAX_FAILURES,
    AuthError,
    LoginThrottled,
    Principal,
    authenticate,
    is_expired,
    principal_for_email,
    session_principal,
    touch,
)
from core.review.sessions import CookieNames, cookie_names, issue_handoff, revoke, revoked_reason
from ui.session import engine

SESSION_KEY = "gauntlet_principal"
EXPIRED_KEY = "gauntlet_session_expired"
BOUND_KEY = "gauntlet_cookie_session"  # the principal came from the session cookie: re-validated on every run
NOTICE_KEY = "gauntlet_signed_out_because"
SESSION_ENDPOINT = "_gauntlet/session"
SIGNOUT_ENDPOINT = "_gauntlet/signout"
T = TypeVar("T")


def sso_configured() -> bool:
    """True when an [auth] section (OIDC) is present in Streamlit's secrets."""
    try:
        return "auth" in st.secrets
    except Exception:  # noqa: BLE001  (no secrets file at all)
        return False


def _sso_principal() -> Principal | None:
    if not sso_configured():
        return None
    try:
        if not st.user.is_logged_in:
            return None
        return principal_for_email(engine(), st.user.get("email"))
    except Exception:  # noqa: BLE001  (identity provider misconfigured: fall back to passwords)
        return None


def sign_in(principal: Principal, *, bound: bool = False) -> None:
    st.session_state[SESSION_KEY] = principal
    st.session_state[BOUND_KEY] = bound
    st.session_state.pop(EXPIRED_KEY, None)
    st.session_state.pop(NOTICE_KEY, None)


def _cookie(name: str) -> str | None:
    """A cookie the browser sent when this tab connected (None outside a browser, e.g. in AppTest)."""
    try:
        value = st.context.cookies.get(name)
    except Exception:  # noqa: BLE001  (no client context)
        return None
    return value if isinstance(value, str) and value else None


def _names() -> CookieNames:
    """This deployment's cookie names for the scheme the browser shows (`__Host-` ones over HTTPS: a cookie under
    the plain name, which any service of this host could have set, is then ignored)."""
    try:
        secure = urlsplit(st.context.url or "").scheme == "https"
    except Exception:  # noqa: BLE001  (no client context)
        secure = False
    return _deployment_names(database_url(), secure)


@st.cache_resource(show_spinner=False, max_entries=16)
def _deployment_names(url: str, secure: bool) -> CookieNames:
    """cookie_names of the database at `url`, read once per server process: they derive from its signing key, which
    is made once and never changes (no backup carries it and a restore keeps it)."""
    return cookie_names(engine(), secure)


def _session_cookie() -> str | None:
    """The session cookie the browser sent when this tab connected (None outside a browser, e.g. in AppTest)."""
    return _cookie(_names().session)


def _app_path(path: str) -> str:
    """`path` under the app's base URL path (server.baseUrlPath)."""
    base = (st.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{base}/{path}" if base else f"/{path}"


def _current_path() -> str:
    """The path of the page the browser shows (the app's root when unknown)."""
    try:
        return urlsplit(st.context.url or "").path or _app_path("")
    except Exception:  # noqa: BLE001
        return _app_path("")


def browser_redirect(url: str) -> bool:
    """Send this tab's browser to `url` (a path of this app); False when there is no browser (AppTest, bare mode)."""
    ctx = get_script_run_ctx()
    if ctx is None or _no_browser():
        return False
    message = ForwardMsg()
    message.auth_redirect.url = url
    ctx.enqueue(message)
    return True


def _no_browser() -> bool:
    try:
        return st.context.url is None
    except Exception:  # noqa: BLE001
        return True


def sign_out() -> bool:
    """End the session: revoke it server-side, forget it in this tab, leave single sign-on or clear the cookie.

    True when the browser is being sent away (to the identity provider or the cookie endpoint): stop, do not rerun.
    """
    revoke(engine(), _session_cookie())
    for key in (SESSION_KEY, BOUND_KEY):
        st.session_state.pop(key, None)
    if sso_configured():
        try:
            if st.user.is_logged_in:
                st.logout()
                return True
        except Exception:  # noqa: BLE001
            pass
    return browser_redirect(f"{_app_path(SIGNOUT_ENDPOINT)}?{urlencode({'next': _app_path('')})}")


def _signed_out(notice: str) -> None:
    for key in (SESSION_KEY, BOUND_KEY):
        st.session_state.pop(key, None)
    st.session_state[NOTICE_KEY] = notice


def _revocation_notice(token: str | None) -> str:
    reason = revoked_reason(engine(), token)
    if not reason or reason == "signed out":
        return ""
    return f"Your account was changed ({reason}), so you were signed out. Sign in again."


def current_principal() -> Principal | None:
    """The signed-in user, with activity refreshed: this tab's principal, else the one of a valid session cookie;
    None (with the reason kept for the sign-in form) once idle past the limit or when the session was revoked.

    The session cookie is read only where it decides: no principal in this tab yet, or one that came from the cookie
    (re-validated on every run); a tab-only sign-in (single sign-on, or no nonce cookie) never uses it."""
    principal = st.session_state.get(SESSION_KEY)
    if principal is None:
        token = _session_cookie()
        principal = session_principal(engine(), token)
        if principal is not None:
            sign_in(principal, bound=True)
            return principal
        if token and NOTICE_KEY not in st.session_state:
            st.session_state[NOTICE_KEY] = _revocation_notice(token)
        principal = _sso_principal()
        if principal is not None:
            sign_in(principal)
        return principal
    if st.session_state.get(BOUND_KEY):
        token = _session_cookie()
        fresh = session_principal(engine(), token)
        if fresh is None:
            _signed_out(_revocation_notice(token) or "Your session ended; sign in again.")
            return None
        principal = replace(principal, role=fresh.role, domains=fresh.domains)
    if is_expired(principal):
        st.session_state.pop(SESSION_KEY, None)
        st.session_state[EXPIRED_KEY] = True
        return None
    principal = touch(principal)
    st.session_state[SESSION_KEY] = principal
    return principal


def require_role(roles: set[str] | frozenset[str]) -> Principal:
    """Page guard: the signed-in principal when their role is in `roles`; otherwise a refusal and nothing else.

    Pages call require_page (the permission table decides); this takes an explicit role set.
    """
    principal = current_principal()
    if principal is None:
        render_login()
        st.stop()
    if principal.role not in roles:
        st.error(f"Your role ({principal.role}) may not open this page.", icon=":material/block:")
        st.stop()
    return principal


def require_page(script: str) -> Principal:
    """Page guard driven by the permission table (core.permissions.PAGE_ROLES): pass the page's `__file__`."""
    return require_role(page_roles(script))


def guarded_write(action: Callable[[], T]) -> T | None:
    """Run a write, showing refusals (expired session, missing role, invalid input) instead of raising."""
    try:
        return action()
    except (AuthError, PermissionError) as exc:
        if "expired" in str(exc):
            st.session_state.pop(SESSION_KEY, None)
            st.session_state[EXPIRED_KEY] = True
        st.error(str(exc), icon=":material/block:")
    except ValueError as exc:
        st.error(f"Not saved: {exc}", icon=":material/error:")
    return None


def show_guidelines_sidebar() -> None:
    """The annotation guidelines in the sidebar, with their version (recorded on every label)."""
    with st.sidebar, st.expander(f"Guidelines (version {guidelines_version()})", expanded=False):
        st.markdown(guidelines_text() or "No guidelines file found (annotations/guidelines.md).")


def account_sidebar(principal: Principal) -> None:
    """Who is signed in, and a sign-out button."""
    with st.sidebar:
        st.caption(f"Signed in as **{principal.username}** ({principal.role})")
        if st.button("Sign out", key="auth_sign_out", icon=":material/logout:"):
            if sign_out():
                st.stop()
            st.rerun()


def _client_address() -> str | None:
    """The browser's address sign-ins are throttled by: the connection's peer (loopback too), or the address a
    trusted proxy forwarded (core.review.addresses); None without a browser connection (AppTest)."""
    ctx = get_script_run_ctx()
    client = runtime.get_instance().get_client(ctx.session_id) if ctx and runtime.exists() else None
    context = getattr(client, "client_context", None)
    if not isinstance(getattr(context, "remote_ip", None), str):
        return None
    forwarded = ", ".join(value for name, value in context.headers if name.lower() == "x-forwarded-for")
    return client_address(context.remote_ip, forwarded, trusted_proxies())


def start_browser_session(principal: Principal) -> None:
    """Hand the sign-in to the cookie endpoint, which sets the session cookie and brings the browser back here; the
    code is bound to this browser's sign-in nonce. Without a nonce (a tab opened before the server set one, or no
    browser) the sign-in holds for this tab only."""
    nonce = _cookie(_names().nonce)
    if nonce is None or _no_browser():
        return
    code = issue_handoff(engine(), principal.username, nonce)
    if browser_redirect(f"{_app_path(SESSION_ENDPOINT)}?{urlencode({'code': code, 'next': _current_path()})}"):
        st.info("Signing you in…", icon=":material/login:")
        st.stop()


def render_login() -> None:
    """The sign-in form (and the single sign-on button when OIDC is configured)."""
    st.title("Sign in to RAG Gauntlet")
    if st.session_state.get(EXPIRED_KEY):
        st.warning("Your session expired after 8 hours without activity. Sign in again; nothing was saved.")
    if st.session_state.get(NOTICE_KEY):
        st.warning(st.session_state[NOTICE_KEY], icon=":material/logout:")
    with st.form("login_form"):
        username = st.text_input("Username", key="login_username")
        password = st.text_input("Password", type="password", key="login_password")
        submitted = st.form_submit_button("Sign in", type="primary", shortcut="Enter")
    if submitted:
        try:
            principal = authenticate(engine(), username, password, address=_client_address(),
                                     device=_cookie(_names().device))
        except LoginThrottled as refused:
            st.error(str(refused), icon=":material/timer:")
            return
        if principal is None:
            st.error("Unknown username or wrong password.")
            st.caption(f"After {MAX_FAILURES} failed sign-ins for an account from one address, each further try "
                       f"waits longer (30 seconds, doubling); counts are forgotten {FAILURE_WINDOW.seconds // 60} "
                       "minutes after the last try. A browser you signed in with before is not held up by others' "
                       "failures.")
        else:
            sign_in(principal)
            start_browser_session(principal)
            st.rerun()
    if sso_configured():
        st.divider()
        try:
            logged_in_elsewhere = st.user.is_logged_in
        except Exception:  # noqa: BLE001
            logged_in_elsewhere = False
        if logged_in_elsewhere:
            st.error("Your single sign-on email is not linked to an active account. Ask an admin to add it.")
        if st.button("Sign in with single sign-on", icon=":material/key:"):
            st.login()
