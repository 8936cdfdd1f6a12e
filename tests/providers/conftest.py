"""Fixtures for provider tests: a fake LLM server on loopback that the real SDK clients are pointed at."""

from __future__ import annotations

import pytest

from core.testing.fake_server import FakeLLMServer

PLANTED_KEY = "sk-planted-SECRET-0123456789abcdef"


def point_sdks_at(monkeypatch, server: FakeLLMServer) -> None:
    """Env so that the openai and anthropic SDKs talk to `server` with a planted key."""
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url + "/v1")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", PLANTED_KEY)


@pytest.fixture
def isolated_secrets(tmp_path, monkeypatch):
    """No developer secrets.toml leaks into tests."""
    monkeypatch.setenv("GAUNTLET_SECRETS_FILE", str(tmp_path / "no-secrets.toml"))


@pytest.fixture
def fake_llm(monkeypatch, isolated_secrets):
    """A started fake server (with scripted faults) that both SDKs are configured to use."""
    from tests.providers.scripts import FAULT_RULES

    with FakeLLMServer(FAULT_RULES, hang_s=3, leak_auth_in_errors=True) as server:
        point_sdks_at(monkeypatch, server)
        yield server
