"""The judge fitness banner: the statement beside a page's numbers, and a warning unless the judge may decide."""

from __future__ import annotations

import streamlit as st

from core.analysis.judge_check import fitness_notice
from ui.session import engine
from ui.verdict_view import verdicts

_SHOW = {"error": st.error, "warning": st.warning}
_ICONS = {"error": ":material/gpp_bad:", "warning": ":material/warning:"}


def fitness_banner(judge: str) -> None:
    """The fitness of the judge whose numbers the page shows (core.analysis.fitness; docs/judges.md), and its
    per-aspect verdicts."""
    shown = fitness_notice(engine(), judge)
    if shown.warning is None:
        st.success(shown.statement, icon=":material/verified:")
    else:
        _SHOW[shown.level](f"{shown.warning}\n\n{shown.statement}", icon=_ICONS[shown.level])
    verdicts(judge)
