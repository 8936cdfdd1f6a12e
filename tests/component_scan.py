"""One scan of the installed packages for Streamlit components per test process, instead of one per AppTest.

Each AppTest, on its first run, scans every installed distribution's metadata for Streamlit v2 component manifests
(streamlit 1.67, testing/v1/app_test.py: `BidiComponentManager().discover_and_register_components`): about 0.11 s of
CPU for the ~160 distributions of the dev install, a quarter of a typical page test (tests/app, tests/pages and
tests/store under cProfile: 384 scans in 800 tests). A served app scans once, at start. The installed packages do not
change while the tests run, so the first scan's answer is reused (a fresh list each call).
"""

from __future__ import annotations

import functools
import sys

SCANNER = "streamlit.components.v2.manifest_scanner"


def reuse_component_scan() -> bool:
    """Once Streamlit's manifest scanner is imported, make its scan answer from the process's first scan; whether the
    scan is now reused (False until the module is imported, or if this Streamlit has no such function)."""
    scanner = sys.modules.get(SCANNER)
    scan = getattr(scanner, "scan_component_manifests", None)
    if scan is None:
        return False
    if getattr(scan, "reused", False):
        return True

    @functools.cache
    def first_scan() -> tuple:
        return tuple(scan())

    def scan_once(max_workers: int | None = None) -> list:
        return list(first_scan())

    scan_once.reused = True  # type: ignore[attr-defined]
    scan_once.original = scan  # type: ignore[attr-defined]
    scanner.scan_component_manifests = scan_once
    return True
