"""Judge alignment: do the automatic judges agree with the experts? Expert-expert agreement, each judge against the
gold labels per dimension (paper Table 9 layout), confusion matrices, disagreeing items, and cross-judge reliability
(Table 7 layout); and the experts' agreement on double-checked benchmark verification decisions."""

import pandas as pd
import streamlit as st
from sqlmodel import Session, select

from core.analysis.alignment import (
    CROSS_METRICS,
    DIMENSIONS,
    average_kappa,
    cross_judge,
    expert_agreement,
    judge_vs_gold,
    judges_for,
    verification_agreement,
)
from core.review.labels import gold_labels, load_response
from core.store.models import Run
from ui.auth import require_role
from ui.session import engine
from ui.workspace import render_bundle, render_response


def pct(x):
    return None if x is None else round(100 * x, 1)


def kappa(x):
    return None if x is None else round(x, 3)


def verification_agreement_section():
    """Expert-expert agreement on the double-checked verification decisions (independent of the runs chosen)."""
    st.subheader("Benchmark verification agreement")
    st.caption("Instances verified independently by two experts (the first two by name); admin adjudications "
               "are not counted.")
    rows = verification_agreement(engine())
    st.dataframe(pd.DataFrame([{"Verdict": r.label, "κ": kappa(r.kappa), "Agreement %": pct(r.agreement), "n": r.n}
                               for r in rows]), hide_index=True)
    for column, r in zip(st.columns(len(rows)), rows, strict=True):
        with column:
            st.markdown(f"**{r.label}**")
            st.dataframe(pd.DataFrame(r.confusion, index=[f"first: {c}" for c in r.categories],
                                      columns=[f"second: {c}" for c in r.categories]))


principal = require_role({"admin", "analyst"})
st.title("Judge alignment")

with Session(engine()) as session:
    runs = session.exec(select(Run).order_by(Run.id.desc())).all()
run_ids = st.multiselect("Runs", [r.id for r in runs], default=[r.id for r in runs[:1]], key="align_runs",
                         format_func=lambda i: next(f"#{r.id} {r.name}" for r in runs if r.id == i))
if not run_ids:
    st.info("Choose at least one run.")
    verification_agreement_section()
    st.stop()

judges = judges_for(engine(), run_ids)
gold = gold_labels(engine(), run_ids)
st.caption(f"{len(gold)} responses with a gold label · judges: {', '.join(judges) or 'none yet'}")

st.subheader("Agreement per dimension (Table 9 layout)")
human = {a.dimension: a for a in expert_agreement(engine(), run_ids)}
by_judge = {j: {a.dimension: a for a in judge_vs_gold(engine(), run_ids, j)} for j in judges}
rows = []
for dim, label in DIMENSIONS.items():
    row = {"Dimension": label, "Human IAA κ": kappa(human[dim].kappa), "Human agreement %": pct(human[dim].agreement),
           "n (experts)": human[dim].n}
    for j in judges:
        row[f"{j} κ"] = kappa(by_judge[j][dim].kappa)
        row[f"{j} agreement %"] = pct(by_judge[j][dim].agreement)
        row[f"{j} n"] = by_judge[j][dim].n
    rows.append(row)
overall = {"Dimension": "Overall avg. (Strict IAS, rejection, conflict)",
           "Human IAA κ": kappa(average_kappa(list(human.values())))}
for j in judges:
    overall[f"{j} κ"] = kappa(average_kappa(list(by_judge[j].values())))
rows.append(overall)
st.dataframe(pd.DataFrame(rows), hide_index=True)

if judges:
    st.subheader("Confusion matrices and disagreeing items")
    judge = st.selectbox("Judge", judges, key="align_judge")
    dim = st.selectbox("Dimension", list(DIMENSIONS), format_func=DIMENSIONS.get, key="align_dim")
    result = by_judge[judge][dim]
    matrix = pd.DataFrame(result.confusion, index=["gold 0", "gold 1"], columns=[f"{judge} 0", f"{judge} 1"])
    st.dataframe(matrix)
    items = pd.DataFrame(result.disagreements, columns=["response", "item", "gold", "judge"])
    st.caption(f"{len(items)} disagreeing items — select one to read it.")
    picked = st.dataframe(items, hide_index=True, on_select="rerun", selection_mode="single-row", key="align_items")
    selected = picked.selection.rows if picked else []
    if selected:
        response_id = int(items.iloc[selected[0]]["response"])
        ctx = load_response(engine(), response_id)
        st.markdown(f"Gold label: `{gold.get(response_id)}`")
        render_bundle(ctx.bundle)
        render_response(ctx)

st.subheader("Cross-judge reliability (Table 7 layout)")
if len(judges) < 2:
    st.info("Needs at least two judges scoring the same run.")
else:
    cj = cross_judge(engine(), run_ids, judges)
    models = sorted({m for by_model in cj.scores.values() for m in by_model})
    table = pd.DataFrame(
        {(CROSS_METRICS[m], j): [cj.scores[m].get(model, {}).get(j) for model in models] for m in CROSS_METRICS for j in judges},
        index=models,
    ).round(1)
    st.dataframe(table)
    stats_rows = []
    for m, label in CROSS_METRICS.items():
        icc = cj.icc[m]
        stats_rows.append({"Metric": label,
                           "ICC(2,k) [95% CI]": f"{icc.icc:.3f} [{icc.ci_low:.2f}–{icc.ci_high:.2f}]" if icc else "—",
                           "Avg. Spearman ρ": None if cj.spearman[m] is None else round(cj.spearman[m], 3),
                           "Note": cj.notes.get(m, "")})
    st.dataframe(pd.DataFrame(stats_rows), hide_index=True)

verification_agreement_section()
