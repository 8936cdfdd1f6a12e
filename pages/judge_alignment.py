"""Judge alignment: do the automatic judges agree with the experts? Expert-expert agreement, each judge against the
gold labels per dimension (paper Table 9, long form), confusion matrices, disagreeing items, and cross-judge reliability
(Table 7 layout); and the experts' agreement on double-checked benchmark verification decisions."""

import pandas as pd
import streamlit as st

from core.analysis.alignment import (
    cross_judge,
    default_run,
    expert_agreement,
    judge_value,
    judge_vs_gold,
    judges_for,
    run_choices,
    verification_agreement,
)
from core.analysis.certify import MARGIN as CERT_MARGIN
from core.analysis.certify import MIN_ITEMS as CERT_MIN_ITEMS
from core.analysis.judge_check import fitness_of, latest_checks
from core.analysis.label_kinds import label_kind_table
from core.analysis.ppi import MIN_LABELS
from core.analysis.published import RAGCHECKER_CITATION
from core.protocols import label_kinds
from core.review.gold import load_response
from core.scoring.judges.names import judge_label
from core.store.labels import gold_labels
from core.store.sanitize import inline_code
from ui import results_view
from ui.alignment_view import (
    agreement_table,
    certification_table,
    confusion_section,
    cross_scores_table,
    cross_stats_table,
    fitness_line,
    label_kind_heading,
    probe_table,
    published_table,
    suite_check_table,
    verification_table,
)
from ui.auth import require_page
from ui.live import refresh_on_new_data
from ui.session import engine
from ui.workspace import render_bundle, render_response


def verification_agreement_section():
    """Expert-expert agreement on the double-checked verification decisions (independent of the runs chosen)."""
    st.subheader("Benchmark verification agreement")
    st.caption("Instances verified independently by two experts (the first two by name); admin adjudications "
               "are not counted.")
    rows = verification_agreement(engine())
    st.dataframe(verification_table(rows), hide_index=True)
    for column, r in zip(st.columns(len(rows)), rows, strict=True):
        with column:
            st.markdown(f"**{r.label}** (n={r.n})")
            st.dataframe(pd.DataFrame(r.confusion, index=[f"first: {c}" for c in r.categories],
                                      columns=[f"second: {c}" for c in r.categories]))


def judge_checks_section():
    """Each judge against public human labels (`gauntlet judge check`), its fitness, and its bias probes."""
    st.subheader("Judge checks against human-labelled suites")
    st.caption(f"Fitness relative to the suite's own humans, per aspect: fit to decide when the judge's κ against the "
               f"annotators is non-inferior to theirs with each other (one-sided 95% bootstrap lower bound of the "
               f"difference ≥ −{CERT_MARGIN}) and beats every baseline (word overlap with the passages, answer length, "
               f"majority label); fit to explore when it beats the baselines only; not fit otherwise; fewer than "
               f"{CERT_MIN_ITEMS} items: undetermined. A detected bias caps it at fit to explore. See docs/judges.md.")
    checks = latest_checks(engine(), "suite")
    if not checks:
        st.info("No judge has been checked yet: `gauntlet judge check heuristic --suite ragchecker-meta` "
                "(or `llm:<model>`).", icon=":material/info:")
    else:
        for judge in dict.fromkeys(c.judge for c in checks):
            st.markdown(fitness_line(judge, fitness_of(engine(), judge)))
        st.markdown("**Certification per aspect**: judge, human–human (annotator–annotator where the labellers are "
                    "not human) and baseline rows")
        st.dataframe(certification_table(checks), hide_index=True)
        st.dataframe(suite_check_table(checks), hide_index=True)
    st.caption(f"Beside the published figures ({RAGCHECKER_CITATION.short()}): Pearson / Spearman ×100 against the "
               "same 560 human preference labels of `ragchecker-meta` (score difference of the two answers against "
               "each label, as the paper computes them); this product's judges with 95% CIs, agreement and κ.")
    st.dataframe(published_table("ragchecker-meta", checks), hide_index=True)
    for kind in label_kinds():  # each protocol's expert label kinds (Protocol.labels)
        table = label_kind_table(engine(), kind)
        if not table.empty:
            st.markdown(label_kind_heading(kind))
            st.dataframe(table, hide_index=True)
    probes = latest_checks(engine(), "probe:")
    if probes:
        st.markdown("**Bias probes** (`gauntlet judge probe`)")
        st.dataframe(probe_table(probes), hide_index=True)


principal = require_page(__file__)
st.title("Judge alignment")
refresh_on_new_data(results_view.versions(), results_view.versions)  # new gold labels or verdicts: rerun, no reload

runs = run_choices(engine())
run_ids = st.multiselect("Runs", list(runs), default=default_run(engine(), list(runs)), key="align_runs",
                         format_func=runs.get, help="Opens on the newest run a judge scored and experts labelled.")
if not run_ids:
    st.info("Choose at least one run.")
    verification_agreement_section()
    judge_checks_section()
    st.stop()

judges = judges_for(engine(), run_ids)
gold = gold_labels(engine(), run_ids)
st.caption(f"{len(gold)} responses with a gold label · judges: {', '.join(map(judge_label, judges)) or 'none yet'} "
           "(rule-checked constraints are merged into every judge's verdicts)")
if not judges:
    st.info("No judge has scored these runs yet: score them on the Run evaluation page (or `gauntlet score RUN_ID`).",
            icon=":material/info:")
if not gold:
    st.info("No gold labels on these runs yet, so there is nothing to compare the judges with. To get them: an admin "
            "draws a gold sample on **Gold labels & adjudication → Draw a sample**; two experts label each sampled "
            "response on **Label responses**; where they disagree, the admin settles it under **Disagreements**. The "
            "tables below fill in as labels arrive.", icon=":material/info:")

st.subheader("Agreement per dimension (Table 9)")
st.caption("κ and agreement are computed on the items both raters decided (n compared). Items the judge left unjudged "
           "(not applicable) or failed on (error) are counted, not compared. κ is undefined when a rater gave one "
           "label only; the agreement % still shows.")
by_judge = {j: {a.dimension: a for a in judge_vs_gold(engine(), run_ids, j, gold)} for j in judges}
human = expert_agreement(engine(), run_ids)
st.dataframe(agreement_table(human, {j: list(rows.values()) for j, rows in by_judge.items()}), hide_index=True)

if judges:
    st.subheader("Confusion matrices and disagreeing items")
    response_id = confusion_section(by_judge)
    if response_id is not None:
        ctx = load_response(engine(), response_id)
        st.markdown(f"Gold label: {inline_code(str(gold.get(response_id)))}")
        render_bundle(ctx.bundle)
        render_response(ctx)

st.subheader("What each judge is worth with these gold labels")
value = judge_value(engine(), run_ids, judges, gold)
if value.empty or value["corrected_ci_width"].isna().all():
    st.info(f"Needs gold labels on at least {MIN_LABELS} responses per model and metric (draw and label a gold "
            "sample): below that a corrected interval says too little to compare judges.")
else:
    st.caption("Mean width of the judge-corrected (PPI++) 95% CI over models, against gold labels alone on the same n; "
               f"'models' counts those with at least {MIN_LABELS} gold labels (the widths are over them), n every "
               "gold label; 'labels saved' is the share of expert labels the judge spares for the same precision.")
    st.dataframe(value.assign(judge=value["judge"].map(judge_label)), hide_index=True,
                 column_config={"corrected_ci_width": st.column_config.NumberColumn(format="%.3f"),
                                "gold_only_ci_width": st.column_config.NumberColumn(format="%.3f"),
                                "labels_saved_share": st.column_config.NumberColumn("labels saved", format="percent")})

st.subheader("Cross-judge reliability (Table 7 layout)")
if len(judges) < 2:
    st.info("Needs at least two judges scoring the same run.")
else:
    cj = cross_judge(engine(), run_ids, judges)
    st.caption("Per-model means (%) from the read model, each with the responses behind it.")
    st.dataframe(cross_scores_table(cj))
    st.dataframe(cross_stats_table(cj), hide_index=True)

verification_agreement_section()
judge_checks_section()
