"""Browse benchmark: the page's content (pages/browse_benchmark.py is the thin script that checks the role and calls
render; the code lives here so a rerun does not recompile it)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.ingest.composition import ProtocolComposition, protocol_composition
from core.ingest.sets import benchmark_sets, set_names_of
from core.review.verification import verification_history
from core.store.benchmark import benchmark_fingerprint, domain_names, instance_detail, instance_rows
from core.store.sanitize import plain_markdown
from core.store.schema import MODES
from ui.instance_view import MODE_LABELS, render_instance, render_verification_history
from ui.session import engine
from ui.tables import COMPOSITION_COLUMNS, table_config


@st.cache_data(max_entries=4, show_spinner=False)
def composition(url: str, version: tuple[int, int, int, int]) -> list[ProtocolComposition]:
    """Each protocol's composition, built once per database and benchmark version (a filter change re-reads
    nothing)."""
    return protocol_composition(engine())


def render() -> None:
    """Composition tables, filters, the instance list and the open instance in full."""
    st.title("Browse benchmark")

    parts = composition(engine().url.render_as_string(), benchmark_fingerprint(engine()))
    with st.expander("Benchmark composition, per protocol", expanded=True):
        if not parts:
            st.caption("No instances yet: import a file or build a benchmark.")
        for part in parts:
            note = " (" + " and ".join(t.title.split(":")[0] for t in part.tables) + ")" if part.tables else ""
            st.markdown(f"**{plain_markdown(part.title)}** · {part.instances} instances{plain_markdown(note)}")
            for column, table in zip(st.columns(len(part.tables)) if part.tables else [], part.tables, strict=True):
                column.dataframe(pd.DataFrame(table.rows), hide_index=True, key=f"composition_{part.protocol}_{table.key}",
                                 column_config=table_config(COMPOSITION_COLUMNS, pin=table.key))
            if part.rows:
                st.dataframe(pd.DataFrame([vars(r) for r in part.rows]).drop(columns="protocol"), hide_index=True,
                             key=f"composition_{part.protocol}",
                             column_config={"share": st.column_config.NumberColumn("share of the protocol",
                                                                                   format="percent")})

    sets = {s.id: s for s in benchmark_sets(engine())}
    filters = st.columns([2, 2, 2, 2, 3])
    set_id = filters[0].selectbox("Benchmark set", [None, *sets], key="browse_set", placeholder="all sets",
                                  format_func=lambda i: "all sets" if i is None else sets[i].label)
    domains = filters[1].multiselect("Domain", domain_names(engine()), key="browse_domains")
    modes = filters[2].multiselect("Mode", MODES, format_func=MODE_LABELS.get, key="browse_modes")
    statuses = filters[3].multiselect(
        "Verification status", ["unverified", "accepted", "rejected", "needs_edit"], key="browse_statuses"
    )
    search = filters[4].text_input("Search query, id or document text", key="browse_search")

    rows = instance_rows(engine(), domains=domains, modes=modes, statuses=statuses, search=search, set_id=set_id)
    st.caption(f"{len(rows)} instances · tick a row to open it")
    table = pd.DataFrame([vars(r) for r in rows], columns=["id", "uid", "domain", "mode", "origin", "generated", "status",
                                                          "constraints", "documents", "query"])
    selection = st.dataframe(
        table,
        hide_index=True,
        column_config={"id": None, "uid": st.column_config.TextColumn("instance", pinned=True),
                       "generated": st.column_config.TextColumn("generated", help="Drafted, written or edited by an "
                                                                "LLM (the model in brackets); empty: rule- or human-made")},
        on_select="rerun",
        selection_mode="single-row",
        key="browse_table",
    )

    uids = [r.uid for r in rows]
    ticked = [uids[i] for i in (selection.selection.rows if selection else []) if i < len(uids)]
    if ticked and ticked != st.session_state.get("browse_ticked"):
        st.session_state["browse_open"] = ticked[0]  # a newly ticked row opens its instance
    elif "browse_open" not in st.session_state and st.query_params.get("instance") in uids:
        st.session_state["browse_open"] = st.query_params["instance"]  # a shared link
    st.session_state["browse_ticked"] = ticked
    if st.session_state.get("browse_open") not in uids:
        st.session_state.pop("browse_open", None)  # filtered out
    picked_uid = st.selectbox("Open instance", uids, index=None, placeholder="choose an instance (or tick a row)",
                              key="browse_open")
    if picked_uid:
        st.query_params["instance"] = picked_uid
        instance_id = next(r.id for r in rows if r.uid == picked_uid)
        detail = instance_detail(engine(), instance_id)
        render_instance(detail)
        in_sets = set_names_of(engine(), instance_id)
        st.caption(f"Benchmark sets: {', '.join(in_sets) if in_sets else 'none (imported before sets existed)'}")
        st.markdown("#### Verification history and notes")
        render_verification_history(verification_history(engine(), instance_id))
    else:
        st.query_params.pop("instance", None)
