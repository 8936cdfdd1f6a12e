"""The native interchange format (one InstanceSpec per JSONL line), as an importer like the others."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.ingest.importers.base import Importer
from core.ingest.io import ValidationReport, validate_file
from core.store.schema import InstanceSpec


class NativeJSONL(Importer):
    name = "jsonl"
    title = "RAG Gauntlet interchange JSONL (default)"

    def parse(self, path: Path) -> ValidationReport:
        return validate_file(path)

    def typed(self, spec: InstanceSpec) -> dict[str, Any]:
        return spec.model_dump(mode="json")
