"""The OpenAI adapter posts its request body as built, skipping chat.completions.create's params transform: that is
only right while the transform leaves every body the adapter builds unchanged and the request on the wire is the
one create() would send (path, body, headers with the bearer key)."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from openai._utils import async_maybe_transform
from openai.types.chat import completion_create_params

from core.generation.providers.base import ChatMessage, ModelConfig
from core.generation.providers.openai_provider import OpenAIChat

MESSAGES = [ChatMessage(role="system", content="Answer from the documents [doc 1] – “quoted”, 中文."),
            ChatMessage(role="user", content="What is the cut-off?\n\n[doc 1] 63 points.")]
ANSWER = {"id": "c1", "object": "chat.completion", "created": 0, "model": "gpt-x",
          "choices": [{"index": 0, "message": {"role": "assistant", "content": "63 points."}, "finish_reason": "stop"}],
          "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}}
VOLATILE_HEADERS = {"x-stainless-retry-count", "x-stainless-read-timeout"}


class _Capture(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[tuple[str, dict[str, str], dict]] = []

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k.lower(): v for k, v in self.headers.items() if k.lower() not in VOLATILE_HEADERS}
        self.seen.append((self.path, headers, json.loads(raw)))
        body = json.dumps(ANSWER).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        return


@pytest.mark.parametrize("config", [
    pytest.param(ModelConfig(name="m", provider="openai", model_name="gpt-x"), id="standard"),
    pytest.param(ModelConfig(name="m", provider="openai", model_name="o-x", paradigm="reasoning",
                             settings={"reasoning_effort": "low", "seed": 7}), id="reasoning-effort-and-seed"),
    pytest.param(ModelConfig(name="m", provider="openai", model_name="gpt-x", temperature=None,
                             max_output_tokens=5), id="no-temperature"),
])
def test_create_would_send_the_same_request(monkeypatch, tmp_path, config):
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "none.toml"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-body")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Capture)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}/v1")
    _Capture.seen = []

    async def both():
        adapter = OpenAIChat(config, max_connections=2)
        params = adapter.request_params(MESSAGES)
        transformed = await async_maybe_transform(params, completion_create_params.CompletionCreateParamsNonStreaming)
        completion = await adapter.complete(MESSAGES)
        await adapter.client.chat.completions.create(**params)
        await adapter.aclose()
        return params, transformed, completion

    try:
        params, transformed, completion = asyncio.run(both())
    finally:
        server.shutdown()
        server.server_close()
    (ours_path, ours_headers, ours_body), (their_path, their_headers, their_body) = _Capture.seen
    assert transformed == params
    assert ours_path == their_path == "/v1/chat/completions" and ours_body == their_body == params
    assert ours_headers == their_headers and ours_headers["authorization"] == "Bearer sk-test-body"
    assert (completion.text, completion.input_tokens, completion.output_tokens) == ("63 points.", 12, 3)
