"""Import a benchmark file of any supported layout, or a production trace export, from the browser (upload or a
server path under the import folders) as its own named set: records read, rejects with line and field, then the import
and its summary (for traces, also the run as deployed)."""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from core.ingest.format_sets import AS_PROTOCOL, FormatPreview, import_formats, import_roots, server_path
from core.ingest.importers import NATIVE
from core.ingest.importers.traces import Trace, trace_formats
from core.ingest.io import LineError
from core.ingest.sets import ON_CHANGED
from core.review.auth import Principal
from core.services.benchmarks import import_format, import_trace_export, preview_format, preview_traces
from ui.auth import guarded_write
from ui.session import engine

COPY_KEY = "import_upload_copy"  # session state: (upload id, path of its one temporary copy)
_COPIES: list[Path] = []  # this process's upload folder, made on first use and removed at exit


def _copies_root() -> Path:
    if not _COPIES:
        _COPIES.append(Path(tempfile.mkdtemp(prefix="gauntlet-uploads-")))
        atexit.register(shutil.rmtree, _COPIES[0], True)
    return _COPIES[0]


def upload_copy(state: MutableMapping[str, Any], uploaded) -> Path | None:
    """The one temporary copy of an upload, reused by every rerun while the same upload is chosen; choosing another
    upload (or none) removes the previous copy first."""
    upload_id = None if uploaded is None else str(getattr(uploaded, "file_id", None) or id(uploaded))
    held = state.get(COPY_KEY)
    if held is not None and held[0] == upload_id and Path(held[1]).is_file():
        return Path(held[1])
    discard_upload_copy(state)
    if uploaded is None:
        return None
    folder = Path(tempfile.mkdtemp(prefix="import-", dir=_copies_root()))
    path = folder / Path(uploaded.name).name
    path.write_bytes(uploaded.getvalue())
    state[COPY_KEY] = (upload_id, str(path))
    return path


def discard_upload_copy(state: MutableMapping[str, Any]) -> None:
    """Remove the upload's temporary copy (its private folder), if there is one."""
    held = state.pop(COPY_KEY, None)
    if held is not None:
        shutil.rmtree(Path(held[1]).parent, ignore_errors=True)


@contextmanager
def removing_upload_copy(state: MutableMapping[str, Any]) -> Iterator[None]:
    """Around an import: the upload's copy is removed afterwards, whatever the outcome (stored, refused, raised)."""
    try:
        yield
    finally:
        discard_upload_copy(state)


def _source_file(uploaded, typed: str) -> Path | None:
    """The chosen file: the upload's one temporary copy, or the checked server path."""
    path = upload_copy(st.session_state, uploaded)
    if path is not None:
        return path
    return guarded_write(lambda: server_path(typed)) if typed.strip() else None


def problems_frame(problems: list[LineError]) -> pd.DataFrame:
    """Rejected records or errors as a table: line, field, reason."""
    return pd.DataFrame([{"line": p.line, "field": p.field, "reason": p.message} for p in problems],
                        columns=["line", "field", "reason"])


def _preview_text(preview: FormatPreview) -> str:
    if not preview.parsed.ok:
        lines = len({e.line for e in preview.parsed.errors})
        return f"{len(preview.parsed.errors)} problem(s) in {lines} record(s): nothing can be imported from this file."
    rejected = len({e.line for e in preview.parsed.rejected})
    return (f"{preview.records} records read: {len(preview.parsed.instances)} valid, {rejected} rejected"
            + (f", {len(preview.changed)} would change existing instances" if preview.changed else "") + ".")


def _show_problems(problems: list[LineError], path: Path) -> None:
    """The problems table (line, field, reason) and its JSONL download."""
    if not problems:
        return
    st.dataframe(problems_frame(problems), hide_index=True, key="import_problems")
    rejects = "".join(json.dumps({"line": p.line, "field": p.field, "reason": p.message}) + "\n" for p in problems)
    st.download_button("Download the rejects (JSONL)", rejects, file_name=f"{path.name}.rejects.jsonl",
                       key="import_rejects_download")


def _trace_text(traces: list[Trace], errors: list[LineError], incomplete: list[LineError], skip: bool) -> str:
    if errors:
        return f"{len(errors)} problem(s) in {len({e.line for e in errors})} record(s): nothing can be imported from this file."
    left = len({e.line for e in incomplete})
    if incomplete and not skip:
        return f"{len(traces)} complete traces, {left} incomplete: nothing is imported unless the incomplete are left out."
    return f"{len(traces) + left} traces read: {len(traces)} complete, {left} incomplete left out."


def trace_import(principal: Principal, path: Path, fmt: str, skip_incomplete: bool) -> None:
    """A trace export: traces read, problems with line and field, then the set plus its deployed run."""
    parts = guarded_write(lambda: preview_traces(engine(), principal, path, fmt))
    if parts is None:
        return
    traces, errors, incomplete = parts
    st.markdown(f"**{path.name}** ({fmt}): {_trace_text(traces, errors, incomplete, skip_incomplete)}")
    _show_problems(sorted(errors + incomplete, key=lambda e: e.line), path)
    if errors or not traces or (incomplete and not skip_incomplete):
        return
    redact = st.toggle("Redact emails, phone numbers and names before storing", key="import_redact")
    name = st.text_input("Set name", value=f"{fmt} {path.stem} {datetime.now():%Y-%m-%d %H:%M}",
                         key=f"import_set_name_{fmt}_{path.name}")
    if st.button("Import as a new set", type="primary", key="import_run"):
        with removing_upload_copy(st.session_state):
            report = guarded_write(lambda: import_trace_export(engine(), principal, path, fmt, name, redact=redact,
                                                               skip_incomplete=skip_incomplete))
        if report is not None and report.ok and report.set_report is not None:
            st.success(f"Imported {report.set_report.summary}; {report.traces} traces, {report.documents} retrieved "
                       f"documents; run {report.run_id} as deployed ({report.model}).", icon=":material/check:")
        elif report is not None:
            st.error("Import refused: " + "; ".join(str(e) if e.line else e.message for e in report.errors[:5]))


def format_import_panel(principal: Principal) -> None:
    """Layout, file (upload or server path), set name and skip-invalid; the preview with rejects; the import."""
    formats = import_formats() + trace_formats()
    cols = st.columns([1, 2])
    fmt = cols[0].selectbox("Format", formats, index=formats.index(NATIVE), key="import_format",
                            help="The layouts of `gauntlet import --format`, trace exports included.")
    uploaded = cols[1].file_uploader("Upload a file", key="import_upload")
    typed = st.text_input("or a path on the server", key="import_path",
                          help="Read only under: " + ", ".join(map(str, import_roots())))
    protocol = (st.selectbox("Import as", [None, *AS_PROTOCOL[fmt]], key="import_as_protocol",
                             format_func=lambda p: p or "the format's own protocol") if fmt in AS_PROTOCOL else None)
    skip_invalid = st.toggle("Leave out invalid records (listed below) instead of importing nothing",
                             key="import_skip_invalid")
    path = _source_file(uploaded, typed)
    if path is None:
        st.info("Choose a file to see what it holds before anything is imported.")
        return
    if fmt in trace_formats():
        return trace_import(principal, path, fmt, skip_invalid)
    preview = guarded_write(lambda: preview_format(engine(), principal, path, fmt, skip_invalid, protocol))
    if preview is None:
        return
    st.markdown(f"**{path.name}** ({fmt}): {_preview_text(preview)}")
    _show_problems(preview.problems(), path)
    if not preview.parsed.ok:
        return
    name = st.text_input("Set name", value=f"{fmt} {path.stem} {datetime.now():%Y-%m-%d %H:%M}",
                         key=f"import_set_name_{fmt}_{path.name}")
    choice = (st.radio("What to do with the instances that would change", list(ON_CHANGED), index=None,
                       format_func=ON_CHANGED.get, key="import_on_changed") if preview.changed else None)
    if st.button("Import as a new set", type="primary", key="import_run", disabled=bool(preview.changed) and not choice):
        with removing_upload_copy(st.session_state):
            done = guarded_write(lambda: import_format(engine(), principal, path, fmt, name,
                                                       skip_invalid=skip_invalid, on_changed=choice, protocol=protocol))
        if done is not None and done[1].ok:
            st.success(f"Imported {done[1].summary}.", icon=":material/check:")
        elif done is not None:
            st.error("Import refused: " + "; ".join(str(e) if e.line else e.message for e in done[1].errors[:5]))
