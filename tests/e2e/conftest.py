"""Browser tests: one chromium per module (harness.one_browser_per_module, autouse here)."""

from tests.e2e.harness import one_browser_per_module

__all__ = ["one_browser_per_module"]
