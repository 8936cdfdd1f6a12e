"""RAG Gauntlet: the Streamlit entry point. Builds the page list for the current user's role."""

import streamlit as st

from ui.navigation import sections_for
from ui.session import current_role

st.set_page_config(page_title="RAG Gauntlet", page_icon=":material/shield:", layout="wide")

role = current_role()
navigation = {
    section: [st.Page(p.path, title=p.title, icon=p.icon, default=p.default) for p in pages]
    for section, pages in sections_for(role).items()
}
st.navigation(navigation).run()
