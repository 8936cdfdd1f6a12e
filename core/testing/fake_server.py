"""The loopback fake LLM server under its familiar name: it lives in core.generation.fake_server (the `gauntlet
fake-server` command and the offline baseline provider use it, and they sit below this test-support package)."""

from core.generation.fake_server import *  # noqa: F403
