"""Gold labels and adjudication: draw a stratified sample of a run for two experts each, settle label and
verification disagreements, move labels in and out as JSONL, and plan the next labels (gold budget planner)."""

import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

from core.config import REPO_ROOT
from core.review.annotations import DECISIONS, DEFAULT_SAMPLE_SIZE, export_labels, load_bundle, malformed_annotations
from core.review.gold import (
    SAMPLING_STRATEGIES,
    active_experts,
    design_evidence,
    draw_gold_sample,
    expert_progress,
    label_disagreements,
    label_items,
    labelable_run,
    load_response,
    record_adjudication,
    sample_runs,
)
from core.review.label_import import import_annotations
from core.review.verification import overlap_setting, record_verification_adjudication, verification_disagreements
from core.store.benchmark import marks_by_response
from core.store.generated import mark_cell
from core.store.sanitize import plain_markdown
from ui import gold_plan_view
from ui.auth import guarded_write, require_page, show_guidelines_sidebar
from ui.confirm import confirm, show_confirmations
from ui.session import engine
from ui.workspace import (
    _token,
    label_fields,
    mark_suffix,
    missing_answers,
    render_bundle,
    render_evidence_edits,
    render_response,
    render_verification_decision,
    sample_blinding_panel,
)

principal = require_page(__file__)
show_guidelines_sidebar()
st.title("Gold labels & adjudication")
show_confirmations()
malformed = malformed_annotations(engine())
if malformed:
    listed = "\n".join(f"- {plain_markdown(str(m))}" for m in malformed[:20])
    more = f"\n- … and {len(malformed) - 20} more" if len(malformed) > 20 else ""
    st.warning(f"{len(malformed)} stored labels are malformed and were skipped by every page and statistic:\n\n"
               f"{listed}{more}", icon=":material/warning:")

runs = sample_runs(engine())
experts_domains = active_experts(engine())
experts = list(experts_domains)
labelable = labelable_run(engine(), runs, experts_domains)


def _draw_sample() -> None:
    """Draw a stratified sample of a run for two experts each, and the sample's blinding."""
    with st.form("draw_sample"):
        run = st.selectbox("Run", runs, index=labelable if runs else None, format_func=lambda r: r.label,
                           key="sample_run", help="Opens on the newest run two experts' domains can cover.")
        evidence = design_evidence()
        strategy = st.radio("How to choose", SAMPLING_STRATEGIES, horizontal=True, key="sample_strategy",
                            format_func={"stratified": "stratified by domain, mode and model (default)",
                                         "uncertainty": "where the judges are least sure (10% uniform)",
                                         "active": "active inference (half where the judges are least sure, "
                                                   "half uniform)"}.get,
                            help="Every way records each response's inclusion probability, so the judge-corrected "
                                 "estimates stay unbiased.")
        for name in SAMPLING_STRATEGIES:  # what the product's own benchmark measured, the default's gain included
            if name in evidence:
                st.caption(plain_markdown(evidence[name]))
        size = st.number_input("Responses to sample (expected number)", 1, 5000, DEFAULT_SAMPLE_SIZE)
        chosen = st.multiselect("Experts (each response goes to two of them whose domains cover it)", experts,
                                default=experts, key="sample_experts",
                                format_func=lambda e: f"{e} ({', '.join(experts_domains[e]) or 'every domain'})")
        seed = st.number_input("Random seed", 0, 10_000, 0)
        if st.form_submit_button("Draw sample and assign", type="primary") and run is not None:
            report = guarded_write(lambda: draw_gold_sample(engine(), principal, run.id, int(size), chosen, int(seed),
                                                            strategy=strategy))
            if report:
                st.success(f"Sampled {report.sampled} responses, {report.assignments} assignments "
                           f"(batch {report.batch}).")
                st.dataframe(pd.DataFrame({"stratum": list(report.strata), "responses": list(report.strata.values())}),
                             hide_index=True)
                if report.uncovered:
                    st.warning("Not sampled, because fewer than two of the chosen experts cover their domain: "
                               + "; ".join(f"{d} ({n} responses)" for d, n in report.uncovered.items())
                               + ". Give more experts these domains on the Users page, then draw again; until then the "
                               "judge-corrected estimates do not cover them.", icon=":material/warning:")
    sample_blinding_panel(principal)


def _label_disagreements() -> None:
    """The experts' label disagreements, side by side, and the admin's gold label."""
    pending = [d for d in label_disagreements(engine()) if not d.adjudicated]
    show_all = st.toggle("Include already adjudicated", key="adj_all")
    items = label_disagreements(engine()) if show_all else pending
    st.caption(f"{len(pending)} disagreements wait for a decision.")
    generated = marks_by_response(engine(), [d.response_id for d in items])  # the answered items' LLM marks
    picked = st.selectbox("Disagreement", items, key="adj_pick",
                          format_func=lambda d: f"response #{d.response_id} · differs on {', '.join(d.differing)}"
                                                + (f" · {mark_cell(generated[d.response_id])}"
                                                   if generated.get(d.response_id) else ""))
    if picked is not None:
        ctx = load_response(engine(), picked.response_id)
        render_bundle(ctx.bundle)
        render_response(ctx)
        flat = {who: label_items(p) for who, p in picked.labels.items()}
        table = pd.DataFrame(flat).rename_axis("item").reset_index()
        st.markdown("##### The experts' labels side by side")
        st.dataframe(table.style.apply(lambda row: ["background-color: #fde2e2" if row["item"] in picked.differing
                                                    else "" for _ in row], axis=1), hide_index=True)
        for who, payload in picked.labels.items():
            if payload.get("note"):
                st.caption(f"{plain_markdown(who)}: {plain_markdown(str(payload['note']))}")
        with st.form(f"adjudicate_{picked.response_id}"):
            st.markdown("##### Gold label (your decision)")
            agreed = next(iter(picked.labels.values()))
            decision = label_fields(ctx, f"adj_{picked.response_id}", initial=agreed)
            submitted = st.form_submit_button("Save gold label", type="primary", shortcut="Alt+S",
                                              key=f"adj_submit_{picked.response_id}")
        if submitted:
            if missing_answers(decision):
                st.error(f"Answer every item first: {', '.join(missing_answers(decision))}")
            elif guarded_write(lambda: record_adjudication(engine(), principal, picked.response_id, decision,
                                                           _token(f"adj_{picked.response_id}"))):
                st.session_state.pop(f"token_adj_{picked.response_id}", None)
                confirm("Gold label saved.")
                st.rerun()


def _verification_disagreements() -> None:
    """The experts' verification disagreements, side by side, and the admin's final decision."""
    st.subheader("Verification disagreements")
    open_items = verification_disagreements(engine())
    st.caption(f"{len(open_items)} verification disagreements wait for a decision.")
    bundles = {d.instance_id: load_bundle(engine(), d.instance_id) for d in open_items}
    chosen_v = st.selectbox("Instance", open_items, key="vadj_pick", format_func=lambda d: (
        f"{bundles[d.instance_id].instance.uid} v{bundles[d.instance_id].instance.version}"
        f"{mark_suffix(bundles[d.instance_id])} · "
        + " vs ".join(f"{who}: {p.get('decision')}" for who, p in d.decisions.items())))
    if chosen_v is not None:
        iid = chosen_v.instance_id
        st.markdown("##### The experts' decisions side by side")
        for column, (who, payload) in zip(st.columns(len(chosen_v.decisions)), chosen_v.decisions.items(), strict=True):
            with column:
                render_verification_decision(who, payload)
        render_bundle(bundles[iid])
        render_evidence_edits(bundles[iid], f"vadj_{iid}")
        with st.form(f"vadj_{iid}"):
            st.markdown("##### Final decision (yours)")
            final = st.radio("Decision", DECISIONS, index=None, horizontal=True, key=f"vadj_decision_{iid}",
                             format_func=lambda d: d.replace("_", " "))
            note = st.text_input("Reason (optional)", key=f"vadj_note_{iid}")
            settled = st.form_submit_button("Save final decision", type="primary", key=f"vadj_submit_{iid}")
        if settled:
            if final is None:
                st.error("Choose accept, reject or needs edit first.")
            elif guarded_write(lambda: record_verification_adjudication(engine(), principal, iid, final, note,
                                                                        _token(f"vadj_{iid}"))):
                st.session_state.pop(f"token_vadj_{iid}", None)
                confirm("Final decision saved.")
                st.rerun()


def _expert_progress() -> None:
    """Per-expert verification and labelling progress."""
    st.subheader("Per-expert progress")
    progress = expert_progress(engine(), overlap_setting())
    if not progress:
        st.info("No active expert account yet: add experts (with their domains) on the Users page.")
    else:
        st.dataframe(pd.DataFrame([{
            "expert": p.expert, "domains": ", ".join(p.domains) or "every domain", "verified": p.verified,
            "to verify": p.to_verify, "needs edit (their domains)": p.needs_edit, "labelled": p.labelled,
            "to label": p.to_label,
            "labels done": f"{p.labelled / (p.labelled + p.to_label):.0%}" if p.labelled + p.to_label else "none assigned",
            "last active": p.last_active.strftime("%Y-%m-%d %H:%M") if p.last_active else "never",
        } for p in progress]), hide_index=True, width="stretch",
            column_config={"expert": st.column_config.TextColumn("expert", pinned=True)})
        st.caption("Verified: standing decisions (undone ones left out). To verify: instances waiting in their queue "
                   "now. Labelled / to label: gold-sample responses assigned to them.")


def _export_import() -> None:
    """Labels out and in as JSONL."""
    st.markdown("Labels are exported one per line (JSONL) to `annotations/`; an import is all-or-nothing.")
    exported = st.button("Export all labels", key="labels_export") and guarded_write(lambda: export_labels(engine(), principal))
    if exported:
        out, count = exported
        st.success(f"Exported {count} labels to {out.relative_to(REPO_ROOT)}.")
        st.download_button("Download", out.read_bytes(), file_name=out.name, mime="application/jsonl")
    upload = st.file_uploader("Import labels (JSONL)", type=["jsonl"], key="labels_upload")
    if upload is not None and st.button("Import", key="labels_import"):
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "upload.jsonl"
            path.write_bytes(upload.getvalue())
            report = guarded_write(lambda: import_annotations(engine(), path, principal))
        if report is not None and report.ok:
            st.success(f"Imported {report.imported} labels ({report.skipped} already present).")
        elif report is not None:
            st.error("Nothing imported. Fix these lines:\n\n" + "\n".join(f"- {plain_markdown(str(e))}" for e in report.errors))


def _plan() -> None:
    """The gold budget planner, built on request: it ranks the run's models as Pick a generator does."""
    if st.toggle("Open the planner", key="plan_open",
                 help="Built on request: it ranks the run's models as Pick a generator does, so the page does not pay "
                      "for it until you ask."):
        gold_plan_view.show(principal, runs, labelable)


TABS = {"Draw a sample": _draw_sample, "Disagreements": _label_disagreements,
        "Verification disagreements": _verification_disagreements, "Expert progress": _expert_progress,
        "Export / import": _export_import, "Plan the next labels": _plan}
# Streamlit runs every tab's body unless the tabs track their state: only the chosen tab is drawn and read (a tab
# switch reruns the page).
for tab, draw in zip(st.tabs(list(TABS), key="adj_tab", on_change="rerun"), TABS.values(), strict=True):
    if tab.open:
        with tab:
            draw()
