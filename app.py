"""RAG Gauntlet: the Streamlit entry point.

Every page is registered with st.navigation (so a page opened by URL always runs through its own role guard); the
sidebar lists only the pages of the signed-in user's role. Signed-out users see the sign-in form only; a page opened
by URL asks to sign in first, then opens.
"""

import streamlit as st

from ui.auth import account_sidebar, current_principal
from ui.navigation import all_pages, sections_for
from ui.session import FILTER_SLOT

st.set_page_config(page_title="RAG Gauntlet", page_icon="🛡️", layout="wide")

PAGES = all_pages()  # the app's pages and every registered protocol's page
pages = {spec.path: st.Page(spec.path, title=spec.title, icon=spec.icon, default=spec.default) for spec in PAGES}
principal = current_principal()
if principal is None:
    login = st.Page("pages/login.py", title="Sign in", icon=":material/login:", default=True)
    st.navigation([login, *[st.Page(spec.path, title=spec.title, icon=spec.icon) for spec in PAGES]],
                  position="hidden").run()
else:
    current = st.navigation(list(pages.values()), position="hidden")
    with st.sidebar:
        st.markdown("### :material/shield: RAG Gauntlet")
        st.session_state[FILTER_SLOT] = st.container()  # a results page's filters, above the page list
        for section, specs in sections_for(principal.role).items():
            st.caption(section)
            for spec in specs:
                st.page_link(pages[spec.path])
    account_sidebar(principal)
    current.run()
