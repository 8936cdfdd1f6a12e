"""The import panel keeps one temporary copy per upload: every rerun with the same upload reuses it, another upload
replaces it, and the import removes it whatever the outcome (imported, refused, raised)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from core.services.benchmarks import import_format
from tests.conftest import FIXTURES
from tests.workspace_factories import principal, seeded_db
from ui import format_import
from ui.format_import import COPY_KEY, discard_upload_copy, removing_upload_copy, upload_copy

MINI = FIXTURES / "mini.jsonl"


@dataclass
class Upload:
    """What st.file_uploader returns, as far as the panel reads it."""

    name: str
    file_id: str
    data: bytes

    def getvalue(self) -> bytes:
        return self.data


def copies() -> list[Path]:
    root = format_import._copies_root()
    return sorted(p for p in root.rglob("*") if p.is_file())


@pytest.fixture(autouse=True)
def _clean_root():
    for path in copies():
        path.unlink()
    yield


def test_reruns_with_the_same_upload_keep_one_copy():
    state: dict = {}
    upload = Upload("mini.jsonl", "f1", MINI.read_bytes())
    paths = {upload_copy(state, upload) for _ in range(10)}
    assert len(paths) == 1 and copies() == list(paths)
    assert paths.pop().read_bytes() == MINI.read_bytes()


def test_another_upload_or_none_removes_the_previous_copy():
    state: dict = {}
    first = upload_copy(state, Upload("a.jsonl", "f1", b"{}\n"))
    second = upload_copy(state, Upload("b.jsonl", "f2", b"[]\n"))
    assert copies() == [second] and not first.exists()
    assert upload_copy(state, None) is None
    assert copies() == [] and COPY_KEY not in state


def _import_ok(tmp_path, path):
    seeded = seeded_db(tmp_path)
    _, report = import_format(seeded.engine, principal("admin"), path, "jsonl", "mini set")
    assert report.ok


def _import_refused(tmp_path, path):
    seeded = seeded_db(tmp_path)
    _, report = import_format(seeded.engine, principal("admin"), path, "not-a-format", "x")


def _import_raises(tmp_path, path):
    raise RuntimeError("the database went away")


@pytest.mark.parametrize("outcome", [pytest.param(_import_ok, id="imported"),
                                     pytest.param(_import_refused, id="refused"),
                                     pytest.param(_import_raises, id="raised")])
def test_the_import_removes_the_copy_whatever_the_outcome(tmp_path, outcome):
    state: dict = {}
    path = upload_copy(state, Upload("mini.jsonl", "f1", MINI.read_bytes()))
    for _ in range(3):  # reruns before the button
        assert upload_copy(state, Upload("mini.jsonl", "f1", MINI.read_bytes())) == path
    try:
        with removing_upload_copy(state):
            outcome(tmp_path, path)
    except Exception:  # noqa: BLE001 - the refusal or the crash is the case under test
        pass
    assert copies() == [] and not path.parent.exists() and COPY_KEY not in state


def test_discarding_twice_is_harmless():
    state: dict = {}
    upload_copy(state, Upload("a.jsonl", "f1", b"{}\n"))
    discard_upload_copy(state)
    discard_upload_copy(state)
    assert copies() == []
