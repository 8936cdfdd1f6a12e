"""EnterpriseRAG's own Build benchmark tab (declared by its package as `Protocol.build_panel`): the construction
pipeline (retrieval, constraint fusion, noisy/gap/conflict simulation) over the bundled or uploaded corpus, documents,
queries and atomic libraries; the build report, the preview, the download and the import as a named set."""

from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime
from pathlib import Path

import pandas as pd
import streamlit as st

from core.config import REPO_ROOT
from core.construction.build import DOMAIN_NAMES
from core.construction.documents import OFFICE_SUFFIXES
from core.generation.registered_models import model_names
from core.review.auth import Principal
from core.services.benchmarks import build_benchmark_file, estimate_benchmark_file
from core.store.generated import generated_mark, mark_cell
from ui.auth import guarded_write
from ui.session import engine
from ui.set_import import import_as_set

DATA = REPO_ROOT / "data"


def _out_dir() -> Path:
    return Path(os.environ.get("GAUNTLET_BUILD_DIR", REPO_ROOT / "var" / "built"))


def _save_uploads(files, folder: Path) -> list[Path]:
    paths = []
    for f in files or []:
        path = folder / Path(f.name).name
        path.write_bytes(f.getvalue())
        paths.append(path)
    return paths


def _build(principal: Principal, queries: list[Path], corpus: list[Path], libraries: list[Path], out: Path, **options):
    """The build as the signed-in admin; construction errors are shown here, refusals by guarded_write."""
    try:
        return build_benchmark_file(engine(), principal, queries, corpus, libraries, out, **options)
    except (ValueError, FileNotFoundError, KeyError) as exc:
        st.error(f"Build failed: {exc}")
        return None


def _start(principal: Principal, options: dict) -> None:
    """Run the build with `options` and keep its report for the page."""
    with st.spinner("Retrieving, fusing constraints and simulating bundles..."):
        report = guarded_write(lambda: _build(principal, options["queries"], options["corpus"], options["libraries"],
                                              options["out"], **{k: v for k, v in options.items()
                                                                 if k not in ("queries", "corpus", "libraries", "out")}))
    if report:
        st.session_state["build_report"] = report.to_dict()


def _corpus_report(corpus: dict, queries: dict) -> None:
    """What the document import read: chunks per file, languages, duplicates left out; queries real vs generated."""
    if queries:
        st.caption("Questions: " + ", ".join(f"{n} {origin}" for origin, n in sorted(queries.items())))
    if not corpus:
        return
    st.subheader("Documents imported")
    st.caption(f"{len(corpus['files'])} files, {corpus['chunks']} chunks; languages: "
               + ", ".join(f"{lang} {n}" for lang, n in sorted(corpus["languages"].items())))
    st.dataframe(pd.DataFrame(sorted(corpus["by_file"].items()), columns=["File", "Chunks"]), hide_index=True,
                 key="build_files")
    if corpus["duplicates"]:
        st.info(f"{len(corpus['duplicates'])} duplicate chunks left out: "
                + "; ".join(f"{dup} repeats {first}" for dup, first in sorted(corpus["duplicates"].items())))


def instruction_set_tab(principal: Principal) -> None:
    """The EnterpriseRAG build: inputs, options, the report, the preview, the download and the import as a set."""
    st.caption(
        "Pairs each query with a fused instruction set sampled from the atomic libraries and a retrieved document "
        "bundle under one of three modes: noisy (supporting documents among near-misses), knowledge gap (every "
        "answering document removed) and factual conflict (a contradicting document added). Same seed, same file."
    )
    with st.form("build_form"):
        source = st.radio("Inputs", ["Bundled fictional corpus (six domains)", "Upload my own files"], horizontal=True,
                          key="build_source")
        domains = st.multiselect("Domains", list(DOMAIN_NAMES), default=list(DOMAIN_NAMES),
                                 format_func=DOMAIN_NAMES.get, key="build_domains")
        uploads = st.columns(4)
        document_files = uploads[0].file_uploader(
            "Documents", type=[s.lstrip(".") for s in OFFICE_SUFFIXES], accept_multiple_files=True,
            help="PDF, Word, PowerPoint, Excel, HTML, Markdown or text files: converted and cut into chunks that keep "
                 "their file, page or slide and section; one unreadable file stops the import.")
        corpus_files = uploads[1].file_uploader("Corpus JSONL", type=["jsonl"], accept_multiple_files=True)
        query_files = uploads[2].file_uploader("Questions (JSONL or CSV)", type=["jsonl", "csv"],
                                               accept_multiple_files=True)
        library_files = uploads[3].file_uploader("Libraries YAML", type=["yaml"], accept_multiple_files=True)
        cols = st.columns(4)
        seed = cols[0].number_input("Seed", 0, 2**31 - 1, 0, key="build_seed")
        top_k = cols[1].number_input("Documents per bundle", 3, 30, 10, key="build_top_k")
        per_domain = cols[2].number_input("Queries per domain (0 = all)", 0, 1000, 0, key="build_per_domain")
        dense = cols[3].toggle("Dense + BM25 (hybrid)", value=True, key="build_dense",
                               help="Off: BM25 only (faster). On: adds the offline MiniLM embedder with RRF fusion.")
        models = ["", *model_names(engine())]
        llm = st.columns(3)
        generator = llm[0].selectbox(
            "Generator model (optional)", models, format_func=lambda m: m or "none: rules only", key="build_generator",
            help="Edits one fact (conflict) or removes the answer in meaning (gap) where the rules cannot; every "
                 "conflict and gap is checked, and the build's cost is shown for confirmation first.")
        judge = llm[1].selectbox("Judge model for the checks", models, format_func=lambda m: m or "the generator",
                                 key="build_judge")
        budget = llm[2].number_input("Budget (USD, 0 = none)", 0.0, 10_000.0, 0.0, key="build_budget")
        submitted = st.form_submit_button("Build", type="primary")

    if submitted:
        work = Path(tempfile.mkdtemp(prefix="gauntlet-build-"))
        if source.startswith("Upload"):
            (work / "documents").mkdir()
            corpus, queries = _save_uploads(corpus_files, work), _save_uploads(query_files, work)
            if _save_uploads(document_files, work / "documents"):
                corpus.append(work / "documents")
            libraries = _save_uploads(library_files, work) or [DATA / "libraries"]
        else:
            corpus, queries, libraries = [DATA / "corpus"], [DATA / "queries"], [DATA / "libraries"]
        if not corpus or not queries or (not domains and not source.startswith("Upload")):
            st.error("Choose at least one domain and provide a corpus and a query file.")
        else:
            out_dir = _out_dir()
            out_dir.mkdir(parents=True, exist_ok=True)
            out = out_dir / f"benchmark-seed{seed}.jsonl"

            chosen = domains if not source.startswith("Upload") else None  # uploaded questions keep their domains
            shared = {"seed": int(seed), "top_k": int(top_k), "domains": chosen,
                      "max_queries_per_domain": int(per_domain) or None}
            pending = {"queries": queries, "corpus": corpus, "libraries": libraries, "out": out, **shared,
                       "embedder": "minilm-onnx" if dense else None, "generator": generator or None,
                       "judge": judge or None, "budget_usd": float(budget) or None}
            if generator or judge:  # LLM calls cost money: the estimate is confirmed before the build starts
                estimate = guarded_write(lambda: estimate_benchmark_file(
                    engine(), principal, queries, corpus, generator=generator or None, judge=judge or None, **shared))
                if estimate is not None:
                    st.session_state["build_pending"] = {**pending, "estimate": estimate.summary(),
                                                         "max_cost_usd": estimate.max_cost_usd}
            else:
                st.session_state.pop("build_pending", None)
                _start(principal, pending)

    pending = st.session_state.get("build_pending")
    if pending:
        st.info(pending["estimate"][:1].upper() + pending["estimate"][1:] + ".")
        if st.button(f"Confirm: build for at most ${pending['max_cost_usd']:.4f}", type="primary",
                     key="build_confirm"):
            st.session_state.pop("build_pending")
            _start(principal, {k: v for k, v in pending.items() if k not in ("estimate", "max_cost_usd")})

    report = st.session_state.get("build_report")
    if report:
        out = Path(report["out_path"])
        st.success(f"Built {report['instances']} instances in {report['seconds']} s "
                   f"(average {report['avg_constraints']} constraints per instance).")
        metrics = st.columns(3)
        for col, key, title in zip(metrics, ("by_mode", "by_origin", "by_domain"), ("Mode", "Origin", "Domain"), strict=True):
            counts = pd.DataFrame(sorted(report[key].items()), columns=[title, "Instances"])
            counts["Share"] = (counts["Instances"] / max(report["instances"], 1)).map("{:.1%}".format)
            col.dataframe(counts, hide_index=True)
        if report.get("checks"):
            st.caption(f"Conflicts and gaps checked: {report.get('generated', 0)} written by the generator, "
                       f"{report.get('regenerated', 0)} written again after a failed check, "
                       f"{len(report.get('dropped_by_checks', []))} dropped by the checks"
                       + (f"; LLM calls {report['spent']['calls']} paid (${report['spent']['paid_usd']:.4f}), "
                          f"{report['spent']['cached']} from the cache" if report.get("spent") else "") + ".")
            st.dataframe(pd.DataFrame([{"check": name, **row} for name, row in report["checks"].items()]),
                         hide_index=True, key="build_checks")
        for problem in report["skipped"]:
            st.warning(problem)
        _corpus_report(report.get("corpus") or {}, report.get("queries") or {})
        if out.exists():
            rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
            st.dataframe(pd.DataFrame([{
                "id": r["id"], "domain": r["domain"], "mode": r["mode"], "origin": r["origin"],
                "constraints": len(r["constraints"]), "documents": len(r["documents"]), "query": r["query"],
                "question": r.get("metadata", {}).get("query_origin", "real"),
                "generated": mark_cell(generated_mark(r.get("metadata"), len(r["constraints"]))),
            } for r in rows]), hide_index=True, key="build_preview")
            st.download_button("Download JSONL", out.read_bytes(), file_name=out.name, mime="application/jsonl",
                               key="build_download")
            import_as_set(principal, out, f"build {out.stem} {datetime.now():%Y-%m-%d %H:%M}", "build", "build")
