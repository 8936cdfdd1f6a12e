"""Backup and restore (`core.store.backup`): SQLite -> PostgreSQL -> SQLite re-exports byte-identical, password
hashes only on request, every corruption named by file, line and field with nothing written, a non-empty target
refused, ids and PostgreSQL sequences restored."""

from __future__ import annotations

import hashlib
import json
import random
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlmodel import Session, func, select

from bench.bench_labelling_load import label_payload, seed_experts
from bench.make_synthetic_results import make_results
from core.review.annotations import new_client_token
from core.review.auth import Principal, authenticate, create_user
from core.review.gold import load_response, record_gold_label
from core.store.backup import MANIFEST, BackupError, backup_tables, export_all, import_all
from core.store.db import make_engine
from core.store.models import Assignment, BenchmarkSet, BenchmarkSetMember, Domain, LLMCall, Model

ADMIN_PASSWORD = "admin-pass-123"
COVERED = ("instance", "constraint", "document", "model", "run", "response", "verdict", "annotation", "user",
           "assignment", "llmcall", "benchmark_set", "account_change")


def fresh_url(backend: str, request) -> str:
    """A new migrated, empty database on `backend` (the conftest's url factories; dropped after the test)."""
    return request.getfixturevalue({"sqlite": "sqlite_url_factory", "postgresql": "postgres_url_factory"}[backend])()


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> str:
    """A SQLite database with a scored synthetic run, experts with labels, an admin with a password, a cache row and a
    benchmark set (text primary keys that sort differently by locale)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('source') / 'source.db'}"
    make_results(url, n_models=2, n_instances=12, seed=3)
    engine = make_engine(url)
    create_user(engine, "admin", "admin", ADMIN_PASSWORD)
    experts = seed_experts(engine, 3)
    now = datetime.now(UTC)
    with Session(engine) as session:
        assigned = session.exec(select(Assignment.assignee, Assignment.target_id).order_by(Assignment.id)).all()[:9]
        session.add_all(LLMCall(key=key, provider="openai", model_name="m", request={"z": 1, "a": [1.5, "é"]},
                                text="ok ✓", purpose="generate") for key in ("b", "B", "a_", "é", "ab"))
        session.add(BenchmarkSet(name="set one", description="naïve"))
        session.flush()
        session.add(BenchmarkSetMember(set_id=1, instance_id=1))
        session.commit()
    for name, rid in assigned:
        principal = Principal(name, "expert", (), now, now)
        payload = label_payload(load_response(engine, rid).bundle, random.Random(rid))
        record_gold_label(engine, principal, rid, payload, new_client_token())
    assert experts
    engine.dispose()
    return url


def files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.glob("*.jsonl"))}


@pytest.mark.parametrize("hashes", [False, True], ids=["without-password-hashes", "with-password-hashes"])
def test_round_trip_sqlite_postgresql_sqlite_is_byte_identical(source, tmp_path, request, hashes):
    first, second, third = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    exported = export_all(make_engine(source), first, password_hashes=hashes)
    postgres = make_engine(fresh_url("postgresql", request))
    import_all(postgres, first, with_accounts=True)
    export_all(postgres, second, password_hashes=hashes)
    sqlite = make_engine(fresh_url("sqlite", request))
    restored = import_all(sqlite, second, with_accounts=True)
    export_all(sqlite, third, password_hashes=hashes)

    assert files(first) == files(second) == files(third)
    assert {name for name, n in exported.rows.items() if n} >= set(COVERED)
    assert restored.rows == exported.rows
    manifest = json.loads((first / MANIFEST).read_text())
    assert manifest["tables"]["verdict"]["rows"] == exported.rows["verdict"] > 0
    assert set(files(first)) == {f"{t.name}.jsonl" for t in backup_tables()}
    users = [json.loads(line) for line in (first / "user.jsonl").read_text().splitlines()]
    assert all(("password_hash" in u) is hashes for u in users)
    assert ("$argon2" in "".join(p.read_text() for p in first.iterdir())) is hashes
    assert (authenticate(postgres, "admin", ADMIN_PASSWORD) is not None) is hashes


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_restore_keeps_ids_and_new_rows_follow_them(source, tmp_path, request, backend):
    export_all(make_engine(source), tmp_path / "dump")
    engine = make_engine(fresh_url(backend, request))
    import_all(engine, tmp_path / "dump", with_accounts=True)
    with Session(make_engine(source)) as before, Session(engine) as session:
        names = select(Model.id, Model.name).order_by(Model.id)
        assert session.exec(names).all() == before.exec(names).all()
        session.add(Domain(name="Added after restore"))
        session.commit()
        assert session.exec(select(Domain.id).where(Domain.name == "Added after restore")).one() == 7
    assert create_user(engine, "newcomer", "viewer", "newcomer-pass-1").id > 1


def _edit(directory: Path, file: str, line: int, change) -> None:
    path = directory / file
    lines = path.read_text().splitlines()
    lines[line - 1] = change(lines[line - 1])
    path.write_text("\n".join(lines) + "\n")


def _set(field: str, value):
    return lambda text: json.dumps({**json.loads(text), field: value})


CORRUPTIONS = [
    pytest.param("verdict.jsonl", 3, _set("passed", "yes"), "verdict.jsonl:3: passed: must be true or false",
                 id="wrong-type"),
    pytest.param("response.jsonl", 2, lambda t: t[:40], "response.jsonl:2: malformed JSON", id="truncated-line"),
    pytest.param("model.jsonl", 1, _set("api_key", "sk-123"), "model.jsonl:1: api_key: unknown field",
                 id="unknown-field"),
    pytest.param("response.jsonl", 1, _set("model_id", 999), "response.jsonl:1: model_id: refers to model 999",
                 id="dangling-reference"),
    pytest.param("domain.jsonl", 2, _set("id", 1), "domain.jsonl:2: id: duplicate primary key", id="duplicate-id"),
    pytest.param("annotation.jsonl", 1, _set("client_token", "x\u0000y"), "annotation.jsonl:1: client_token: "
                 "contains a NUL character", id="nul-in-text"),
    pytest.param("annotation.jsonl", 2, _set("payload", {"a": {"b": float("inf")}}),
                 "annotation.jsonl:2: malformed JSON", id="infinity-in-json"),
    pytest.param("run.jsonl", 1, _set("created_at", "2025-01-01T00:00:00"), "run.jsonl:1: created_at: must be an "
                 "ISO 8601 time with a UTC offset", id="time-without-offset"),
    pytest.param("instance.jsonl", 1, _set("version", 2**40), "instance.jsonl:1: version: 1099511627776 does not "
                 "fit", id="integer-too-large"),
    pytest.param("user.jsonl", 1, _set("password_hash", "$argon2id$x"), "user.jsonl:1: password_hash: must not be in "
                 "this backup", id="hash-not-announced"),
    pytest.param("verdict.jsonl", 1, lambda t: "", "verdict.jsonl:1: malformed JSON", id="emptied-line"),
]


CASES = [pytest.param(backend, resealed, *case.values, id=f"{backend}-{case.id}{'-resealed' * resealed}")
         for case in CORRUPTIONS for backend, resealed in (("sqlite", False), ("postgresql", True))
         if backend == "sqlite" or case.values[0] == "verdict.jsonl"]


@pytest.mark.parametrize(("backend", "resealed", "file", "line", "change", "expected"), CASES)
def test_corrupted_backup_is_rejected_with_file_line_field_and_nothing_written(
        source, tmp_path, request, backend, resealed, file, line, change, expected):
    """The checks do not depend on the backend. Resealed: the manifest's checksum is updated to the corrupted file, so
    the problem is found only on reaching that line, after every earlier table was inserted (verdict is restored
    last): those rows are rolled back."""
    export_all(make_engine(source), tmp_path / "dump")
    _edit(tmp_path / "dump", file, line, change)
    if resealed:
        manifest = json.loads((tmp_path / "dump" / MANIFEST).read_text())
        manifest["tables"][file.removesuffix(".jsonl")]["sha256"] = hashlib.sha256(
            (tmp_path / "dump" / file).read_bytes()).hexdigest()
        (tmp_path / "dump" / MANIFEST).write_text(json.dumps(manifest))
    engine = make_engine(fresh_url(backend, request))
    with pytest.raises(BackupError) as caught:
        import_all(engine, tmp_path / "dump", with_accounts=True)
    shown = [str(p) for p in caught.value.problems]
    assert any(s.startswith(expected) for s in shown), shown
    checksum = f"{file}: sha256 differs from the manifest: the file was changed or truncated"
    assert (checksum in shown) is not resealed
    with Session(engine) as session:
        assert [session.exec(select(func.count()).select_from(t)).one() for t in backup_tables()] == \
            [0] * len(backup_tables())


@pytest.mark.parametrize(("replace", "outcome"), [(False, "refused"), (True, "replaced")],
                         ids=["refused-by-default", "replaced-when-asked"])
def test_non_empty_target(source, tmp_path, request, replace, outcome):
    export_all(make_engine(source), tmp_path / "dump")
    engine = make_engine(fresh_url("sqlite", request))
    create_user(engine, "someone", "viewer", "someone-pass-1")
    if outcome == "refused":
        with pytest.raises(BackupError, match=r"database: not empty: rows in account_change \(1\), user \(1\)"):
            import_all(engine, tmp_path / "dump", replace=replace, with_accounts=True)
        assert Session(engine).exec(select(func.count()).select_from(Model)).one() == 0
        return
    import_all(engine, tmp_path / "dump", replace=replace, with_accounts=True)
    export_all(engine, tmp_path / "again")
    assert files(tmp_path / "dump") == files(tmp_path / "again")


@pytest.mark.parametrize(("field", "value", "expected"), [
    ("schema_revision", "0001_initial_schema", "manifest.json: schema_revision: the backup is at '0001_initial_schema'"),
    ("format", "other/9", "manifest.json: format: expected 'gauntlet-backup/1'"),
], ids=["older-schema", "unknown-format"])
def test_manifest_checked(source, tmp_path, request, field, value, expected):
    export_all(make_engine(source), tmp_path / "dump")
    manifest = json.loads((tmp_path / "dump" / MANIFEST).read_text())
    (tmp_path / "dump" / MANIFEST).write_text(json.dumps({**manifest, field: value}))
    with pytest.raises(BackupError, match=expected.replace("(", r"\(")):
        import_all(make_engine(fresh_url("sqlite", request)), tmp_path / "dump", with_accounts=True)


@pytest.mark.parametrize(("settings", "expected"), [
    ({"api_key": "sk-live-123"}, "model.jsonl: settings: model 'leaky': setting 'api_key' looks like a secret"),
    ({"base_url_env": "MY_URL"}, None),
], ids=["secret-setting-stops-export", "variable-name-exported"])
def test_model_secrets_never_exported(tmp_path, request, settings, expected):
    engine = make_engine(fresh_url("sqlite", request))
    with Session(engine) as session:
        session.add(Model(name="leaky", provider="openai", settings=settings))
        session.commit()
    if expected is None:
        export_all(engine, tmp_path / "dump")
        assert "MY_URL" in (tmp_path / "dump" / "model.jsonl").read_text()
        return
    with pytest.raises(BackupError, match=expected):
        export_all(engine, tmp_path / "dump")


@pytest.mark.parametrize(("args", "code", "shown"), [
    (["export", "--all", "{dump}"], 1, "not empty: export into a new or empty directory"),
    (["import", "--all", "{dump}", "--with-accounts"], 0, "created 4 accounts: admin (admin), expert01 (expert)"),
    (["import", "--all", "{dump}", "--replace", "--with-accounts"], 0, "restored"),
    (["export", "--all", "{new}", "--with-password-hashes"], 0, "password hashes included"),
    (["export"], 2, "give --out FILE, or --all DIR"),
], ids=["export-into-used-directory", "import-all", "import-all-replace", "export-with-hashes", "export-without-target"])
def test_cli(source, tmp_path, monkeypatch, args, code, shown):
    from typer.testing import CliRunner

    from core.cli import app

    export_all(make_engine(source), tmp_path / "dump")
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", f"sqlite:///{tmp_path / 'target.db'}")
    result = CliRunner().invoke(app, [a.format(dump=tmp_path / "dump", new=tmp_path / "new") for a in args])
    assert result.exit_code == code, result.output
    assert shown in result.output


# --------------------------------------------------------------------------- accounts and signed manifests

KEY = b"operator-key-0123456789abcdef"
INTRUDER = "intruder-pass-123"


def _reseal(directory: Path, file: str) -> None:
    """Update the manifest to the changed file, as someone planting rows would (the checksum alone proves nothing)."""
    manifest = json.loads((directory / MANIFEST).read_text())
    data = (directory / file).read_bytes()
    manifest["tables"][file.removesuffix(".jsonl")] |= {"sha256": hashlib.sha256(data).hexdigest(),
                                                       "rows": data.count(b"\n"), "bytes": len(data)}
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def _plant_admin(directory: Path) -> None:
    """Add an admin account with a known password hash to a backup and reseal its manifest."""
    from core.review.auth import hash_password

    users = directory / "user.jsonl"
    row = json.loads(users.read_text().splitlines()[0])
    row |= {"id": 99, "username": "intruder", "role": "admin", "password_hash": hash_password(INTRUDER)}
    users.write_text(users.read_text() + json.dumps(row, sort_keys=True, separators=(",", ":")) + "\n")
    _reseal(directory, "user.jsonl")


def _empty(engine) -> bool:
    with Session(engine) as session:
        return all(session.exec(select(func.count()).select_from(t)).one() == 0 for t in backup_tables())


TRUST = [
    pytest.param(False, None, None, None, "user.jsonl:1: username: account 'admin' (admin) would be created",
                 id="accounts-refused-without-with-accounts"),
    pytest.param(False, None, _plant_admin, None, "user.jsonl:5: username: account 'intruder' (admin) would be "
                 "created", id="planted-admin-listed-and-refused"),
    pytest.param(True, KEY, _plant_admin, KEY, "manifest.json: the signature does not match",
                 id="planted-admin-in-signed-backup-refused"),
    pytest.param(True, KEY, lambda d: _edit(d, "verdict.jsonl", 1, _set("passed", False)), KEY,
                 "verdict.jsonl: sha256 differs from the manifest", id="changed-file-of-signed-backup-refused"),
    pytest.param(True, KEY, None, b"another-key-0123456789abcdef", "manifest.json: the signature does not match",
                 id="wrong-key-refused"),
    pytest.param(True, None, None, KEY, "manifest.hmac-sha256: missing: the backup is not signed",
                 id="unsigned-backup-refused-when-verifying"),
    pytest.param(True, KEY, None, KEY, None, id="signed-backup-verified-and-restored"),
    pytest.param(True, None, None, None, None, id="accounts-restored-when-asked"),
]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
@pytest.mark.parametrize(("with_accounts", "sign_key", "tamper", "verify_key", "refused"), TRUST)
def test_accounts_only_when_asked_and_a_signed_manifest_refuses_tampering(
        source, tmp_path, request, backend, with_accounts, sign_key, tamper, verify_key, refused):
    dump = tmp_path / "dump"
    export_all(make_engine(source), dump, password_hashes=True, sign_key=sign_key)
    if tamper:
        tamper(dump)
    engine = make_engine(fresh_url(backend, request))
    if refused is None:
        report = import_all(engine, dump, with_accounts=with_accounts, verify_key=verify_key)
        assert report.accounts == [("admin", "admin"), ("expert01", "expert"), ("expert02", "expert"),
                                   ("expert03", "expert")]
        assert authenticate(engine, "admin", ADMIN_PASSWORD) is not None
        return
    with pytest.raises(BackupError) as caught:
        import_all(engine, dump, with_accounts=with_accounts, verify_key=verify_key)
    shown = [str(p) for p in caught.value.problems]
    assert any(s.startswith(refused) for s in shown), shown
    assert _empty(engine)
    assert authenticate(engine, "intruder", INTRUDER) is None


@pytest.mark.parametrize(("export_args", "import_args", "code", "shown"), [
    pytest.param(["--sign-key-env", "BACKUP_KEY"], ["--with-accounts", "--verify-key-env", "BACKUP_KEY"], 0,
                 "manifest signature verified (key from BACKUP_KEY)", id="signed-and-verified"),
    pytest.param(["--sign-key-env", "BACKUP_KEY"], ["--with-accounts"], 0,
                 "the backup is signed but its signature was not checked", id="signed-not-verified"),
    pytest.param([], ["--verify-key-env", "BACKUP_KEY", "--with-accounts"], 1,
                 "manifest.hmac-sha256: missing: the backup is not signed", id="unsigned-refused-when-verifying"),
    pytest.param([], [], 1, "user.jsonl:4: username: account 'expert03' (expert) would be created: restore accounts "
                 "only with --with-accounts", id="accounts-listed-without-with-accounts"),
    pytest.param([], ["--with-accounts", "--verify-key-env", "UNSET_KEY"], 2,
                 "environment variable UNSET_KEY is not set", id="verify-key-unset"),
    pytest.param([], ["--with-accounts", "--verify-key-env", "SHORT_KEY"], 2,
                 "environment variable SHORT_KEY holds 5 bytes: a signing key needs at least 16", id="key-too-short"),
])
def test_cli_accounts_and_signatures(source, tmp_path, monkeypatch, export_args, import_args, code, shown):
    from typer.testing import CliRunner

    from core.cli import app

    monkeypatch.setenv("BACKUP_KEY", KEY.decode())
    monkeypatch.setenv("SHORT_KEY", "short")
    monkeypatch.delenv("UNSET_KEY", raising=False)
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", source)
    exported = CliRunner().invoke(app, ["export", "--all", str(tmp_path / "dump"), *export_args])
    assert exported.exit_code == 0, exported.output
    monkeypatch.setenv("GAUNTLET_DATABASE_URL", f"sqlite:///{tmp_path / 'target.db'}")
    result = CliRunner().invoke(app, ["import", "--all", str(tmp_path / "dump"), *import_args])
    assert result.exit_code == code, result.output
    assert shown in result.output
