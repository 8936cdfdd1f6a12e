"""tests/component_scan.py: the first scan for Streamlit components is reused, and its answer is the real one."""

from __future__ import annotations

import sys
import types

import pytest

from tests import component_scan


def fake_scanner(answer: list) -> types.ModuleType:
    module = types.ModuleType(component_scan.SCANNER)
    module.calls = 0

    def scan_component_manifests(max_workers: int | None = None) -> list:
        module.calls += 1
        return list(answer)

    module.scan_component_manifests = scan_component_manifests
    return module


@pytest.mark.parametrize("answer", [[], [("manifest", "root")]], ids=["no-components", "one-component"])
def test_the_first_scan_answers_every_later_one(monkeypatch, answer):
    scanner = fake_scanner(answer)
    monkeypatch.setitem(sys.modules, component_scan.SCANNER, scanner)
    assert component_scan.reuse_component_scan() and component_scan.reuse_component_scan()
    first, second = scanner.scan_component_manifests(), scanner.scan_component_manifests(max_workers=2)
    assert first == second == answer and first is not second  # a fresh list each call
    assert scanner.calls == 1


def test_nothing_to_reuse_before_the_scanner_is_imported(monkeypatch):
    monkeypatch.delitem(sys.modules, component_scan.SCANNER, raising=False)
    assert component_scan.reuse_component_scan() is False


def test_the_reused_answer_is_streamlits_own_scan(monkeypatch):
    from streamlit.components.v2 import manifest_scanner

    current = manifest_scanner.scan_component_manifests
    real = getattr(current, "original", current)  # this process may have reused its scan already
    monkeypatch.setattr(manifest_scanner, "scan_component_manifests", real)
    assert component_scan.reuse_component_scan()
    assert manifest_scanner.scan_component_manifests is not real
    reused = [(manifest.name, str(root)) for manifest, root in manifest_scanner.scan_component_manifests()]
    assert reused == [(manifest.name, str(root)) for manifest, root in real()]
