"""Build a protocol's benchmark from the browser, for every protocol whose package declares a builder
(`Protocol.builder`: RAG-Stress KB corruption, misleading evidence, DomainRAG, ...): the source on the server, the
builder's options, a progress bar moved by the builder per item, the build summary, the download, and the import as a
named set."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import streamlit as st

from core.config import REPO_ROOT
from core.ingest.format_sets import import_roots, server_path
from core.protocols import get_protocol
from core.protocols.base import BuildResult
from core.review.auth import Principal
from core.services import protocol_builds
from core.store.generated import mark_counts, spec_marks
from ui.auth import guarded_write
from ui.session import engine
from ui.set_import import import_as_set

SHARED = REPO_ROOT.parent / "shared" / "datasets"


def _out_dir(protocol: str) -> Path:
    root = Path(os.environ.get("GAUNTLET_BUILD_DIR", REPO_ROOT / "var" / "built"))
    return root / protocol / datetime.now().strftime("%Y%m%d-%H%M%S-%f")


def _run_build(principal: Principal, protocol: str, source_text: str, fmt: str, seed: int, limit: int,
               bm25: bool) -> BuildResult | None:
    """The build behind a progress bar: checking the source, building, done (errors shown, nothing written)."""
    builder = protocol_builds.builders()[protocol]
    bar = st.progress(0.0, text="Checking the source...")
    source = guarded_write(lambda: server_path(source_text, folder=builder.folder))
    if source is None:
        bar.empty()
        return None
    bar.progress(0.0, text=f"Building from {source.name} (limit {limit or 'none'})...")

    def moved(done: int, total: int) -> None:
        bar.progress(done / max(total, 1), text=f"Building from {source.name}: {done}/{total} items")

    try:
        built = guarded_write(lambda: protocol_builds.build_protocol(
            engine(), principal, protocol, source, _out_dir(protocol), fmt=fmt, seed=seed, limit=limit or None,
            bm25_only=bm25, progress=moved))
    except (FileNotFoundError, KeyError) as exc:
        st.error(f"Build failed: {exc}", icon=":material/error:")
        built = None
    bar.progress(1.0, text=f"Built {built.instances} instances." if built else "Build failed.")
    return built


def protocol_build_panel(principal: Principal, protocol: str) -> None:
    """The protocol's build form, then the last build's summary, download and import as a named set."""
    builder = protocol_builds.builders()[protocol]
    st.caption(builder.caption)
    with st.form(f"build_{protocol}"):
        source = st.text_input(builder.source_label, value=str(SHARED / builder.default_source), key=f"build_{protocol}_source",
                               help="On the server, under: " + ", ".join(map(str, import_roots())))
        cols = st.columns(4)
        fmt = cols[0].selectbox("Source layout", builder.formats, key=f"build_{protocol}_format") if builder.formats else ""
        seed = cols[1].number_input("Seed", 0, 2**31 - 1, 0, key=f"build_{protocol}_seed")
        limit = cols[2].number_input("Items (0 = all)", 0, 100_000, 20, key=f"build_{protocol}_limit",
                                     help="Only the first N source items (per sub-set for DomainRAG).")
        bm25 = cols[3].toggle("BM25 only (faster)", value=True, key=f"build_{protocol}_bm25",
                              disabled=not builder.bm25)
        submitted = st.form_submit_button("Build", type="primary")
    if submitted:
        built = _run_build(principal, protocol, source, fmt or "", int(seed), int(limit), bool(bm25))
        if built is not None:
            st.session_state[f"build_{protocol}_result"] = built
    built = st.session_state.get(f"build_{protocol}_result")
    if built is None or not built.out.exists():
        return
    st.success(f"Built {built.instances} {protocol} instances: {built.out}", icon=":material/check:")
    st.code("\n".join(built.summary), language=None)
    marks = mark_counts(spec_marks(built.out.read_text(encoding="utf-8").splitlines()))
    st.dataframe([{"generated": mark, "instances": n} for mark, n in marks.items()], hide_index=True,
                 key=f"build_{protocol}_generated")
    if built.skipped:
        with st.expander(f"{len(built.skipped)} items skipped, each with its reason"):
            st.text("\n".join(built.skipped))
    st.download_button("Download JSONL", built.out.read_bytes(), file_name=f"{protocol}.jsonl",
                       mime="application/jsonl", key=f"build_{protocol}_download")
    import_as_set(principal, built.out, f"{protocol} build {datetime.now():%Y-%m-%d %H:%M}", "build",
                  f"build_{protocol}")


def protocol_build_tab(principal: Principal, protocol: str) -> None:
    """A protocol's Build benchmark tab: its own declared renderer (`Protocol.build_panel`), else its builder's form."""
    panel = get_protocol(protocol).build_panel
    if panel is not None:
        panel.renderer()(principal)
    else:
        protocol_build_panel(principal, protocol)
