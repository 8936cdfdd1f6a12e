"""The Content-Security-Policy of ui/serve.py: only this origin (and its WebSocket), on every HTTP response."""

from __future__ import annotations

import re

import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient
from streamlit.web.server.starlette import starlette_app

from ui.serve import SecurityHeaders, content_security_policy, install_security_headers


def _directives(policy: str) -> dict[str, list[str]]:
    return {name: values for name, *values in (part.split() for part in policy.split(";"))}


def test_policy_allows_no_other_host():
    directives = _directives(content_security_policy("127.0.0.1:8501"))
    assert directives["default-src"] == ["'self'"] and directives["object-src"] == ["'none'"]
    assert directives["img-src"] == ["'self'", "data:", "blob:"]
    assert directives["connect-src"] == ["'self'", "ws://127.0.0.1:8501", "wss://127.0.0.1:8501"]
    sources = [v for values in directives.values() for v in values]
    assert not [v for v in sources if re.match(r"(https?|wss?):", v) and "127.0.0.1:8501" not in v]
    assert "*" not in sources and "'unsafe-eval'" not in sources and "'unsafe-inline'" not in directives["script-src"]


@pytest.mark.parametrize(
    "host, connect",
    [
        pytest.param("127.0.0.1:8501", ["'self'", "ws://127.0.0.1:8501", "wss://127.0.0.1:8501"], id="loopback"),
        pytest.param("[::1]:8501", ["'self'", "ws://[::1]:8501", "wss://[::1]:8501"], id="ipv6"),
        pytest.param("evil.example' ; img-src *", ["'self'"], id="injected-host-left-out"),
    ],
)
def test_every_response_carries_the_policy(host, connect):
    app = Starlette(routes=[Route("/", lambda request: PlainTextResponse("ok"))], middleware=[Middleware(SecurityHeaders)])
    response = TestClient(app).get("/", headers={"host": host})
    directives = _directives(response.headers["content-security-policy"])
    assert response.text == "ok" and directives["img-src"] == ["'self'", "data:", "blob:"]
    assert directives["connect-src"] == connect
    assert response.headers["x-content-type-options"] == "nosniff" and response.headers["referrer-policy"] == "no-referrer"


def test_install_puts_the_headers_outermost_once(monkeypatch):
    monkeypatch.setattr(starlette_app, "create_streamlit_middleware", starlette_app.create_streamlit_middleware)
    install_security_headers()
    install_security_headers()
    stack = starlette_app.create_streamlit_middleware()
    assert [m.cls for m in stack].count(SecurityHeaders) == 1 and stack[0].cls is SecurityHeaders
