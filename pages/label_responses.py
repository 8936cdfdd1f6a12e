"""Label responses: the responses assigned to this expert, labelled blind to judges and to the other expert."""

import streamlit as st

from ui.auth import require_page, show_guidelines_sidebar
from ui.workspace import label_kind_shortcuts, labelling_panel

principal = require_page(__file__)
show_guidelines_sidebar()
st.title("Label responses")
st.caption("Judge verdicts and other experts' labels stay hidden. Keyboard: Alt+S submit · Alt+K skip · Alt+P previous · "
           f"Alt+Z undo your last label · {label_kind_shortcuts()}. Revisit and re-label any response under My labels "
           "(the latest label counts).")
labelling_panel(principal)
