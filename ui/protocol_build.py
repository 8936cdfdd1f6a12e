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
from core.generation.registered_models import model_names
from core.generation.runner import BudgetReached
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
               bm25: bool, models: dict | None = None) -> BuildResult | None:
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
            bm25_only=bm25, progress=moved, **(models or {})))
    except (FileNotFoundError, KeyError, BudgetReached) as exc:
        st.error(f"Build failed: {exc}", icon=":material/error:")
        built = None
    bar.progress(1.0, text=f"Built {built.instances} instances." if built else "Build failed.")
    return built


def _model_choices(protocol: str) -> dict:
    """The generator, judge and budget inputs of a builder that can use an LLM where its rules run out."""
    names = ["", *model_names(engine())]
    cols = st.columns(3)
    generator = cols[0].selectbox(
        "Generator model (optional)", names, format_func=lambda m: m or "none: rules only",
        key=f"build_{protocol}_generator",
        help="Writes the edit of every item the rules skip or that fails a check; every item is checked, and the "
             "build's cost is shown for confirmation first.")
    judge = cols[1].selectbox("Judge model for the checks", names, format_func=lambda m: m or "the generator",
                              key=f"build_{protocol}_judge")
    budget = cols[2].number_input("Budget (USD, 0 = none)", 0.0, 10_000.0, 0.0, key=f"build_{protocol}_budget")
    return {"generator": generator or None, "judge": judge or None, "budget_usd": float(budget) or None}


def _ask_confirm(principal: Principal, protocol: str, args: tuple, models: dict) -> None:
    """The build's upper-bound LLM cost (cost.py, as `--estimate` prints it), kept until the admin confirms."""
    source_text, fmt, _, limit, _ = args
    builder = protocol_builds.builders()[protocol]
    source = guarded_write(lambda: server_path(source_text, folder=builder.folder))
    estimate = None if source is None else guarded_write(lambda: protocol_builds.estimate_protocol(
        engine(), principal, protocol, source, fmt=fmt, limit=limit or None, generator=models["generator"],
        judge=models["judge"]))
    if estimate is not None:
        st.session_state[f"build_{protocol}_pending"] = {"args": args, "models": models,
                                                         "estimate": estimate.summary(),
                                                         "max_cost_usd": estimate.max_cost_usd}


def _built(protocol: str, built: BuildResult | None) -> None:
    if built is not None:
        st.session_state[f"build_{protocol}_result"] = built


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
        models = _model_choices(protocol) if builder.estimate else {}
        submitted = st.form_submit_button("Build", type="primary")
    if submitted:
        args = (source, fmt or "", int(seed), int(limit), bool(bm25))
        if models.get("generator") or models.get("judge"):  # LLM calls cost money: confirmed before the build
            _ask_confirm(principal, protocol, args, models)
        else:
            st.session_state.pop(f"build_{protocol}_pending", None)
            _built(protocol, _run_build(principal, protocol, *args))
    pending = st.session_state.get(f"build_{protocol}_pending")
    if pending:
        st.info(pending["estimate"][:1].upper() + pending["estimate"][1:] + ".")
        if st.button(f"Confirm: build for at most ${pending['max_cost_usd']:.4f}", type="primary",
                     key=f"build_{protocol}_confirm"):
            st.session_state.pop(f"build_{protocol}_pending")
            _built(protocol, _run_build(principal, protocol, *pending["args"], models=pending["models"]))
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
