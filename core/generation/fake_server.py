"""A scriptable fake LLM server on loopback speaking the OpenAI and Anthropic wire formats, with fault injection."""

from __future__ import annotations

import hashlib
import json
import random
import re
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

Fault = Literal["429", "500", "503", "reset", "timeout", "malformed", "truncated"]
FAULT_KINDS: tuple[str, ...] = ("429", "500", "503", "reset", "timeout", "malformed", "truncated")
EMBEDDING_DIM = 16


class ScriptRule(BaseModel):
    """One scripted behaviour: when `match` is found in the prompt, reply with `reply` or inject `fault`."""

    model_config = ConfigDict(extra="forbid")

    match: str = Field("", description="regular expression searched in the prompt ('' matches every prompt)")
    reply: str | None = Field(None, description="text of the answer (default: a canned answer from the prompt)")
    fault: Fault | None = Field(None, description="fault to inject: " + " | ".join(FAULT_KINDS))
    times: int | None = Field(None, description="inject the fault on the first N matches only (default: always)")
    retry_after: float | None = Field(None, description="seconds sent in Retry-After with a 429 fault")
    seed: int | None = Field(None, description="apply only to requests carrying this seed (e.g. a run's repeats)")
    choices: list[str] | None = Field(None, description="replies drawn by the server's seeded random generator")
    reasoning: str | None = Field(None, description="reasoning returned apart from the reply, as reasoning models do "
                                                     "(OpenAI-compatible `reasoning_content`, Anthropic `thinking` block)")


def script_rule_fields() -> str:
    """Every field of a script rule with what it does, one per line."""
    return "\n".join(f"  {name}: {field.description}" for name, field in ScriptRule.model_fields.items())


def load_script(path: str | Path) -> list[ScriptRule]:
    """Read a list of ScriptRule from a JSON or YAML file; ValueError naming every rule field when it is not one."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        data = json.loads(text) if str(path).endswith(".json") else yaml.safe_load(text)
        if not isinstance(data, list | None):
            raise ValueError(f"the script is a {type(data).__name__}, not a list of rules")
        return [ScriptRule.model_validate(item) for item in data or []]
    except (ValueError, yaml.YAMLError) as error:
        raise ValueError(f"{path}: not a list of script rules ({error}).\nA rule is a mapping with these fields, "
                         f"all optional:\n{script_rule_fields()}") from None


def count_tokens(text: str) -> int:
    """Deterministic token count used by the fake server: whitespace-separated words."""
    return len(text.split())


def canned_answer(prompt: str) -> str:
    """A deterministic answer derived from the prompt's hash."""
    digest = hashlib.sha256(prompt.encode("utf-8")).hexdigest()
    return f"Based on [doc 1], the answer is reference {digest[:12]}. This reply is deterministic for the prompt."


def embedding_vector(text: str, dim: int = EMBEDDING_DIM) -> list[float]:
    """A deterministic unit-length vector derived from the text's hash."""
    digest = hashlib.sha256(text.encode("utf-8")).digest() * (dim * 4 // 32 + 1)
    raw = [v / 2**32 - 0.5 for v in struct.unpack(f"<{dim}I", digest[: dim * 4])]
    norm = sum(v * v for v in raw) ** 0.5 or 1.0
    return [v / norm for v in raw]


def prompt_text(body: dict[str, Any]) -> str:
    """Concatenate every message content of an OpenAI or Anthropic request body."""
    parts: list[str] = []
    system = body.get("system")
    if system:
        parts.append(_content_text(system))
    for message in body.get("messages", []):
        parts.append(_content_text(message.get("content", "")))
    if "input" in body:
        inputs = body["input"]
        parts.extend(inputs if isinstance(inputs, list) else [inputs])
    return "\n".join(str(p) for p in parts)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(block.get("text", "")) for block in content if isinstance(block, dict))
    return str(content)


class _Behaviour:
    """Decides, thread-safely, what to do with each request (rules first, then random faults, else answer)."""

    def __init__(self, script: list[ScriptRule], error_rate: float, seed: int) -> None:
        self.script = script
        self.patterns = [re.compile(rule.match) for rule in script]  # once: a long script overflows re's cache
        self.error_rate = error_rate
        self.rng = random.Random(seed)
        self.hits = [0] * len(script)
        self.lock = threading.Lock()

    def decide(self, prompt: str, seed: int | None = None) -> tuple[str | None, str, float | None]:
        """(fault or None, reply text, retry_after) for this prompt (and the request's seed, if any)."""
        return self.decide_all(prompt, seed)[:3]

    def decide_all(self, prompt: str, seed: int | None = None) -> tuple[str | None, str, float | None, str | None]:
        """(fault or None, reply text, retry_after, reasoning or None) for this prompt (and the request's seed)."""
        with self.lock:
            for index, (rule, pattern) in enumerate(zip(self.script, self.patterns, strict=True)):
                if not pattern.search(prompt) or (rule.seed is not None and rule.seed != seed):
                    continue
                self.hits[index] += 1
                within = rule.times is None or self.hits[index] <= rule.times
                if rule.fault and not within and rule.reply is None:
                    continue  # an exhausted fault rule without a reply lets later rules answer
                fault = rule.fault if within else None
                reply = self.rng.choice(rule.choices) if rule.choices else rule.reply
                return fault, reply if reply is not None else canned_answer(prompt), rule.retry_after, rule.reasoning
            if self.error_rate and self.rng.random() < self.error_rate:
                return self.rng.choice(FAULT_KINDS), canned_answer(prompt), 0.05, None
        return None, canned_answer(prompt), None, None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 256
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that hang up (killed runs, timeouts) are expected here; anything else is reported."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeLLMServer:
    """A real HTTP server on 127.0.0.1 (one thread per connection) serving chat, messages and embeddings."""

    def __init__(
        self,
        script: list[ScriptRule] | None = None,
        latency_ms: float = 0,
        error_rate: float = 0.0,
        seed: int = 0,
        *,
        port: int = 0,
        hang_s: float = 30.0,
        leak_auth_in_errors: bool = False,
    ) -> None:
        self.latency_ms = latency_ms
        self.hang_s = hang_s
        self.leak_auth_in_errors = leak_auth_in_errors
        self.behaviour = _Behaviour(list(script or []), error_rate, seed)
        self.requests: list[dict[str, Any]] = []
        self.call_count = 0
        self.fault_count = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.spans: list[tuple[float, float, str]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd = _Server(("127.0.0.1", port), _make_handler(self))
        self.port: int = self._httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        self._thread: threading.Thread | None = None

    def start(self) -> FakeLLMServer:
        """Serve in a background thread."""
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port (hanging requests are released)."""
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def serve_forever(self) -> None:
        """Serve in the calling thread until interrupted (used by the CLI)."""
        try:
            self._httpd.serve_forever(poll_interval=0.2)
        finally:
            self._stop.set()
            self._httpd.server_close()

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def record(self, body: dict[str, Any]) -> None:
        """Remember a received request body."""
        with self._lock:
            self.requests.append(body)

    def answered(self) -> None:
        """Count one successfully answered call."""
        with self._lock:
            self.call_count += 1

    def faulted(self) -> None:
        """Count one injected fault."""
        with self._lock:
            self.fault_count += 1

    def entered(self) -> float:
        """Count a request being answered (peak: max_in_flight); its start time."""
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        return time.monotonic()

    def left(self, started: float, prompt: str) -> None:
        """A request answered: one fewer in flight, its (start, end, prompt) span kept."""
        with self._lock:
            self.in_flight -= 1
            self.spans.append((started, time.monotonic(), prompt))

    def stats(self) -> dict[str, float]:
        """Calls answered, faults injected, the most requests ever in flight at once and the seconds spent answering
        (summed over requests: over a wall time, the mean number in flight)."""
        with self._lock:
            busy = sum(end - start for start, end, _ in self.spans)
            return {"calls": self.call_count, "faults": self.fault_count, "max_in_flight": self.max_in_flight,
                    "busy_s": busy}


def _make_handler(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        fake = server

    return Handler


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # TCP_NODELAY: a reply goes as two writes (headers, then body); with Nagle's algorithm the body waited for the
    # client's delayed ACK of the headers, about 40 ms a call on loopback (46 ms a call through the openai SDK, 2.4 ms
    # without)
    disable_nagle_algorithm = True
    fake: FakeLLMServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if len(raw) < length:  # the client went away before its body arrived (e.g. killed mid-send): no call
            self.close_connection = True
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, {"error": {"message": "invalid JSON body", "type": "invalid_request_error"}})
            return
        kind = _endpoint_kind(self.path)
        if kind is None:
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        self.fake.record(body)
        prompt = prompt_text(body)
        started = self.fake.entered()
        try:
            self._answer(kind, body, prompt)
        finally:
            self.fake.left(started, prompt)

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/stats":
            self._send_json(200, self.fake.stats())
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def _answer(self, kind: str, body: dict[str, Any], prompt: str) -> None:
        fault, reply, retry_after, reasoning = self.fake.behaviour.decide_all(prompt, body.get("seed"))
        if self.fake.latency_ms:
            time.sleep(self.fake.latency_ms / 1000)
        if fault:
            self.fake.faulted()
            self._fault(fault, kind, retry_after)
            return
        payload = _success_payload(kind, body, prompt, reply, reasoning)
        self.fake.answered()
        self._send_json(200, payload)

    def _fault(self, fault: str, kind: str, retry_after: float | None) -> None:
        if fault == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            return
        if fault == "timeout":
            self.fake._stop.wait(self.fake.hang_s)
            self.close_connection = True
            return
        if fault in ("malformed", "truncated"):
            self._send_broken(fault)
            return
        status = int(fault)
        headers = {}
        if status == 429 and retry_after is not None:
            headers = {"retry-after": f"{retry_after:g}", "retry-after-ms": str(int(retry_after * 1000))}
        message = f"injected fault {status}"
        if self.fake.leak_auth_in_errors:
            message += f" for credentials {self.headers.get('Authorization') or self.headers.get('x-api-key')}"
        self._send_json(status, _error_payload(kind, status, message), headers)

    def _send_broken(self, fault: str) -> None:
        payload = b'{"id": "broken", "choices": [{"message": {"content": ' if fault == "malformed" else b'{"id": "trunc'
        declared = len(payload) if fault == "malformed" else len(payload) + 200
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(declared))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()
        self.close_connection = True

    def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


def _endpoint_kind(path: str) -> str | None:
    path = path.split("?", 1)[0].rstrip("/")
    for suffix, kind in (("/chat/completions", "openai"), ("/messages", "anthropic"), ("/embeddings", "embeddings")):
        if path.endswith(suffix):
            return kind
    return None


def _success_payload(kind: str, body: dict[str, Any], prompt: str, reply: str,
                     reasoning: str | None = None) -> dict[str, Any]:
    model = str(body.get("model", "fake-model"))
    input_tokens = count_tokens(prompt)
    reasoning_tokens = count_tokens(reasoning or "")
    output_tokens = count_tokens(reply) + reasoning_tokens
    call_id = hashlib.sha256(f"{prompt}|{reply}".encode()).hexdigest()[:24]
    if kind == "anthropic":
        return {
            "id": f"msg_{call_id}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [*([{"type": "thinking", "thinking": reasoning, "signature": "fake"}] if reasoning else []),
                        {"type": "text", "text": reply}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        }
    if kind == "embeddings":
        inputs = body.get("input", [])
        inputs = inputs if isinstance(inputs, list) else [inputs]
        data = [{"object": "embedding", "index": i, "embedding": embedding_vector(str(t))}
                for i, t in enumerate(inputs)]
        usage = {"prompt_tokens": input_tokens, "total_tokens": input_tokens}
        return {"object": "list", "data": data, "model": model, "usage": usage}
    return {
        "id": f"chatcmpl-{call_id}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": reply,
                                             **({"reasoning_content": reasoning} if reasoning else {})},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": input_tokens, "completion_tokens": output_tokens,
                  "total_tokens": input_tokens + output_tokens,
                  **({"completion_tokens_details": {"reasoning_tokens": reasoning_tokens}} if reasoning else {})},
    }


def _error_payload(kind: str, status: int, message: str) -> dict[str, Any]:
    error_type = {429: "rate_limit_error", 500: "api_error", 503: "overloaded_error"}.get(status, "api_error")
    if kind == "anthropic":
        return {"type": "error", "error": {"type": error_type, "message": message}}
    return {"error": {"message": message, "type": error_type, "code": str(status)}}
