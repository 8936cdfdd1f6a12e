"""Compression bombs (.gz, .bz2, .zip, made here: 81 bytes to 160 KB on disk, 64 MiB unpacked) are refused while streaming, by
the expansion-ratio cap with the default settings and by the size cap when it is lower, with a message naming the
file, in the CLI (`gauntlet import`) and on the app's import path; memory stays near one chunk."""

from __future__ import annotations

import bz2
import io
import tracemalloc
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli import app
from core.ingest.importers.base import read_text_bytes
from core.ingest.importers.reading import UnpackLimits, decompressed
from core.services.benchmarks import preview_format
from tests.workspace_factories import principal, seeded_db

UNPACKED_MIB = 64
LINE = b'{"id": "x", "question": "q"}\n'
runner = CliRunner()


def _chunks() -> list[bytes]:
    return [b"\n" * (1 << 20)] * UNPACKED_MIB  # blank lines: what a JSONL reader would skip


def _gzip() -> bytes:
    packer = zlib.compressobj(9, wbits=31)
    return b"".join(packer.compress(c) for c in _chunks()) + packer.flush()


def _bzip2() -> bytes:
    packer = bz2.BZ2Compressor(9)
    return b"".join(packer.compress(c) for c in _chunks()) + packer.flush()


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive, \
            archive.open("data.jsonl", "w") as member:
        for chunk in _chunks():
            member.write(chunk)
    return buffer.getvalue()


BOMBS: dict[str, tuple[Callable[[], bytes], str]] = {"gzip": (_gzip, ".jsonl.gz"), "bzip2": (_bzip2, ".jsonl.bz2"),
                                                     "zip": (_zip, ".zip")}


@pytest.fixture(scope="module", params=list(BOMBS))
def bomb(request, tmp_path_factory) -> tuple[str, Path]:
    make, suffix = BOMBS[request.param]
    path = tmp_path_factory.mktemp("bombs") / f"bomb-{request.param}{suffix}"
    path.write_bytes(make())
    assert path.stat().st_size < 300_000  # small on disk ...
    return request.param, path


def _peak(action: Callable[[], object]) -> tuple[object, int]:
    tracemalloc.start()
    try:
        result = action()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_defaults_are_safe():
    assert UnpackLimits.from_env() == UnpackLimits(1024 << 20, 100.0)


def test_a_bomb_is_refused_by_the_expansion_ratio_while_streaming(bomb):
    kind, path = bomb
    (data, error), peak = _peak(lambda: read_text_bytes(path))
    assert data == b""
    assert error is not None
    assert error.message.startswith(f"{path.name}: the {kind} content expands more than 100 times")
    assert "GAUNTLET_UNPACK_MAX_RATIO" in error.message and "compression bomb" in error.message
    assert peak < 32 << 20, f"{peak / (1 << 20):.1f} MiB allocated for a {UNPACKED_MIB} MiB bomb"


def test_a_bomb_is_refused_by_the_size_cap_when_it_is_lower(bomb, monkeypatch):
    kind, path = bomb
    monkeypatch.setenv("GAUNTLET_UNPACK_MAX_MB", "4")
    monkeypatch.setenv("GAUNTLET_UNPACK_MAX_RATIO", "1e9")
    (data, error), peak = _peak(lambda: read_text_bytes(path))
    assert error is not None and data == b""
    assert f"{path.name}: the {kind} content unpacks to more than 4 MiB (GAUNTLET_UNPACK_MAX_MB)" in error.message
    assert peak < 12 << 20


def test_within_the_caps_the_same_file_unpacks_whole(bomb):
    _, path = bomb
    data = decompressed(path.read_bytes(), UnpackLimits(128 << 20, 1e9))
    assert len(data) == len(_chunks()) * len(_chunks()[0])


def test_the_cli_refuses_a_bomb_naming_the_file(bomb, db_url):
    _, path = bomb
    result = runner.invoke(app, ["import", "--format", "jsonl", str(path)])
    assert result.exit_code == 1, result.output
    assert f"{path}:1: {path.name}: the " in result.output
    assert "compression bomb" in result.output


def test_the_app_import_path_refuses_a_bomb_naming_the_file(bomb, tmp_path):
    _, path = bomb
    seeded = seeded_db(tmp_path)
    preview, peak = _peak(lambda: preview_format(seeded.engine, principal("admin"), path, "jsonl", False))
    errors = preview.parsed.errors  # type: ignore[attr-defined]
    assert [e.line for e in errors] == [1]
    assert errors[0].message.startswith(f"{path.name}: the ") and "compression bomb" in errors[0].message
    assert peak < 32 << 20


@pytest.mark.parametrize(("env", "value", "message"), [
    pytest.param("GAUNTLET_UNPACK_MAX_MB", "lots", "is not a number", id="size-not-a-number"),
    pytest.param("GAUNTLET_UNPACK_MAX_RATIO", "0", "must be a positive number", id="ratio-zero"),
    pytest.param("GAUNTLET_UNPACK_MAX_RATIO", "nan", "must be a positive number", id="ratio-nan"),
])
def test_a_bad_setting_is_named(monkeypatch, tmp_path, env, value, message):
    monkeypatch.setenv(env, value)
    path = tmp_path / "small.jsonl.gz"
    path.write_bytes(zlib.compress(LINE, wbits=31))
    _, error = read_text_bytes(path)
    assert error is not None and f"{env}={value!r} {message}" in error.message
