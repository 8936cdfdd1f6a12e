"""Shared fixtures: a small hand-checked corpus and a bundled-data subset."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.construction.corpus import CorpusDoc

REPO = Path(__file__).resolve().parents[2]

SMALL = [
    ("d1", "Gearbox oil", "Replace the gearbox oil every 4,000 operating hours using synthetic gear oil."),
    ("d2", "Yaw bearings", "Regrease the yaw bearings every 2,500 operating hours with lithium grease."),
    ("d3", "Transformer sampling", "Transformer oil samples are tested for acetylene and hydrogen twice a year."),
    ("d4", "Panel cleaning", "Solar panels are cleaned three times a year with deionised water."),
    ("d5", "Fleet vans", "Electric vans must start each shift with at least 80 percent charge."),
]


@pytest.fixture
def small_docs() -> list[CorpusDoc]:
    return [CorpusDoc(doc_id=i, domain="energy", title=t, text=x) for i, t, x in SMALL]
