"""Importers of public benchmark layouts into the instance model: one module per format, one typed registry."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import Engine

from core.ingest.importers.base import Importer
from core.ingest.importers.crag import CRAG
from core.ingest.importers.domainrag import DomainRAG
from core.ingest.importers.followrag import FollowRAG
from core.ingest.importers.hotpotqa import HotpotQA
from core.ingest.importers.ifeval import IFEval
from core.ingest.importers.lit_ragbench import LitRagBench
from core.ingest.importers.medqa import MedQA
from core.ingest.importers.mmlu import MMLU
from core.ingest.importers.native import NativeJSONL
from core.ingest.importers.ramdocs import RAMDocs
from core.ingest.importers.rgb import RGB
from core.ingest.importers.searchqa import SearchQA
from core.ingest.importers.triviaqa import TriviaQA
from core.ingest.io import ImportReport, import_specs, load_domain_specs
from core.registry import Registry
from core.store.schema import InstanceSpec

NATIVE = "jsonl"
IMPORTERS: Registry[Importer] = Registry("import format")
for _importer in (NativeJSONL, LitRagBench, HotpotQA, MMLU, MedQA, DomainRAG, RGB, RAMDocs, CRAG, FollowRAG, IFEval,
                  TriviaQA, SearchQA):
    IMPORTERS.add(_importer.name, _importer())


def get_importer(name: str) -> Importer:
    """The importer of format `name`; an unknown name lists the known ones."""
    return IMPORTERS.get(name)


def import_source(
    engine: Engine, path: Path, *, fmt: str = NATIVE, on_existing: str = "reject", domains_path: Path | None = None,
    author: str = "", skip_invalid: bool = False, on_changed_question: str | None = None,
) -> ImportReport:
    """Map, validate and import a file of format `fmt` atomically: any bad record imports nothing (an existing id
    whose question changed needs `on_changed_question`, see core.ingest.io.import_specs).

    With skip_invalid the bad records are left out (listed in `rejected`) and the rest imported, still atomically."""
    parsed = get_importer(fmt).parse(Path(path), skip_invalid=skip_invalid)
    if not parsed.ok:
        return ImportReport(errors=parsed.errors)
    descriptions = {d.name: d.description for d in load_domain_specs(domains_path)} if domains_path else {}
    report = import_specs(engine, parsed.instances, on_existing=on_existing, domain_descriptions=descriptions,
                          author=author, on_changed_question=on_changed_question)
    if report.ok:
        report.warnings, report.rejected = parsed.warnings, parsed.rejected
    return report


def source_record(spec: InstanceSpec) -> object:
    """The source record an imported instance came from, exactly as read (by the importer named in its metadata)."""
    return get_importer(spec.metadata.get("format", NATIVE)).source_record(spec)


__all__ = ["IMPORTERS", "NATIVE", "Importer", "get_importer", "import_source", "source_record"]
