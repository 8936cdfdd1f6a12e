"""Verify instances: the expert's queue of unverified instances, one at a time, with two checks and a decision."""

import streamlit as st

from ui.auth import require_page, show_guidelines_sidebar
from ui.workspace import verification_panel

principal = require_page(__file__)
show_guidelines_sidebar()
st.title("Verify instances")
st.caption("Oldest first, from your domains. Keyboard: Alt+A accept · Alt+E needs edit · Alt+X reject · Alt+K skip · "
           "Alt+P previous · Alt+Z undo your last decision. Revisit any decision under My decisions.")
verification_panel(principal)
