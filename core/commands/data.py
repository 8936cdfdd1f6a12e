"""Benchmark data commands: init-db, validate, import, export, stats, schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from core.config import REPO_ROOT, database_url
from core.ingest.composition import composition_text, protocol_composition
from core.ingest.importers import IMPORTERS, NATIVE, get_importer, import_source
from core.ingest.importers.traces import trace_formats
from core.ingest.io import ON_CHANGED_QUESTION, export_instances, import_file, validate_file
from core.ingest.sets import free_set_name, name_imported_set
from core.plugins import DEFAULT_PROTOCOL
from core.registry import UnknownNameError
from core.store.benchmark import generated_counts
from core.store.db import get_engine, upgrade
from core.store.generated import spec_marks
from core.store.schema import InstanceSpec

SAMPLE_FILE = REPO_ROOT / "data" / "sample" / f"{DEFAULT_PROTOCOL}_sample.jsonl"  # the protocol of record's samples
BUILT_SAMPLE_FILE = REPO_ROOT / "data" / "sample" / f"{DEFAULT_PROTOCOL}_built.jsonl"
SAMPLE_FILES = (SAMPLE_FILE, BUILT_SAMPLE_FILE)
SAMPLE_DOMAINS = REPO_ROOT / "data" / "sample" / "domains.jsonl"
SCHEMA_FILE = REPO_ROOT / "data" / "schema" / "instance.schema.json"


def init_db(load_sample: bool = True) -> str:
    """Migrate the database to the latest schema and load the bundled sample (curated + built) if it is empty."""
    from sqlmodel import Session, select

    from core.store.models import Instance

    url = database_url()
    upgrade(url)
    engine = get_engine(url)
    with Session(engine) as session:
        empty = session.exec(select(Instance.id).limit(1)).first() is None
    if not (load_sample and empty):
        return f"database ready at {url}"
    loaded = 0
    for path in SAMPLE_FILES:
        report = import_file(engine, path, domains_path=SAMPLE_DOMAINS, author="sample")
        if not report.ok:
            raise RuntimeError(f"bundled sample {path.name} failed to import:\n" + "\n".join(e.located(path) for e in report.errors))
        loaded += len(report.created)
    return f"database ready at {url}; loaded {loaded} sample instances"


def instance_json_schema() -> str:
    """The JSON Schema of one interchange line, as pretty JSON."""
    return json.dumps(InstanceSpec.model_json_schema(), indent=2, sort_keys=True) + "\n"


def import_trace_file(file: Path, fmt: str, set_name: str, service: str, redact: bool, skip_incomplete: bool) -> None:
    """`gauntlet import --format otel|openinference|langfuse|phoenix FILE`: a set plus the run as deployed."""
    from core.ingest.deployed import import_traces
    from core.ingest.importers.redaction import redaction_text

    upgrade(database_url())
    report = import_traces(get_engine(), file, fmt, set_name=set_name, service=service, redact=redact,
                           skip_incomplete=skip_incomplete)
    for error in report.left_out:
        typer.echo(f"left out: {file}:{error.line}: {error.field or '-'}: {error.message}", err=True)
    for error in report.errors:
        typer.echo(f"{file}:{error.line}: {error.field or '-'}: {error.message}", err=True)
    if not report.ok:
        typer.echo("nothing imported; the database is unchanged", err=True)
        raise typer.Exit(1)
    assert report.set_report is not None  # an import without errors has its set's report
    left_out = f"; {len(report.left_out)} incomplete trace problem(s) left out" if report.left_out else ""
    typer.echo(f"{report.set_report.summary}; {report.traces} traces, {report.documents} retrieved documents{left_out}")
    typer.echo(f"run {report.run_id} as deployed ({report.model}): {report.traces} production answers; "
               f"score it with: gauntlet score {report.run_id}")
    typer.echo(redaction_text(report.redactions) if report.redactions is not None
               else "no redaction pass (--redact replaces emails, phone numbers and names before storing)")


def write_rejects(rejected: list, path: Path) -> Path:
    """The records an import left out, one JSON line per problem: line, field, reason."""
    path.write_text("".join(json.dumps({"line": e.line, "field": e.field, "reason": e.message}, ensure_ascii=False)
                            + "\n" for e in rejected), encoding="utf-8")
    return path


def register(app: typer.Typer) -> None:
    """Register the data commands on the gauntlet app."""

    @app.command("init-db")
    def init_db_command(
        no_sample: Annotated[bool, typer.Option("--no-sample", help="Do not load the bundled sample.")] = False,
    ) -> None:
        """Create or migrate the database; load the bundled sample benchmark if it is empty."""
        typer.echo(init_db(load_sample=not no_sample))

    @app.command("validate")
    def validate_command(file: Path) -> None:
        """Check every line of a benchmark JSONL file; report each problem with line and field; exit 1 if any."""
        report = validate_file(file)
        for error in report.errors:
            typer.echo(error.located(file), err=True)
        for warning in report.warnings:
            typer.echo(f"warning: {warning.located(file)}", err=True)
        if not report.ok:
            typer.echo(f"{len(report.errors)} problem(s) in {file}", err=True)
            raise typer.Exit(1)
        warned = f", {len(report.warnings)} warning(s)" if report.warnings else ""
        typer.echo(f"{file}: {len(report.instances)} valid instances{warned}")

    @app.command("import")
    def import_command(
        file: Annotated[Path | None, typer.Argument()] = None,
        new_version: Annotated[
            bool, typer.Option("--new-version", help="Store changed existing ids as a new version.")
        ] = False,
        changed_questions: Annotated[str | None, typer.Option(
            "--changed-questions", help="With --new-version, existing ids whose question changed (listed, and "
            "nothing imported without this choice): " + "; ".join(f"{k}: {v}" for k, v in ON_CHANGED_QUESTION.items())
        )] = None,
        domains: Annotated[Path | None, typer.Option(help="Domains JSONL (name, description).")] = None,
        fmt: Annotated[str, typer.Option("--format", help=f"Source layout: {', '.join(IMPORTERS.names())}; or a trace "
                                         f"export: {', '.join(trace_formats())}.")] = NATIVE,
        all_dir: Annotated[Path | None, typer.Option("--all", help="Restore a whole-database backup (export --all) "
                                                     "into an empty database.")] = None,
        replace: Annotated[bool, typer.Option("--replace", help="With --all: replace the database's data.")] = False,
        set_name: Annotated[str, typer.Option("--set", help="The name of the benchmark set the import creates "
                                              "(default '<file stem> (<format>)'; trace formats: '<service> traces "
                                              "(<file>)').")] = "",
        service: Annotated[str, typer.Option("--service", help="Trace formats: the deployed service's name (default: "
                                             "the traces' service.name / trace name, else the file name).")] = "",
        redact: Annotated[bool, typer.Option("--redact", help="Trace formats: replace emails, phone numbers and "
                                             "names (by pattern) before anything is stored; counts are shown.")] = False,
        skip_incomplete: Annotated[bool, typer.Option("--skip-incomplete", help="Trace formats: leave out (and list) "
                                                      "traces without a question, an answer or a document's text "
                                                      "instead of importing nothing.")] = False,
        with_accounts: Annotated[bool, typer.Option("--with-accounts", help="With --all: restore the backup's "
                                                    "accounts too (without it, a backup holding accounts is refused, "
                                                    "each listed).")] = False,
        verify_key_env: Annotated[str | None, typer.Option("--verify-key-env", metavar="VAR", help="With --all: "
                                                           "refuse the backup unless its manifest is signed with the "
                                                           "key in environment variable VAR and every file matches "
                                                           "it.")] = None,
        skip_invalid: Annotated[bool, typer.Option("--skip-invalid", help="Import the valid records and write the "
                                                   "others to a rejects file (line, field, reason) instead of "
                                                   "importing nothing.")] = False,
        rejects: Annotated[Path | None, typer.Option("--rejects", help="With --skip-invalid: where the rejects go "
                                                     "(default FILE.rejects.jsonl).")] = None,
    ) -> None:
        """Import a benchmark atomically (native JSONL, or --format LAYOUT): any bad record imports nothing.

        `--all DIR` restores a whole-database backup instead, in one transaction (core.commands.backup)."""
        if all_dir is not None or file is None:
            from core.commands.backup import import_everything

            if all_dir is None:
                raise typer.BadParameter("give a FILE, or --all DIR")
            return import_everything(all_dir, replace, with_accounts, verify_key_env)
        if fmt in trace_formats():
            return import_trace_file(file, fmt, set_name, service, redact, skip_incomplete)
        try:
            get_importer(fmt)
        except UnknownNameError as exc:
            typer.echo(f"{exc}; trace exports: {', '.join(trace_formats())}", err=True)
            raise typer.Exit(2) from None
        upgrade(database_url())
        if set_name and free_set_name(get_engine(), set_name) != set_name.strip():
            raise typer.BadParameter(f"a set named {set_name.strip()!r} already exists; choose another name",
                                     param_hint="--set")
        if changed_questions is not None and changed_questions not in ON_CHANGED_QUESTION:
            raise typer.BadParameter(f"choose {' or '.join(ON_CHANGED_QUESTION)}", param_hint="--changed-questions")
        report = import_source(
            get_engine(), file, fmt=fmt, on_existing="new_version" if new_version else "reject", domains_path=domains,
            skip_invalid=skip_invalid,
            on_changed_question=changed_questions,
        )
        for error in report.errors:
            typer.echo(error.located(file), err=True)
        if not report.ok:
            typer.echo("nothing imported; the database is unchanged", err=True)
            raise typer.Exit(1)
        for warning in report.warnings:
            typer.echo(f"note: {warning.located(file)}", err=True)
        typer.echo(
            f"imported {len(report.created)} new, {len(report.new_versions)} new versions, "
            f"{len(report.unchanged)} unchanged" + (f", {len(report.skipped)} with another question left out: "
                                                    f"{', '.join(report.skipped)}" if report.skipped else "")
        )
        members = [*report.created, *report.new_versions, *report.unchanged]
        if members:
            named = name_imported_set(get_engine(), members, set_name or free_set_name(get_engine(), f"{file.stem} ({fmt})"),
                                      source=file.name)
            typer.echo(f"benchmark set {named!r}: {len(members)} instances")
        if report.rejected:
            written = write_rejects(report.rejected, rejects or file.with_name(file.name + ".rejects.jsonl"))
            typer.echo(f"left out {len({e.line for e in report.rejected})} invalid record(s): {written}")

    @app.command("export")
    def export_command(
        out: Annotated[Path | None, typer.Option("--out", help="Output JSONL file.")] = None,
        domain: Annotated[str | None, typer.Option(help="Only this domain.")] = None,
        mode: Annotated[str | None, typer.Option(help="Only this mode: noisy | gap | conflict.")] = None,
        all_dir: Annotated[Path | None, typer.Option("--all", help="Back up the whole database into this new "
                                                     "directory: one JSONL file per table and a manifest.")] = None,
        with_password_hashes: Annotated[bool, typer.Option("--with-password-hashes",
                                                           help="With --all: include password hashes.")] = False,
        sign_key_env: Annotated[str | None, typer.Option("--sign-key-env", metavar="VAR", help="With --all: sign the "
                                                         "manifest (HMAC-SHA256) with the key in environment "
                                                         "variable VAR.")] = None,
    ) -> None:
        """Export the latest instance versions in the interchange format.

        `--all DIR` backs up every table instead (core.commands.backup); restore with `import --all DIR`."""
        if all_dir is not None or out is None:
            from core.commands.backup import export_everything

            if all_dir is None:
                raise typer.BadParameter("give --out FILE, or --all DIR")
            return export_everything(all_dir, with_password_hashes, sign_key_env)
        count = export_instances(get_engine(), out, domain=domain, mode=mode)
        marked = sum(m is not None for m in spec_marks(out.read_text(encoding="utf-8").splitlines()))
        typer.echo(f"wrote {count} instances to {out}" + (f" ({marked} marked LLM-generated or LLM-edited under "
                                                          "metadata.generated)" if marked else ""))

    @app.command("stats")
    def stats_command() -> None:
        """Print each protocol's composition: its declared tables (EnterpriseRAG's Tables 5 and 6), else its facets."""
        marks = generated_counts(get_engine())
        for part in protocol_composition(get_engine()):
            typer.echo(f"{part.protocol} ({part.instances} instances)")
            for table in part.tables:
                typer.echo(composition_text(table))
            if part.rows:
                typer.echo(f"{'Facet':<16}{'Value':<32}{'Count':>7}{'Share':>8}")
            for row in part.rows:
                typer.echo(f"{row.facet:<16}{row.value[:31]:<32}{row.count:>7}{row.share:>8.1%}")
            for count in marks:
                if count.protocol == part.protocol:
                    typer.echo(f"{'generated':<16}{count.generated[:47]:<48}{count.instances:>7}")
            typer.echo("")

    @app.command("schema")
    def schema_command(
        out: Annotated[Path, typer.Option("--out", help="Where to write the JSON Schema.")] = SCHEMA_FILE,
    ) -> None:
        """Write the JSON Schema of the interchange format (data/schema/instance.schema.json)."""
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(instance_json_schema(), encoding="utf-8")
        typer.echo(f"wrote {out}")
