"""Browse benchmark: composition tables, filters, the instance list and one instance in full."""

import pandas as pd
import streamlit as st

from core.store.benchmark import domain_names, instance_detail, instance_rows
from core.store.io import composition
from core.store.schema import MODES
from ui.auth import require_page
from ui.instance_view import MODE_LABELS, render_instance
from ui.session import engine

require_page(__file__)
st.title("Browse benchmark")

table5, table6 = composition(engine())
with st.expander("Benchmark composition (Tables 5 and 6)", expanded=True):
    left, right = st.columns(2)
    left.dataframe(pd.DataFrame([vars(r) for r in table5]), hide_index=True)
    right.dataframe(pd.DataFrame([vars(r) for r in table6]), hide_index=True)

filters = st.columns([2, 2, 2, 3])
domains = filters[0].multiselect("Domain", domain_names(engine()), key="browse_domains")
modes = filters[1].multiselect("Mode", MODES, format_func=MODE_LABELS.get, key="browse_modes")
statuses = filters[2].multiselect(
    "Verification status", ["unverified", "accepted", "rejected", "needs_edit"], key="browse_statuses"
)
search = filters[3].text_input("Search query, id or document text", key="browse_search")

rows = instance_rows(engine(), domains=domains, modes=modes, statuses=statuses, search=search)
st.caption(f"{len(rows)} instances")
table = pd.DataFrame([vars(r) for r in rows], columns=["id", "uid", "domain", "mode", "origin", "status", "constraints", "documents", "query"])
selection = st.dataframe(
    table,
    hide_index=True,
    column_config={"id": None},
    on_select="rerun",
    selection_mode="single-row",
    key="browse_table",
)

chosen = selection.selection.rows if selection else []
uids = [r.uid for r in rows]
picked_uid = st.selectbox("Open instance", uids, index=chosen[0] if chosen else None, placeholder="choose an instance", key="browse_open")
if picked_uid:
    detail = instance_detail(engine(), next(r.id for r in rows if r.uid == picked_uid))
    render_instance(detail)
