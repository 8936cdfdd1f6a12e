"""Build benchmark: import a file, or build a protocol's benchmark on the tab its package declares (its own build tab,
or its builder's form), preview the instances, download or import them; the built sets' expert sound rates."""

import pandas as pd
import streamlit as st

from core.construction.soundness import SMALL_N, built_sound_rates, small_n
from core.services.protocol_builds import build_tabs
from ui.auth import require_page
from ui.format_import import format_import_panel
from ui.protocol_build import protocol_build_tab
from ui.session import engine

TAB_KEY = "build_tab"  # the chosen tab's label in st.session_state

principal = require_page(__file__)
st.title("Build benchmark")


def _sound_rates() -> None:
    """Built sets with the experts' sound rate (accepted of verified) and its Wilson 95% interval."""
    rates = [r for r in built_sound_rates(engine()) if r.instances]
    if not rates:
        return
    with st.expander("Expert sound rate of built sets", expanded=any(r.verified for r in rates)):
        st.caption("Built instances go to expert verification (Verify instances); sound = accepted, unsound = rejected "
                   "or sent back for an edit.")
        st.dataframe(pd.DataFrame([{
            "Set": r.set_name, "Instances": r.instances, "Verified": r.verified, "Sound": r.sound,
            "Sound rate": f"{r.rate:.0%}" if r.rate is not None else "not verified yet",
            "95% CI (Wilson)": f"{r.low:.0%}–{r.high:.0%}" if r.low is not None and r.high is not None else "—",
            "Note": f"small n (< {SMALL_N})" if small_n(r) else "",
        } for r in rates]), hide_index=True, key="build_sound_rates")


# The sound rates sit above the tabs in a container that always exists: an expander appearing before the tabs after
# the first import would move them in the page.
rates_box = st.container()
TABS = build_tabs()  # every protocol whose package declares its own build tab or a builder gets its tab
# Streamlit runs every tab's body unless the tabs track their state: only the chosen tab's form is drawn (a tab
# switch reruns the page), so a render pays for one form, not one per protocol.
tabs = st.tabs(["Import a file", *TABS.values()], key=TAB_KEY, on_change="rerun")
if tabs[0].open:
    with tabs[0]:
        format_import_panel(principal)
for tab, protocol in zip(tabs[1:], TABS, strict=True):
    if tab.open:
        with tab:
            protocol_build_tab(principal, protocol)
with rates_box:
    _sound_rates()
