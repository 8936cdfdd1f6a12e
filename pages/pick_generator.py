"""Pick a generator: what matters across every protocol of the runs (a preset or the default, weights, hard floors and a
budget) gives a ranked list with reasons, the baselines as the floor, a top-two test and a downloadable report."""

import streamlit as st

from core.analysis import decision, picker, readmodel
from core.protocols import DEFAULT_PROTOCOL
from ui import picker_view, results_view
from ui.auth import require_page
from ui.fitness_view import fitness_banner

require_page(__file__)
st.title("Pick a generator")
st.caption("Choose what matters across every protocol of the runs, set the minimums a model must meet and your budget; "
           "the ranking explains itself. The calibration baselines are the floor: a recommendation must beat the best "
           "of them.")

filters = results_view.sidebar_filters(subset=False, domains=False, protocol=DEFAULT_PROTOCOL)
if filters:
    fitness_banner(filters.judge)
    scores = picker_view.scores(filters.run_ids, filters.judge, filters.version)
    c1, c2 = st.columns(2)
    domains = c1.multiselect("Domains (empty = all)", sorted(scores["domain"].dropna().unique()), key="pk_domains")
    modes = c2.multiselect("Subsets (empty = all)", list(readmodel.MODES), key="pk_modes")
    chosen, _ = picker_view.choose(scores)
    spec = picker.PickSpec(tuple(domains), tuple(modes), chosen.weights, chosen.floors, chosen.budget_per_1k)
    result = picker_view.rank(filters, scores, spec)
    picker_view.show(result, filters.judge, ", ".join(f"#{r}" for r in filters.run_ids))
    check = picker.corrected_choice(result, results_view.corrected_for(filters))
    if check:
        st.info(check, icon=":material/fact_check:")
    picker_view.honest_ranks(result, filters)

    st.subheader("Decision report")
    question = st.text_input("The question the decision answers", decision.DEFAULT_QUESTION, key="pk_question")
    picker_view.decision_report_button(filters, spec, question)
