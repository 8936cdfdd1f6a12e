"""Sign-in and session handling for the app: password login, optional OIDC single sign-on, idle expiry, page guards."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import streamlit as st

from core.review.auth import AuthError, LoginThrottled, Principal, authenticate, is_expired, principal_for_email, touch
from core.review.annotations import guidelines_text, guidelines_version
from core.review.permissions import page_roles
from ui.session import engine

SESSION_KEY = "gauntlet_principal"
EXPIRED_KEY = "gauntlet_session_expired"
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


def sign_in(principal: Principal) -> None:
    st.session_state[SESSION_KEY] = principal
    st.session_state.pop(EXPIRED_KEY, None)


def sign_out() -> None:
    st.session_state.pop(SESSION_KEY, None)
    if sso_configured():
        try:
            if st.user.is_logged_in:
                st.logout()
        except Exception:  # noqa: BLE001
            pass


def current_principal() -> Principal | None:
    """The signed-in user, with activity refreshed; None (and the expired flag) once idle past the limit."""
    principal = st.session_state.get(SESSION_KEY)
    if principal is None:
        principal = _sso_principal()
        if principal is not None:
            sign_in(principal)
        return principal
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
    """Page guard driven by the permission table (core.review.permissions.PAGE_ROLES): pass the page's `__file__`."""
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
    with st.sidebar:
        with st.expander(f"Guidelines (version {guidelines_version()})", expanded=False):
            st.markdown(guidelines_text() or "No guidelines file found (annotations/guidelines.md).")


def account_sidebar(principal: Principal) -> None:
    """Who is signed in, and a sign-out button."""
    with st.sidebar:
        st.caption(f"Signed in as **{principal.username}** ({principal.role})")
        if st.button("Sign out", key="auth_sign_out", icon=":material/logout:"):
            sign_out()
            st.rerun()


def _client_address() -> str | None:
    """The browser's address as the server sees it (None on the same machine; sign-ins are throttled per address)."""
    try:
        address = st.context.ip_address
    except Exception:  # noqa: BLE001  (no client context)
        return None
    return address if isinstance(address, str) else None


def render_login() -> None:
    """The sign-in form (and the single sign-on button when OIDC is configured)."""
    st.title("Sign in to RAG Gauntlet")
    if st.session_state.get(EXPIRED_KEY):
        st.warning("Your session expired after 8 hours without activity. Sign in again; nothing was saved.")
    with st.form("login_form"):
        username = st.text_input("Username", key="login_username")
        password = st.text_input("Password", type="password", key="login_password")
        submitted = st.form_submit_button("Sign in", type="primary", shortcut="Enter")
    if submitted:
        try:
            principal = authenticate(engine(), username, password, address=_client_address())
        except LoginThrottled as refused:
            st.error(str(refused), icon=":material/timer:")
            return
        if principal is None:
            st.error("Unknown username or wrong password.")
        else:
            sign_in(principal)
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
