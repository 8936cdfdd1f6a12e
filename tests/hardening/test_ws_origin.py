"""The same-origin rule of ui/serve.py: a WebSocket upgrade or a state-changing request whose Origin header is present
and is not this server's own origin is refused (403) before the app sees it; requests without Origin pass."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse
from starlette.routing import Route, WebSocketRoute
from starlette.testclient import TestClient
from starlette.websockets import WebSocket, WebSocketDisconnect

from ui.serve import SameOriginOnly, parse_origin

PROXY = "10.0.0.9"
VISITOR = "203.0.113.7"


async def stream(websocket: WebSocket) -> None:
    await websocket.accept()
    await websocket.send_text("connected")
    await websocket.close()


def client(base_url: str = "http://127.0.0.1:8501", peer: str = "127.0.0.1") -> TestClient:
    routes = [WebSocketRoute("/_stcore/stream", stream),
              Route("/_stcore/upload_file", lambda request: PlainTextResponse("stored"), methods=["GET", "PUT"])]
    app = Starlette(routes=routes, middleware=[Middleware(SameOriginOnly)])
    return TestClient(app, base_url=base_url, client=(peer, 50000))


def opens_socket(test_client: TestClient, headers: dict[str, str]) -> bool:
    url = str(test_client.base_url).replace("http", "ws", 1) + "/_stcore/stream"
    try:
        with test_client.websocket_connect(url, headers=headers) as socket:
            return socket.receive_text() == "connected"
    except WebSocketDisconnect as refused:
        assert refused.code == 1008
        return False


FORWARDED = {"x-forwarded-for": VISITOR, "x-forwarded-host": "gauntlet.example.com"}
# (base URL the request was addressed to, peer as the web server reports it, extra headers, Origin, allowed)
CASES = [
    pytest.param("http://127.0.0.1:8501", "127.0.0.1", {}, "http://127.0.0.1:8501", True, id="same-origin"),
    pytest.param("http://127.0.0.1:8501", "127.0.0.1", {}, None, True, id="no-origin-program"),
    pytest.param("http://127.0.0.1:8501", "127.0.0.1", {}, "http://127.0.0.1:3000", False, id="same-host-other-port"),
    pytest.param("http://localhost:8501", "127.0.0.1", {}, "http://localhost:3000", False, id="localhost-other-port"),
    pytest.param("http://127.0.0.1:8501", "127.0.0.1", {}, "http://evil.example:8501", False, id="other-host"),
    pytest.param("http://127.0.0.1:8501", "127.0.0.1", {}, "http://localhost:8501", False,
                 id="localhost-vs-127.0.0.1"),
    pytest.param("http://127.0.0.1:8501", "127.0.0.1", {}, "https://127.0.0.1:8501", False, id="other-scheme"),
    pytest.param("http://127.0.0.1:8501", "127.0.0.1", {}, "null", False, id="opaque-origin"),
    pytest.param("http://127.0.0.1", "127.0.0.1", {}, "http://127.0.0.1:80", True, id="default-port-written-out"),
    pytest.param("https://127.0.0.1:8501", VISITOR, FORWARDED, "https://gauntlet.example.com", True,
                 id="trusted-proxy-forwarded-host"),
    pytest.param("https://127.0.0.1:8501", PROXY, {"x-forwarded-host": "gauntlet.example.com"},
                 "https://gauntlet.example.com", True, id="trusted-proxy-peer-forwarded-host"),
    pytest.param("https://127.0.0.1:8501", VISITOR, FORWARDED, "https://evil.example", False,
                 id="trusted-proxy-other-origin"),
    pytest.param("http://127.0.0.1:8501", "198.51.100.4", FORWARDED, "http://gauntlet.example.com", False,
                 id="untrusted-peer-forwarded-host-ignored"),
]


@pytest.mark.parametrize(("base_url", "peer", "extra", "origin", "allowed"), CASES)
def test_websocket_upgrades_only_from_this_origin(monkeypatch, base_url, peer, extra, origin, allowed):
    monkeypatch.setenv("GAUNTLET_TRUSTED_PROXIES", PROXY)
    headers = {**extra, **({"origin": origin} if origin else {})}
    assert opens_socket(client(base_url, peer), headers) is allowed


@pytest.mark.parametrize(("base_url", "peer", "extra", "origin", "allowed"), CASES)
def test_state_changing_requests_only_from_this_origin(monkeypatch, base_url, peer, extra, origin, allowed):
    monkeypatch.setenv("GAUNTLET_TRUSTED_PROXIES", PROXY)
    headers = {**extra, **({"origin": origin} if origin else {})}
    response = client(base_url, peer).put("/_stcore/upload_file", headers=headers)
    assert (response.status_code, response.text) == ((200, "stored") if allowed else
                                                      (403, "Cross-origin request refused"))


def test_reads_from_another_origin_pass():
    response = client().get("/_stcore/upload_file", headers={"origin": "http://127.0.0.1:3000"})
    assert response.status_code == 200


@pytest.mark.parametrize(("text", "parsed"), [
    pytest.param("HTTP://LocalHost:8501", ("http", "localhost", 8501), id="case-folded"),
    pytest.param("https://example.com", ("https", "example.com", 443), id="default-port"),
    pytest.param("http://[::1]:8501", ("http", "::1", 8501), id="ipv6"),
    pytest.param("file://", None, id="other-scheme"),
    pytest.param("http://example.com:99999", None, id="bad-port"),
    pytest.param("http://example.com/path", None, id="with-path"),
])
def test_parse_origin(text, parsed):
    assert parse_origin(text) == parsed
