"""RAG Gauntlet: the Streamlit entry point.

Signed-out users see the sign-in form only (a page opened by URL asks to sign in, then opens); signed-in users see the
pages of their role in the sidebar.
"""

import streamlit as st

from ui.auth import account_sidebar, current_principal
from ui.navigation import PAGES, sections_for

st.set_page_config(page_title="RAG Gauntlet", page_icon=":material/shield:", layout="wide")

principal = current_principal()
if principal is None:
    login = st.Page("pages/login.py", title="Sign in", icon=":material/login:", default=True)
    deep_links = [st.Page(p.path, title=p.title, icon=p.icon) for p in PAGES]
    st.navigation([login, *deep_links], position="hidden").run()
else:
    account_sidebar(principal)
    navigation = {
        section: [st.Page(p.path, title=p.title, icon=p.icon, default=p.default) for p in pages]
        for section, pages in sections_for(principal.role).items()
    }
    st.navigation(navigation, expanded=True).run()
