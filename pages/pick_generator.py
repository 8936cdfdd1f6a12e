"""Pick a generator: weights, hard floors and a budget give a ranked list with reasons, the baselines as the floor, a top-two test and a downloadable summary."""

import streamlit as st

from core.analysis import decision, picker, readmodel
from core.protocols.enterprise_rag import ENTERPRISE_RAG
from ui import picker_view, results_view
from ui.auth import require_page
from ui.fitness_view import fitness_banner

require_page(__file__)
st.title("Pick a generator")
st.caption("Choose what matters, set the minimums a model must meet and your budget; the ranking explains itself. "
           "The calibration baselines are the floor: a recommendation must beat the best of them.")

filters = results_view.sidebar_filters(subset=False, domains=False, protocol=ENTERPRISE_RAG.name)
if filters:
    fitness_banner(filters.judge)
    scores = results_view.scores(filters.run_ids, filters.judge, filters.version)
    c1, c2 = st.columns(2)
    domains = c1.multiselect("Domains (empty = all)", sorted(scores["domain"].dropna().unique()), key="pk_domains")
    modes = c2.multiselect("Subsets (empty = all)", list(readmodel.MODES), key="pk_modes")

    st.subheader("Weights")
    wcols = st.columns(len(picker.PICK_METRICS))
    weights = {m: col.number_input(readmodel.METRICS[m].label, 0.0, 10.0, float(picker.DEFAULT_WEIGHTS.get(m, 0.0)), 0.5, key=f"pk_w_{m}")
               for m, col in zip(picker.PICK_METRICS, wcols, strict=True)}

    st.subheader("Hard floors and budget")
    f1, f2, f3, f4 = st.columns(4)
    checkable, dropped = picker.decidable_floors(scores, dict(picker.DEFAULT_FLOORS))
    default_floor = {m: round(checkable.get(m, 0.0) * 100) for m in picker.DEFAULT_FLOORS}
    if dropped:
        st.caption("Default floor left at 0 on " + ", ".join(readmodel.METRICS[m].label for m in dropped)
                   + ": this judge decided it on no response (an LLM judge or gold labels would measure it).")
    floors = {"rejection": f1.slider("Rejection accuracy ≥ (%)", 0, 100, default_floor["rejection"], key="pk_floor_rejection") / 100,
              "strict_ias": f2.slider("Strict IAS ≥ (%)", 0, 100, default_floor["strict_ias"], key="pk_floor_strict") / 100,
              "faithfulness": f3.slider("Faithfulness ≥ (%)", 0, 100, 0, key="pk_floor_faith") / 100}
    floors = {k: v for k, v in floors.items() if v > 0}
    budget = f4.number_input("Budget per 1k queries (USD, 0 = none)", 0.0, 10_000.0, 0.0, 1.0, key="pk_budget")

    spec = picker.PickSpec(tuple(domains), tuple(modes), weights, floors, budget or None)
    result = picker.rank(scores, results_view.models(filters.version), spec)
    picker_view.show(result, filters.judge, ", ".join(f"#{r}" for r in filters.run_ids))
    check = picker.corrected_choice(result, results_view.corrected_for(filters))
    if check:
        st.info(check, icon=":material/fact_check:")
    picker_view.honest_ranks(result, filters)

    st.subheader("Decision report")
    question = st.text_input("The question the decision answers", decision.DEFAULT_QUESTION, key="pk_question")
    picker_view.decision_report_button(filters, spec, question)
