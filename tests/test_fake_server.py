"""The fake LLM server: routes, scripted rules and faults, seeded random faults, concurrency without serialising."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from core.testing.fake_server import FakeLLMServer, ScriptRule, canned_answer, embedding_vector, load_script


def post(url: str, body: dict, timeout: float = 5.0) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


CHAT = {"model": "m", "messages": [{"role": "user", "content": "alpha beta gamma"}]}
ANTHROPIC = {"model": "m", "max_tokens": 5, "system": "be brief",
             "messages": [{"role": "user", "content": "alpha beta"}]}


@pytest.mark.parametrize(
    ("path", "body", "check"),
    [
        pytest.param("/v1/chat/completions", CHAT,
                     lambda d: d["choices"][0]["message"]["content"] == canned_answer("alpha beta gamma")
                     and d["usage"]["prompt_tokens"] == 3, id="openai-chat"),
        pytest.param("/v1/messages", ANTHROPIC,
                     lambda d: d["content"][0]["text"] == canned_answer("be brief\nalpha beta")
                     and d["usage"]["input_tokens"] == 4, id="anthropic-messages"),
        pytest.param("/v1/embeddings", {"model": "e", "input": ["x", "y"]},
                     lambda d: d["data"][1]["embedding"] == embedding_vector("y"), id="embeddings"),
    ],
)
def test_routes_answer_in_their_wire_format(path, body, check):
    with FakeLLMServer() as server:
        status, data = post(server.base_url + path, body)
        assert status == 200 and check(data)
        assert server.call_count == 1 and server.requests == [body]


@pytest.mark.parametrize(
    ("rules", "prompts", "expected_status"),
    [
        pytest.param([ScriptRule(match="alpha", fault="500", times=1)], ["alpha", "alpha"], [500, 200], id="times-1"),
        pytest.param([ScriptRule(match="alpha", fault="503")], ["alpha", "alpha"], [503, 503], id="always"),
        pytest.param([ScriptRule(match="zzz", fault="500")], ["alpha"], [200], id="no-match"),
        pytest.param([ScriptRule(match="a", reply="first"), ScriptRule(match="alpha", fault="500")], ["alpha"], [200],
                     id="first-rule-wins"),
    ],
)
def test_script_rules(rules, prompts, expected_status):
    with FakeLLMServer(rules) as server:
        statuses = [post(server.base_url + "/v1/chat/completions",
                         {"model": "m", "messages": [{"role": "user", "content": p}]})[0] for p in prompts]
    assert statuses == expected_status
    assert server.call_count == statuses.count(200)


SEED_CASES = [("no-seed-skips-the-seeded-rule", None, "plain"), ("seed-1-takes-it", 1, "seeded"),
              ("other-seed-skips-it", 2, "plain")]


@pytest.mark.parametrize(("seed", "reply"), [c[1:] for c in SEED_CASES], ids=[c[0] for c in SEED_CASES])
def test_a_seeded_rule_answers_only_requests_with_its_seed(seed, reply):
    rules = [ScriptRule(match="alpha", seed=1, reply="seeded"), ScriptRule(match="alpha", reply="plain")]
    body = {"model": "m", "messages": [{"role": "user", "content": "alpha"}]} | ({} if seed is None else {"seed": seed})
    with FakeLLMServer(rules) as server:
        assert post(server.base_url + "/v1/chat/completions", body)[1]["choices"][0]["message"]["content"] == reply


def test_429_carries_retry_after_and_reply_rule_is_used():
    rules = [ScriptRule(match="slow", fault="429", retry_after=2.5, times=1), ScriptRule(match="slow", reply="fine")]
    with FakeLLMServer(rules) as server:
        url = server.base_url + "/v1/chat/completions"
        request = urllib.request.Request(url, data=json.dumps(
            {"model": "m", "messages": [{"role": "user", "content": "slow"}]}).encode())
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request, timeout=5)
        assert info.value.code == 429 and info.value.headers["retry-after"] == "2.5"
        assert post(url, {"model": "m", "messages": [{"role": "user", "content": "slow"}]})[1]["choices"][0][
            "message"]["content"] == "fine"


def test_error_rate_is_seeded_and_mixed():
    def statuses(seed: int) -> list[int]:
        with FakeLLMServer(error_rate=0.5, seed=seed, hang_s=0.01) as server:
            out = []
            for i in range(40):
                try:
                    out.append(post(server.base_url + "/v1/chat/completions",
                                    {"model": "m", "messages": [{"role": "user", "content": f"q{i}"}]}, 2)[0])
                except Exception as error:  # noqa: BLE001 - resets, timeouts and broken bodies are the point
                    out.append(type(error).__name__)
            return out

    first, again = statuses(7), statuses(7)
    assert first == again
    assert 5 < sum(s != 200 for s in first) < 35
    assert len({s for s in first if s != 200}) >= 3


def test_concurrency_32_at_100ms_is_not_serialised():
    with FakeLLMServer(latency_ms=100) as server:
        started = time.perf_counter()
        with ThreadPoolExecutor(32) as pool:
            results = list(pool.map(lambda i: post(server.base_url + "/v1/chat/completions",
                                                   {"model": "m", "messages": [{"role": "user", "content": str(i)}]}),
                                    range(32)))
        elapsed = time.perf_counter() - started
    assert all(status == 200 for status, _ in results)
    assert elapsed < 0.8, f"32 concurrent calls took {elapsed:.2f}s"


@pytest.mark.parametrize("suffix", [pytest.param(".json", id="json"), pytest.param(".yaml", id="yaml")])
def test_load_script(tmp_path, suffix):
    rules = [{"match": "x", "fault": "429", "times": 2, "retry_after": 1}, {"match": "y", "reply": "hello"}]
    path = tmp_path / f"script{suffix}"
    path.write_text(json.dumps(rules))  # JSON is valid YAML too
    loaded = load_script(path)
    assert [r.fault for r in loaded] == ["429", None] and loaded[0].times == 2 and loaded[1].reply == "hello"


def test_a_request_whose_body_never_arrives_is_not_a_call():
    """A client killed between sending its headers and its body made no call (nothing recorded or counted)."""
    import socket
    from urllib.parse import urlparse

    with FakeLLMServer() as server:
        address = urlparse(server.base_url)
        with socket.create_connection((address.hostname, address.port)) as sock:
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 120\r\n\r\n")
        status, _ = post(server.base_url + "/v1/chat/completions",
                         {"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        time.sleep(0.2)
        assert status == 200
        assert [prompt["messages"][0]["content"] for prompt in server.requests] == ["hi"]
        assert server.call_count == 1
