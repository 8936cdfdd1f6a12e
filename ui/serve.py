"""Serve the app: `python -m ui.serve [streamlit run options]` (what `make app` runs).

app.py declares every page with st.navigation, but the page scripts live in `pages/`. Until some session has called
st.navigation, Streamlit would treat `pages/` as a legacy multipage folder: a deep link as the first request after
start would run the page script without app.py and show the folder's automatic page list beside ours. Telling
Streamlit up front that the app does not use the pages folder closes that gap.

Every HTTP response carries a Content-Security-Policy that forbids fetching anything from another host (images,
scripts, styles, fonts, frames, connections): untrusted documents and model responses are rendered in the page, and
whatever slips through the sanitising must still not make a viewer's browser contact an arbitrary host.

Sessions survive a reload because two small endpoints set and clear the session cookie (HttpOnly, so no script can
read it; SameSite=Strict): GET /_gauntlet/session?code=...&next=/page exchanges the one-minute code the sign-in form
issued for a session token, only in the browser the code was issued to (its sign-in nonce cookie, set on its first
page load); GET /_gauntlet/signout clears a cookie whose session the app has already ended; both redirect back into
the app, which reads the cookies through st.context.cookies (core.review.sessions).

A browser request that says it comes from another origin (an Origin header that is not this server's own
scheme://host:port, as the browser addressed it) may not open the app's WebSocket nor send a state-changing request:
SameOriginOnly refuses it with 403 before Streamlit sees it. Streamlit's own check admits any localhost origin, so a
page on another port of the same host, whose requests carry the visitor's SameSite cookies, could drive a signed-in
session. Requests without an Origin header (programs, not browsers) pass.

Every page loads ui/shortcut_buffer.js (served at .../_gauntlet/shortcuts.js, a same-origin script the policy allows):
a keyboard shortcut pressed before its button is drawn is kept and clicked once the button appears, not lost.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import sys
from functools import cache
from pathlib import Path
from urllib.parse import urlsplit

import streamlit
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers, MutableHeaders
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from streamlit import config as streamlit_config
from streamlit.runtime.pages_manager import PagesManager
from streamlit.web import cli as streamlit_cli
from streamlit.web.server.starlette import starlette_app

from core.config import database_url
from core.review.addresses import trusted_proxies, via_trusted_proxy
from core.review.auth import device_token
from core.review.sessions import (
    DEVICE_LIFETIME,
    SESSION_LIFETIME,
    CookieNames,
    cookie_names,
    is_live,
    new_nonce,
    redeem_handoff,
    resolve,
)
from core.store.db import get_engine

APP = Path(__file__).resolve().parents[1] / "app.py"
SHORTCUT_BUFFER = Path(__file__).resolve().parent / "shortcut_buffer.js"
SHORTCUTS_PATH = "/_gauntlet/shortcuts.js"
SHORTCUTS_TAG = b'<script src="./_gauntlet/shortcuts.js"></script>'  # relative, like Streamlit's own assets
STREAMLIT_INDEX = Path(streamlit.__file__).parent / "static" / "index.html"


@cache
def inline_script_hashes() -> str:
    """CSP hashes of the inline scripts of Streamlit's index.html (it runs one; allowed by hash, not 'unsafe-inline')."""
    page = STREAMLIT_INDEX.read_text(encoding="utf-8") if STREAMLIT_INDEX.is_file() else ""
    bodies = re.findall(r"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", page, flags=re.DOTALL)
    return " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(b.encode()).digest()).decode()}'" for b in bodies)


def content_security_policy(host: str) -> str:
    """The policy for a page served at `host`: this origin only (its WebSocket included), data:/blob: for images;
    inline styles are allowed because Streamlit's frontend sets them (emotion), WebAssembly because its protobuf
    library compiles a small module (no JavaScript eval)."""
    same_host_sockets = f" ws://{host} wss://{host}" if host else ""
    return "; ".join([
        "default-src 'self'",
        f"script-src 'self' 'wasm-unsafe-eval' {inline_script_hashes()}".rstrip(),
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: blob:",
        "font-src 'self' data:",
        "media-src 'self' data: blob:",
        f"connect-src 'self'{same_host_sockets}",
        "worker-src 'self' blob:",
        "frame-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'self'",
    ])


HOST = re.compile(r"(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?")  # a Host header
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


class SecurityHeaders:
    """ASGI middleware: adds the Content-Security-Policy and the other security headers to every HTTP response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = Headers(scope=scope).get("host", "")
        host = host if HOST.fullmatch(host) else ""

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers["Content-Security-Policy"] = content_security_policy(host)
                for name, value in SECURITY_HEADERS.items():
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers)


SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
DEFAULT_PORTS = {"http": 80, "https": 443}
Origin = tuple[str, str, int]  # scheme (http/https), host (lower case), port


def parse_origin(text: str) -> Origin | None:
    """An Origin header (or scheme://host:port) as (scheme, host, port), default port filled in; None when it is not
    an http(s) origin ("null", another scheme, a path, a bad port)."""
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme.lower() not in DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/") or \
            parts.query or parts.username or parts.password:
        return None
    scheme = parts.scheme.lower()
    return scheme, parts.hostname.lower(), port or DEFAULT_PORTS[scheme]


def own_origins(scope: Scope, headers: Headers) -> set[Origin]:
    """This server's origins for a request: the scheme and Host it was addressed with (X-Forwarded-Host when a
    trusted proxy forwarded it; the web server already applied X-Forwarded-Proto for trusted peers only), and the
    origins listed in Streamlit's server.corsAllowedOrigins."""
    scheme = "https" if scope.get("scheme") in ("https", "wss") else "http"
    host = headers.get("host", "")
    client = (scope.get("client") or (None,))[0]
    forwarded_for = ", ".join(headers.getlist("x-forwarded-for"))
    if headers.get("x-forwarded-host") and via_trusted_proxy(client, forwarded_for, trusted_proxies()):
        host = headers["x-forwarded-host"].split(",")[0].strip()
    listed = streamlit_config.get_option("server.corsAllowedOrigins") or []
    candidates = [f"{scheme}://{host}" if HOST.fullmatch(host) else "", *listed]
    return {origin for origin in map(parse_origin, candidates) if origin}


def foreign_origin(scope: Scope) -> bool:
    """True when a WebSocket upgrade or a state-changing request carries an Origin that is not this server's own."""
    if scope["type"] not in ("http", "websocket") or scope.get("method") in SAFE_METHODS:
        return False
    headers = Headers(scope=scope)
    origin = headers.get("origin")
    return origin is not None and parse_origin(origin) not in own_origins(scope, headers)


class SameOriginOnly:
    """ASGI middleware: refuses (403) a WebSocket upgrade or a state-changing request from another origin (an Origin
    header that is present and not this server's own); requests without an Origin header pass."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not foreign_origin(scope):
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})  # before accept: the server answers 403
        else:
            await PlainTextResponse("Cross-origin request refused", status_code=403)(scope, receive, send)


SESSION_PATH = "/_gauntlet/session"
SIGNOUT_PATH = "/_gauntlet/signout"


def safe_next(target: str | None, base: str) -> str:
    """Where to go after the cookie endpoint: a path of this app only (never another host), else the app's root."""
    target = target or ""
    if not target.startswith("/") or target.startswith("//") or "\\" in target or any(ord(c) < 32 for c in target):
        return base + "/"
    return target


def started_elsewhere(headers: Headers) -> bool:
    """True when the browser says another origin started this request (Sec-Fetch-Site: same-site or cross-site); a
    request from this origin, typed in the address bar, or from a client that does not say, is not."""
    return headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none")


def _cookie_path(base: str, names: CookieNames) -> str:
    return names.path or base + "/"


def _names(secure: bool) -> CookieNames | None:
    """This deployment's cookie names for the request's scheme (None while there is no database yet)."""
    try:
        return cookie_names(get_engine(database_url()), secure)
    except Exception:  # noqa: BLE001  (no database yet: no cookie)
        return None


def nonce_cookie(base: str, names: CookieNames) -> str:
    """A Set-Cookie value giving this browser a new sign-in nonce (HttpOnly, SameSite=Strict; a Secure `__Host-`
    cookie over HTTPS)."""
    return (f"{names.nonce}={new_nonce()}; HttpOnly; Path={_cookie_path(base, names)}; SameSite=Strict"
            + ("; Secure" if names.secure else ""))


class SessionCookies:
    """ASGI middleware: the two cookie endpoints (sign-in handoff and sign-out), and a sign-in nonce for every browser
    that loads a page without one; everything else passes through.

    The handoff redeems a code only with the nonce of the browser it was issued to; the sign-out endpoint only clears
    a session cookie whose session the app has already ended (sign-out itself happens in the app, over its
    WebSocket), so a link from another site can neither sign a visitor in as someone else nor sign them out. Requests
    another origin started change no cookie at all.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        endpoint = next((e for e in (SESSION_PATH, SIGNOUT_PATH) if path.endswith(e)), None)
        if endpoint is None:
            await self.app(scope, receive, self._with_nonce(Request(scope), send))
            return
        request, base = Request(scope), path[: -len(endpoint)]
        response = RedirectResponse(safe_next(request.query_params.get("next"), base), status_code=303)
        response.headers["Cache-Control"] = "no-store"
        if not started_elsewhere(request.headers):
            await _set_or_clear(request, response, endpoint, base)
        await response(scope, receive, send)

    @staticmethod
    def _with_nonce(request: Request, send: Send) -> Send:
        """`send`, adding a sign-in nonce cookie to a page load from a browser that has none."""
        if request.method != "GET" or "text/html" not in request.headers.get("accept", ""):
            return send
        names = _names(request.url.scheme == "https")
        if names is None or request.cookies.get(names.nonce):
            return send
        base = (streamlit_config.get_option("server.baseUrlPath") or "").strip("/")

        async def send_with_nonce(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message).append("set-cookie", nonce_cookie(f"/{base}" if base else "", names))
            await send(message)

        return send_with_nonce


async def _set_or_clear(request: Request, response: RedirectResponse, endpoint: str, base: str) -> None:
    """Set the session cookie (and the device cookie of a browser that signed in) for a handoff code redeemed with
    this browser's nonce, or clear an ended session's cookie."""
    names = _names(request.url.scheme == "https")
    if names is None:
        return
    cookie = {"path": _cookie_path(base, names), "httponly": True, "samesite": "strict", "secure": names.secure}
    if endpoint == SESSION_PATH:
        signed_in = await run_in_threadpool(_redeem, request.query_params.get("code"), request.cookies.get(names.nonce))
        if signed_in:
            token, device = signed_in
            response.set_cookie(key=names.session, value=token, max_age=int(SESSION_LIFETIME.total_seconds()),
                                **cookie)
            response.set_cookie(key=names.device, value=device, max_age=int(DEVICE_LIFETIME.total_seconds()),
                                **cookie)
    elif await run_in_threadpool(_ended, request.cookies.get(names.session)):
        response.delete_cookie(key=names.session, **cookie)


def _redeem(code: str | None, nonce: str | None) -> tuple[str, str] | None:
    """(session token, device cookie) for a handoff code redeemed with this browser's nonce; None otherwise."""
    try:
        engine = get_engine(database_url())
        token = redeem_handoff(engine, code, nonce)
        info = resolve(engine, token) if token else None
        return (token, device_token(engine, info.username)) if token and info else None
    except Exception:  # noqa: BLE001  (no database yet, or a bad code: no cookie, back to the sign-in form)
        return None


def _ended(token: str | None) -> bool:
    """True when the browser sent a session cookie whose session is over (signed out, revoked, expired, forged)."""
    if not token:
        return False
    try:
        return not is_live(get_engine(database_url()), token)
    except Exception:  # noqa: BLE001  (no database: nothing is live)
        return True


class ShortcutBuffer:
    """ASGI middleware: serves ui/shortcut_buffer.js and adds its script tag to every HTML page (the request for a page
    asks for no compression, so the tag can be written into the head)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "GET":
            await self.app(scope, receive, send)
        elif scope.get("path", "").endswith(SHORTCUTS_PATH):
            response = Response(shortcut_buffer_script(), media_type="text/javascript")
            response.headers["Cache-Control"] = "no-cache"
            await response(scope, receive, send)
        else:
            headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"accept-encoding"]
            await self.app({**scope, "headers": headers}, receive, with_shortcut_tag(send))


@cache
def shortcut_buffer_script() -> str:
    """The script that keeps a shortcut pressed before its button is drawn."""
    return SHORTCUT_BUFFER.read_text(encoding="utf-8")


def with_shortcut_tag(send: Send) -> Send:
    """`send`, writing the shortcut buffer's script tag before </head> of an HTML response (Content-Length fixed)."""
    start: dict[str, Message] = {}
    body = bytearray()

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            if "text/html" not in MutableHeaders(scope=message).get("content-type", ""):
                start["passthrough"] = message
                await send(message)
            else:
                start["html"] = message
            return
        if "passthrough" in start or message["type"] != "http.response.body":
            await send(message)
            return
        body.extend(message.get("body", b""))
        if message.get("more_body", False):
            return
        page = bytes(body).replace(b"</head>", SHORTCUTS_TAG + b"</head>", 1)
        headers = MutableHeaders(scope=start["html"])
        if "content-length" in headers:
            headers["content-length"] = str(len(page))
        await send(start["html"])
        await send({"type": "http.response.body", "body": page, "more_body": False})

    return sending


def install_security_headers() -> None:
    """Put SecurityHeaders outermost, then the same-origin check, the session-cookie endpoints and the shortcut
    buffer, in the middleware of the Starlette app Streamlit builds (once)."""
    original = starlette_app.create_streamlit_middleware
    if getattr(original, "adds_security_headers", False):
        return

    def with_security_headers() -> list[Middleware]:
        return [Middleware(SecurityHeaders), Middleware(SameOriginOnly), Middleware(SessionCookies),
                Middleware(ShortcutBuffer), *original()]

    with_security_headers.adds_security_headers = True  # type: ignore[attr-defined]
    starlette_app.create_streamlit_middleware = with_security_headers


def trust_configured_proxies() -> None:
    """Let the web server (uvicorn) rewrite the client address and scheme from X-Forwarded-For/-Proto only for peers
    in GAUNTLET_TRUSTED_PROXIES, instead of its default of any loopback peer (which any local client could spoof)."""
    os.environ["FORWARDED_ALLOW_IPS"] = ",".join(str(network) for network in trusted_proxies())


LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def _option(args: list[str], name: str) -> str | None:
    """The value of `--name VALUE` or `--name=VALUE` in streamlit run's arguments, else its STREAMLIT_ env variable."""
    flag = f"--{name}"
    for index, arg in enumerate(args):
        if arg == flag and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return os.environ.get("STREAMLIT_" + name.upper().replace(".", "_")) or None


def plain_http_warning(args: list[str], trusted: tuple[object, ...]) -> str | None:
    """A warning when the app will serve plain HTTP on an address other machines reach (Streamlit's default binds
    every interface) without TLS of its own or a trusted TLS proxy in front: its cookies then travel in clear text and
    are shared with every other service of that host name. None on loopback, with a certificate, or behind a proxy."""
    address = (_option(args, "server.address") or "").strip()
    if address.lower() in LOOPBACK_NAMES or address.startswith("127.") or _option(args, "server.sslCertFile") or trusted:
        return None
    where = address or "every interface"
    return (f"warning: serving plain HTTP on {where}: session cookies travel unencrypted and every other service "
            "of this host name receives them. Serve it on its own host name with TLS at a reverse proxy and list the "
            "proxy in GAUNTLET_TRUSTED_PROXIES (see docs/deployment.md), or bind --server.address 127.0.0.1.")


def main(argv: list[str] | None = None) -> None:
    """Run `streamlit run app.py` with the given options, pages declared by st.navigation only, security headers on,
    forwarded headers honoured only from the configured trusted proxies."""
    PagesManager.uses_pages_directory = False
    trust_configured_proxies()
    install_security_headers()
    args = list(sys.argv[1:] if argv is None else argv)
    warning = plain_http_warning(args, trusted_proxies())
    if warning:
        print(warning, file=sys.stderr, flush=True)
    sys.argv = ["streamlit", "run", str(APP), *args]
    streamlit_cli.main()


if __name__ == "__main__":
    main()
