"""Quickstart: load the bundled sample into a throwaway database and print its composition.

Run: .venv/bin/python docs/examples/quickstart.py
"""

import tempfile
from pathlib import Path

from core.store.db import make_engine, upgrade
from core.ingest.io import import_file
from core.protocols.enterprise_rag.composition import composition

REPO = Path(__file__).resolve().parents[2]

with tempfile.TemporaryDirectory() as tmp:
    url = f"sqlite:///{tmp}/quickstart.db"
    upgrade(url)
    engine = make_engine(url)
    report = import_file(engine, REPO / "data/sample/enterprise_rag_sample.jsonl", domains_path=REPO / "data/sample/domains.jsonl")
    print(f"imported {len(report.created)} instances")
    table5, table6 = composition(engine)
    for row in table5:
        print(f"{row.domain:<16} {row.instances:>4} instances, {row.avg_constraints:.2f} constraints on average")
    for mode in table6:
        print(f"{mode.mode:<9} {mode.count:>4} ({mode.ratio:.0%}), {mode.augmented} augmented")
    engine.dispose()
