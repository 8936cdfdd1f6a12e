"""Backup and restore of a whole database as one JSONL file per table plus a manifest, between SQLite and PostgreSQL.

Each file holds one table's rows sorted by primary key (byte order for text keys), one JSON object per line with the
columns in name order; the manifest records the schema revision, the row count, size and sha256 of every file, and
when the backup was made. Exporting the same data again, from either backend, gives byte-identical table files.

Never exported: sign-in sessions and the session-signing key (secrets), leases and failed sign-ins (transient), and
account password hashes unless asked for. Provider API keys are never in the database (model settings hold variable
names only; a model whose settings look like a secret stops the export).

A restore is one transaction: every line is checked first (JSON, known and required fields, types, ranges, text every
backend stores, duplicate keys, references to rows of the backup); any problem names file, line and field and nothing
is written. It needs a database at the backup's schema revision with no data (or `replace=True`), restores the ids
and moves PostgreSQL's id sequences past them.

Accounts are restored only when asked (`with_accounts`): otherwise a backup holding accounts is refused, each account
it would create listed by line, name and role, so a planted account (an admin with a known password hash) is never
restored unseen. An export can sign its manifest with a key the operator keeps (HMAC-SHA256 in SIGNATURE; the
manifest holds every file's sha256), and a restore given the key refuses a missing or wrong signature, or any file
whose checksum differs, before reading a row.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Boolean,
    DateTime,
    Float,
    Integer,
    String,
    Table,
    UniqueConstraint,
    delete,
    func,
    inspect,
    select,
    text,
)
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.types import JSON, TypeDecorator
from sqlmodel import SQLModel

from core.store import models  # noqa: F401 - registers every table on SQLModel.metadata
from core.store.jsonl import parse_json, shown_field
from core.store.model_settings import check_settings  # the rule `models add` applies
from core.store.schema import storable_problems

FORMAT = "gauntlet-backup/1"
MANIFEST = "manifest.json"
SIGNATURE = "manifest.hmac-sha256"  # hex HMAC-SHA256 of manifest.json under a key the operator keeps
ACCOUNTS = "user"  # the table of accounts: restored only when asked
ACCOUNTS_FILE = f"{ACCOUNTS}.jsonl"
NOT_BACKED_UP = {
    "session_token": "sign-in sessions (secret)",
    "app_secret": "the session-signing key (secret)",
    "lease": "who executes a run right now (transient)",
    "login_failure": "failed sign-ins (transient throttle)",
    "run_verdict_count": "each run's verdict count, kept by triggers on verdict (restored verdicts count themselves)",
    "response_pack": "each run's per-response scores packed from its summaries (a restored run is read from its "
                     "summaries until it is summarised again: the same numbers)",
}
PASSWORD_COLUMN = (ACCOUNTS, "password_hash")
INT32 = 2**31 - 1
INT64 = 2**63 - 1
CHUNK = 1000
MAX_PROBLEMS = 100
INDEXED_TEXT_BYTES = 2000  # PostgreSQL refuses btree index entries over about 2,700 bytes


@dataclass(frozen=True)
class Problem:
    """One reason a backup cannot be restored: the file, line (0: the whole file) and field it concerns."""

    file: str
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {shown_field(self.field)}: {self.message}" if self.field else f"{where}: {self.message}"


class BackupError(ValueError):
    """A backup that cannot be written or restored, with every problem found."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"{problems[0]}{more}")


@dataclass
class BackupReport:
    """What an export wrote or an import restored: rows per table, the manifest, whether it is signed (and the
    signature was checked), and the accounts restored (name, role)."""

    rows: dict[str, int] = field(default_factory=dict)
    manifest: dict[str, Any] = field(default_factory=dict)
    signed: bool = False
    verified: bool = False
    accounts: list[tuple[str, str]] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.rows.values())


def backup_tables() -> list[Table]:
    """Every table a backup holds, parents before children (restore order)."""
    return [t for t in SQLModel.metadata.sorted_tables if t.name not in NOT_BACKED_UP]


def _file(table: Table) -> str:
    return f"{table.name}.jsonl"


def _columns(table: Table, password_hashes: bool) -> list[str]:
    skip = set() if password_hashes else {PASSWORD_COLUMN[1]} if table.name == PASSWORD_COLUMN[0] else set()
    return sorted(c.name for c in table.columns if c.name not in skip)


def schema_revision(conn: Connection) -> str:
    """The Alembic revision the database is at ('' when it was never migrated)."""
    if not inspect(conn).has_table("alembic_version"):
        return ""
    return conn.execute(text("SELECT version_num FROM alembic_version")).scalar() or ""


def _kind(column) -> Any:
    """The column's storage type (the implementation type of a decorated one such as UTCDateTime)."""
    return column.type.impl_instance if isinstance(column.type, TypeDecorator) else column.type


def _storable(value: Any) -> str | None:
    found = storable_problems(value)
    return next((f"{where}: {message}" if where else message for where, message in found), None)


def _encode(value: Any, column) -> Any:
    if value is None:
        return None
    if isinstance(_kind(column), DateTime):
        return value.astimezone(UTC).isoformat()
    if isinstance(_kind(column), Float):
        return float(value)
    return value


def _ordered(table: Table, dialect: str):
    keys = list(table.primary_key.columns)
    return [k.collate("C") if dialect == "postgresql" and isinstance(k.type, String) else k for k in keys]


def _line(row: dict[str, Any]) -> bytes:
    return json.dumps(row, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8") + b"\n"


def _secret_settings(table: Table, row: dict[str, Any]) -> None:
    if table.name == "model":
        try:
            check_settings(row["settings"] or {})
        except ValueError as exc:
            raise BackupError([Problem(_file(table), 0, "settings", f"model {row['name']!r}: {exc}")]) from None


def _snapshot(conn: Connection) -> None:
    if conn.dialect.name == "postgresql":
        conn.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"))
    elif conn.dialect.name == "sqlite":
        conn.exec_driver_sql("BEGIN")


def export_all(engine: Engine, directory: Path, password_hashes: bool = False,
               sign_key: bytes | None = None) -> BackupReport:
    """Write every backed-up table of the database to `directory` (new or empty) from one consistent snapshot;
    with `sign_key`, also the manifest's HMAC-SHA256 (SIGNATURE)."""
    directory = Path(directory)
    if directory.exists() and any(directory.iterdir()):
        raise BackupError([Problem(str(directory), 0, "", "not empty: export into a new or empty directory")])
    directory.mkdir(parents=True, exist_ok=True)
    report = BackupReport()
    tables: dict[str, dict[str, Any]] = {}
    with engine.connect() as conn:
        _snapshot(conn)
        revision = schema_revision(conn)
        for table in backup_tables():
            names = _columns(table, password_hashes)
            digest, size, count = hashlib.sha256(), 0, 0
            query = select(table).order_by(*_ordered(table, conn.dialect.name))
            with open(directory / _file(table), "wb") as out:
                for row in conn.execution_options(yield_per=CHUNK).execute(query).mappings():
                    record = {name: _encode(row[name], table.c[name]) for name in names}
                    _secret_settings(table, record)
                    line = _line(record)
                    out.write(line)
                    digest.update(line)
                    size, count = size + len(line), count + 1
            tables[table.name] = {"file": _file(table), "rows": count, "bytes": size, "sha256": digest.hexdigest()}
            report.rows[table.name] = count
        conn.rollback()
    report.manifest = {
        "format": FORMAT,
        "schema_revision": revision,
        "created_at": datetime.now(UTC).isoformat(),
        "source_backend": engine.dialect.name,
        "password_hashes": password_hashes,
        "tables": tables,
        "not_included": NOT_BACKED_UP,
    }
    (directory / MANIFEST).write_text(json.dumps(report.manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if sign_key is not None:
        (directory / SIGNATURE).write_text(manifest_signature(directory, sign_key) + "\n", encoding="utf-8")
        report.signed = True
    return report


def manifest_signature(directory: Path, key: bytes) -> str:
    """The HMAC-SHA256 of the backup's manifest file under `key`, in hex."""
    return hmac.new(key, (Path(directory) / MANIFEST).read_bytes(), hashlib.sha256).hexdigest()


def signature_problems(directory: Path, key: bytes) -> list[Problem]:
    """Why the manifest's signature does not hold under `key` (none when it does)."""
    path = Path(directory) / SIGNATURE
    if not path.is_file():
        return [Problem(SIGNATURE, 0, "", "missing: the backup is not signed")]
    given = path.read_text(encoding="utf-8", errors="replace").strip()
    if not hmac.compare_digest(given.encode(), manifest_signature(directory, key).encode()):
        return [Problem(MANIFEST, 0, "", "the signature does not match: the manifest was changed, or signed with "
                                         "another key")]
    return []


# --------------------------------------------------------------------------- restore


def _shown(value: Any) -> str:
    """A value for a message: a long integer by its digits, anything else by its repr cut to 60 characters."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > INT64:
        return f"a {len(str(abs(value)))}-digit integer"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _number(value: Any) -> tuple[Any, str | None]:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value, f"must be a finite number, got {_shown(value)}"
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    return (number, None) if math.isfinite(number) else (value, f"must be a finite number, got {_shown(value)}")


def _time(value: Any) -> tuple[Any, str | None]:
    try:
        parsed = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        parsed = None
    if parsed is None or parsed.utcoffset() is None:
        return value, f"must be an ISO 8601 time with a UTC offset, got {_shown(value)}"
    try:
        return parsed.astimezone(UTC), None
    except OverflowError:
        return value, f"{_shown(value)} is out of range in UTC"


def _text(value: Any, column) -> tuple[Any, str | None]:
    if not isinstance(value, str):
        return value, f"must be text, got {_shown(value)}"
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > INDEXED_TEXT_BYTES and _indexed(column):
        return value, f"{size} bytes: an indexed column holds at most {INDEXED_TEXT_BYTES} (PostgreSQL's limit)"
    return value, _storable(value)


def _indexed(column) -> bool:
    """Whether the column is in a key, an index or a unique constraint (a btree entry on PostgreSQL)."""
    groups = [*column.table.indexes, *(c for c in column.table.constraints if isinstance(c, UniqueConstraint))]
    return column.primary_key or column.unique or any(column.name in group.columns for group in groups)


def _decode(value: Any, column) -> tuple[Any, str | None]:
    """The Python value of one JSON field for `column`, or why it cannot be stored on every backend."""
    kind = _kind(column)
    if value is None:
        return None, None if column.nullable else "must not be null"
    if isinstance(kind, JSON):
        return value, _storable(value)
    if isinstance(kind, Boolean):
        return value, None if isinstance(value, bool) else f"must be true or false, got {_shown(value)}"
    if isinstance(kind, Integer):
        if not isinstance(value, int) or isinstance(value, bool):
            return value, f"must be an integer, got {_shown(value)}"
        limit = INT64 if kind.__class__.__name__ == "BigInteger" else INT32
        return value, None if abs(value) <= limit else f"{_shown(value)} does not fit the column's {limit.bit_length() + 1} bits"
    if isinstance(kind, Float):
        return _number(value)
    if isinstance(kind, DateTime):
        return _time(value)
    if isinstance(kind, String):
        return _text(value, column)
    return value, None


@dataclass
class _Keys:
    """Keys seen so far across the backup: primary keys per table and unique column groups per table."""

    primary: dict[str, set] = field(default_factory=dict)
    unique: dict[tuple[str, tuple[str, ...]], set] = field(default_factory=dict)


def _unique_groups(table: Table) -> list[tuple[str, ...]]:
    groups = [tuple(c.name for c in con.columns) for con in table.constraints if isinstance(con, UniqueConstraint)]
    groups += [tuple(c.name for c in index.columns) for index in table.indexes if index.unique]
    groups += [(c.name,) for c in table.columns if c.unique]
    return sorted(set(groups))


def _check_row(table: Table, raw: Any, wanted: list[str], keys: _Keys, problem) -> dict[str, Any] | None:
    """The row to insert, or None after reporting each problem through `problem(field, message)`."""
    if not isinstance(raw, dict):
        problem("", "must be a JSON object")
        return None
    row: dict[str, Any] = {}
    for name in sorted(set(raw) - set(wanted)):
        problem(name, "unknown field" if name not in table.c else "must not be in this backup (see the manifest)")
    for name in wanted:
        value, error = _decode(raw[name], table.c[name]) if name in raw else (None, "missing")
        if error:
            problem(name, error)
        else:
            row[name] = value
    if len(row) < len(wanted):
        return None
    pk = tuple(row[c.name] for c in table.primary_key.columns)
    seen = keys.primary.setdefault(table.name, set())
    if pk in seen:
        problem(",".join(c.name for c in table.primary_key.columns), f"duplicate primary key {list(pk)}")
    seen.add(pk)
    for group in _unique_groups(table):
        value = tuple(row.get(c) for c in group)
        if None in value:
            continue
        taken = keys.unique.setdefault((table.name, group), set())
        if value in taken:
            problem(",".join(group), f"duplicate value {list(value)} (must be unique)")
        taken.add(value)
    for fk in table.foreign_keys:
        value = row.get(fk.parent.name)
        target = fk.column.table
        if value is not None and (value,) not in keys.primary.get(target.name, ()):
            problem(fk.parent.name, f"refers to {target.name} {value}, which is not in the backup")
    return row


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    with open(path, "rb") as handle:
        yield from enumerate(handle, start=1)


def read_manifest(directory: Path) -> dict[str, Any]:
    """The manifest of a backup directory, checked for its format and its list of tables."""
    path = Path(directory) / MANIFEST
    if not path.is_file():
        raise BackupError([Problem(str(path), 0, "", "no manifest: not a gauntlet backup directory")])
    manifest, error = parse_json(path.read_text(encoding="utf-8", errors="replace"))
    if error or not isinstance(manifest, dict):
        raise BackupError([Problem(MANIFEST, 0, "", error or "must be a JSON object")])
    if manifest.get("format") != FORMAT:
        raise BackupError([Problem(MANIFEST, 0, "format", f"expected {FORMAT!r}, got {manifest.get('format')!r}")])
    listed = manifest["tables"] if isinstance(manifest.get("tables"), dict) else {}
    expected = {t.name for t in backup_tables()}
    problems = [Problem(MANIFEST, 0, "tables", f"table {name!r} missing") for name in sorted(expected - set(listed))]
    problems += [Problem(MANIFEST, 0, "tables", f"unknown table {name!r}") for name in sorted(set(listed) - expected)]
    if problems:
        raise BackupError(problems)
    return manifest


def _file_problems(directory: Path, table: Table, entry: Any) -> list[Problem]:
    name = _file(table)
    path = Path(directory) / name
    if not path.is_file():
        return [Problem(name, 0, "", "missing")]
    digest = hashlib.sha256(path.read_bytes()).hexdigest() if isinstance(entry, dict) else ""
    if not isinstance(entry, dict) or entry.get("sha256") != digest:
        return [Problem(name, 0, "", "sha256 differs from the manifest: the file was changed or truncated")]
    return []


def _row_count(conn: Connection, table: Table) -> int:
    return conn.execute(select(func.count()).select_from(table)).scalar_one()


def _occupied(conn: Connection) -> list[Problem]:
    full = [(t.name, n) for t in backup_tables() if (n := _row_count(conn, t))]
    if not full:
        return []
    listed = ", ".join(f"{name} ({n})" for name, n in full[:5])
    return [Problem("database", 0, "", f"not empty: rows in {listed}; restore into an empty database "
                                        "(gauntlet init-db --no-sample on a new URL) or replace its data (--replace)")]


def _clear(conn: Connection) -> None:
    kept = {"app_secret"}
    for table in reversed(SQLModel.metadata.sorted_tables):
        if table.name not in kept:
            conn.execute(delete(table))


def reset_sequences(conn: Connection) -> None:
    """Move PostgreSQL's id sequences past the largest restored id (a no-op elsewhere)."""
    if conn.dialect.name != "postgresql":
        return
    quote = conn.dialect.identifier_preparer
    for table in backup_tables():
        keys = list(table.primary_key.columns)
        if len(keys) != 1 or not isinstance(keys[0].type, Integer):
            continue
        name, column = quote.format_table(table), quote.quote(keys[0].name)
        conn.execute(text(f"SELECT setval(pg_get_serial_sequence(:table, :column), "
                          f"COALESCE((SELECT MAX({column}) FROM {name}), 0) + 1, false)"),
                     {"table": name, "column": keys[0].name})


def _restore_table(conn: Connection, directory: Path, table: Table, wanted: list[str], keys: _Keys,
                   problems: list[Problem]) -> int:
    name, batch, count = _file(table), [], 0

    def problem(line: int):
        return lambda where, message: problems.append(Problem(name, line, where, message))

    for number, raw in _lines(Path(directory) / name):
        if len(problems) >= MAX_PROBLEMS:
            break
        try:
            decoded = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problem(number)("", f"not UTF-8 (byte {exc.start + 1})")
            continue
        value, error = parse_json(decoded)
        if error:
            problem(number)("", error)
            continue
        row = _check_row(table, value, wanted, keys, problem(number))
        if row is None or problems:
            continue
        batch.append(row)
        count += 1
        if len(batch) >= CHUNK:
            conn.execute(table.insert(), batch)
            batch = []
    if batch and not problems:
        conn.execute(table.insert(), batch)
    return count


def _checked_files(directory: Path, manifest: dict[str, Any], verify_key: bytes | None) -> list[Problem]:
    """The file problems a restore can go on from (checksums, unless the manifest is signed); others raise."""
    problems = [p for t in backup_tables() for p in _file_problems(directory, t, manifest["tables"][t.name])]
    if verify_key is not None:
        problems = signature_problems(directory, verify_key) + problems
    if problems and (verify_key is not None or any(p.message == "missing" for p in problems)):
        raise BackupError(problems)
    return problems


def backup_accounts(directory: Path) -> list[tuple[int, str, str]]:
    """(line, username, role) of every account a backup would create (lines that are no account are left out)."""
    accounts = []
    for number, raw in _lines(Path(directory) / ACCOUNTS_FILE):
        value, _ = parse_json(raw.decode("utf-8", errors="replace"))
        if isinstance(value, dict):
            accounts.append((number, str(value.get("username")), str(value.get("role"))))
    return accounts


def _account_problems(directory: Path) -> list[Problem]:
    return [Problem(ACCOUNTS_FILE, line, "username", f"account {name!r} ({role}) would be created: restore "
                    "accounts only with --with-accounts, after checking each is yours")
            for line, name, role in backup_accounts(directory)]


def import_all(engine: Engine, directory: Path, replace: bool = False, with_accounts: bool = False,
               verify_key: bytes | None = None) -> BackupReport:
    """Restore a backup into the database at `engine` in one transaction; BackupError lists every problem found.

    A backup holding accounts is refused, each account listed, unless `with_accounts`; with `verify_key` the
    manifest's signature and every file's checksum must match before anything is read."""
    manifest = read_manifest(directory)
    hashes = manifest.get("password_hashes") is True
    problems = _checked_files(directory, manifest, verify_key)
    if not with_accounts and (accounts := _account_problems(directory)):
        raise BackupError(problems + accounts)
    report = BackupReport(manifest=manifest, signed=(Path(directory) / SIGNATURE).is_file(),
                          verified=verify_key is not None)
    with engine.connect() as conn:
        revision = schema_revision(conn)
        conn.rollback()
        if manifest.get("schema_revision") != revision:
            raise BackupError([Problem(MANIFEST, 0, "schema_revision",
                                       f"the backup is at {manifest.get('schema_revision')!r}, the database at "
                                       f"{revision!r}: restore with the gauntlet version that made the backup")])
        with conn.begin():
            if replace:
                _clear(conn)
            occupied = _occupied(conn)
            if occupied:
                raise BackupError(occupied)
            keys = _Keys()
            for table in backup_tables():
                count = _restore_table(conn, directory, table, _columns(table, hashes), keys, problems)
                listed = manifest["tables"][table.name].get("rows") if not problems else None
                if not problems and count != listed:
                    problems.append(Problem(_file(table), 0, "", f"{count} rows, the manifest says {listed}"))
                report.rows[table.name] = count
            if problems:
                raise BackupError(problems)
            reset_sequences(conn)
    report.accounts = [(name, role) for _, name, role in backup_accounts(directory)]
    return report
