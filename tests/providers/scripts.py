"""Scripted fault rules shared by provider and runner tests: a prompt containing FAULT-<kind> gets that fault."""

from core.testing.fake_server import FAULT_KINDS, ScriptRule

FAULT_RULES = [ScriptRule(match=f"FAULT-{kind}\\b", fault=kind, retry_after=0.01) for kind in FAULT_KINDS]
