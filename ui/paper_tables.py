"""The seed paper's tables of a protocol, as `gauntlet reproduce` prints them: one tab per table, its settings as
choices, the cells with CI and n, and the Markdown, CSV and LaTeX downloads."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from core.protocols import PROTOCOLS
from core.protocols.paper import PaperTable, all_notes, build_table, render, table_spec, to_rows
from ui.results_view import data_version
from ui.session import engine


@st.cache_data(max_entries=16, show_spinner="Building the paper's table…")
def cached_table(protocol: str, key: str, run_ids: tuple[int, ...], judge: str, settings: tuple[tuple[str, str], ...],
                 version: tuple) -> PaperTable:
    """A declared paper table, built once per data version (a filter change elsewhere on the page re-reads nothing)."""
    spec = table_spec(PROTOCOLS.get(protocol).paper_tables, key, protocol)
    return build_table(spec, engine(), run_ids, judge, dict(settings))


def paper_tables_panel(protocol: str, run_ids: Sequence[int], judge: str, key: str = "paper",
                       on_request: bool = False) -> None:
    """Each paper table `protocol` declares, built for these runs and this judge, with its downloads; `on_request`:
    each is built only once its switch is on (for a panel inside a collapsed expander, whose body Streamlit runs)."""
    specs = PROTOCOLS.get(protocol).paper_tables
    if not specs:
        return
    for spec, tab in zip(specs, st.tabs([f"Table {s.key}" for s in specs]), strict=True):
        with tab:
            if on_request and not st.toggle(f"Build Table {spec.key}", key=f"{key}_{protocol}_{spec.key}_build",
                                            help="Built on request: the page does not pay for it until you ask."):
                continue
            chosen = {name: st.selectbox(name, allowed, key=f"{key}_{protocol}_{spec.key}_{name}")
                      for name, allowed in spec.settings.items()}
            try:
                table = cached_table(protocol, spec.key, tuple(run_ids), judge, tuple(sorted(chosen.items())),
                                     data_version())
            except (KeyError, ValueError) as error:
                st.warning(f"Table {spec.key} cannot be built for these runs: {error}")
                continue
            st.markdown(f"**{table.title}**")
            st.dataframe(to_rows(table), hide_index=True, width="stretch")
            for note in all_notes(table):  # its notes, then the states behind the table
                st.caption(note)
            st.caption(f"The same table from the command line: `gauntlet reproduce {protocol} --table {spec.key} "
                       + " ".join(f"--run {r}" for r in run_ids) + f" --judge {judge}`")
            columns = st.columns(3)
            for column, (fmt, ext, mime) in zip(columns, (("markdown", "md", "text/markdown"), ("csv", "csv", "text/csv"),
                                                          ("latex", "tex", "application/x-tex")), strict=True):
                column.download_button(f"{fmt.capitalize() if fmt != 'csv' else 'CSV'}", render(table, fmt),
                                       file_name=f"{protocol}_table_{spec.key}.{ext}", mime=mime,
                                       key=f"{key}_{protocol}_{spec.key}_{fmt}")
