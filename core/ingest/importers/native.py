"""The native interchange format (one InstanceSpec per JSONL line), as an importer like the others."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from core.ingest.importers.base import Importer, read_text_bytes
from core.ingest.io import ValidationReport, validate_lines
from core.store.schema import InstanceSpec


class NativeJSONL(Importer):
    name = "jsonl"
    title = "RAG Gauntlet interchange JSONL (default)"

    def parse(self, path: Path, *, skip_invalid: bool = False) -> ValidationReport:
        """Validate the file (gzip, bzip2 or zip unpacked); with skip_invalid, records that fail are `rejected`
        while lines that are not JSON objects still fail the whole file."""
        data, unreadable = read_text_bytes(path)
        if unreadable is not None:
            return ValidationReport(errors=[unreadable])
        report = validate_lines(data)
        if not skip_invalid or any(not e.field for e in report.errors):
            return report
        return replace(report, errors=[], rejected=report.errors)

    def typed(self, spec: InstanceSpec) -> dict[str, Any]:
        return spec.model_dump(mode="json")
