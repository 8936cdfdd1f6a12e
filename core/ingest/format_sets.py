"""Importing a file of any supported layout (core.ingest.importers) as its own named set, as the app does: map and
validate it, report how many records were read and which were rejected (line, field, reason), then import the valid
ones as a new set. A server path is read only under the configured import folders."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.engine import Engine

from core.config import REPO_ROOT
from core.ingest.importers import IMPORTERS, get_importer
from core.ingest.io import LineError, ValidationReport
from core.ingest.sets import SetImportReport, import_set, plan_import

IMPORT_ROOTS_ENV = "GAUNTLET_IMPORT_ROOTS"
# layout -> protocols its records can be imported under besides the importer's own (`gauntlet lit-ragbench import`)
AS_PROTOCOL = {"lit-ragbench": ("lit_ragbench",)}


def as_protocol(parsed: ValidationReport, protocol: str | None, skip_invalid: bool) -> ValidationReport:
    """The parsed records converted to `protocol` (None: as the importer maps them); a record that cannot be is an
    error, or with skip_invalid a rejected record."""
    if protocol is None or not parsed.ok:
        return parsed
    from core.protocols.lit_ragbench import as_lit_ragbench, conversion_errors

    problems = [LineError(line, f, m) for line, spec in parsed.instances for f, m in conversion_errors(spec)]
    if problems and not skip_invalid:
        return ValidationReport(errors=problems)
    bad = {p.line for p in problems}
    kept = [(line, as_lit_ragbench(spec)) for line, spec in parsed.instances if line not in bad]
    return ValidationReport(instances=kept, warnings=parsed.warnings,
                            rejected=sorted(parsed.rejected + problems, key=lambda e: e.line))


@dataclass
class FormatPreview:
    """A mapped file: the valid records, the rejected ones, and whether importing would change existing instances."""

    fmt: str
    parsed: ValidationReport
    changed: list[str] = field(default_factory=list)

    @property
    def records(self) -> int:
        """Records read: the valid ones and those rejected."""
        return len(self.parsed.instances) + len({e.line for e in self.parsed.rejected})

    def problems(self) -> list[LineError]:
        """What stops or trims the import: the errors (nothing imports) or the rejected records (left out)."""
        return self.parsed.errors or self.parsed.rejected


def import_formats() -> list[str]:
    """The layouts an app import reads: those of `gauntlet import --format` but the trace exports and the layouts
    read with files beside the one uploaded (TriviaQA-RC's evidence files, SearchQA's question folders)."""
    return [name for name in IMPORTERS.names() if IMPORTERS.get(name).one_file]


def import_roots() -> list[Path]:
    """Folders a server path may be read from: GAUNTLET_IMPORT_ROOTS (os.pathsep-separated), else the repository's
    data folder and the shared datasets beside the repository."""
    configured = os.environ.get(IMPORT_ROOTS_ENV, "")
    roots = [Path(p) for p in configured.split(os.pathsep) if p] or [REPO_ROOT / "data",
                                                                    REPO_ROOT.parent / "shared" / "datasets"]
    return [root.resolve() for root in roots]


def server_path(text: str, folder: bool = False) -> Path:
    """The file (or with `folder`, the folder) a server path names, refused (ValueError) outside the import folders
    or when it is not one."""
    path = Path(text.strip()).expanduser().resolve()
    if not any(path.is_relative_to(root) for root in import_roots()):
        raise ValueError(f"{path} is outside the import folders ({', '.join(map(str, import_roots()))}; "
                         f"set {IMPORT_ROOTS_ENV} to add one)")
    if not (path.is_dir() if folder else path.is_file()):
        raise ValueError(f"{path} is not a {'folder' if folder else 'file'}")
    return path


def preview_format_file(engine: Engine, path: Path, fmt: str, skip_invalid: bool,
                        protocol: str | None = None) -> FormatPreview:
    """Map and validate `path` as layout `fmt` (under `protocol`, one of AS_PROTOCOL[fmt]); with the ids that already
    exist with different content."""
    if protocol is not None and protocol not in AS_PROTOCOL.get(fmt, ()):
        raise ValueError(f"{fmt} records cannot be imported as {protocol}")
    parsed = as_protocol(get_importer(fmt).parse(path, skip_invalid=skip_invalid), protocol, skip_invalid)
    changed = [p.uid for p in plan_import(engine, parsed.instances) if p.action == "changed"] if parsed.ok else []
    return FormatPreview(fmt, parsed, changed)


def import_format_set(engine: Engine, path: Path, fmt: str, set_name: str, *, skip_invalid: bool = False,
                      on_changed: str | None = None, author: str = "",
                      protocol: str | None = None) -> tuple[FormatPreview, SetImportReport]:
    """Import the valid records of `path` (layout `fmt`, under `protocol` if given) as a new named set; nothing when
    the file has errors."""
    preview = preview_format_file(engine, path, fmt, skip_invalid, protocol)
    if not preview.parsed.ok:
        return preview, SetImportReport(set_name=set_name, errors=preview.parsed.errors)
    report = import_set(engine, preview.parsed.instances, set_name, on_changed=on_changed, origin="import",
                        source=f"{fmt}:{path.name}", author=author)
    return preview, report
