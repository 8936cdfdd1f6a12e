"""The end of the watch panel: a link to each page that shows the run's results, and a page rerun when the run's
outcome changes (so the run picker's label never lags behind the panel's heading)."""

from __future__ import annotations

import streamlit as st
from streamlit.errors import StreamlitAPIException

from core.protocols.views import results_pages
from core.store.sanitize import plain_markdown
from ui.session import engine

UNFINISHED = ("waiting to start", "generating", "scoring", "cancelling")


def page_link(path: str, label: str, icon: str, query: dict[str, str]) -> None:
    """st.page_link to `path` with `query`; a plain relative link where the app's navigation is not running."""
    try:
        st.page_link(path, label=label, icon=icon, query_params=query)
    except StreamlitAPIException:
        address = path.removeprefix("pages/").removesuffix(".py")
        st.markdown(f"[{plain_markdown(label)}]({address}?{'&'.join(f'{k}={v}' for k, v in query.items())})")


def results_links(run_id: int, outcome: str) -> None:
    """Once the run is over: a link per page that shows its results, opened on this run."""
    if outcome in UNFINISHED:
        return
    pages = results_pages(engine(), run_id)
    if not pages:
        st.caption(f"Run {run_id} produced no answered items, so no results page shows it.")
    for page in pages:
        page_link(page.path, f"See run {run_id} on {page.title}", page.icon, {"runs": str(run_id)})


def _outcome_key(run_id: int) -> str:
    return f"watch_outcome_{run_id}"


def redraw_page(run_id: int) -> None:
    """Rerun the whole page now, drawn with whatever outcome the run has then (no second rerun for it)."""
    st.session_state.pop(_outcome_key(run_id), None)
    st.rerun(scope="app")


def rerun_on_new_outcome(run_id: int, outcome: str) -> None:
    """Rerun the whole page when the run's outcome differs from the one the page was last drawn with (the watch
    panel refreshes alone, the run picker above it only with the page)."""
    key = _outcome_key(run_id)
    drawn = st.session_state.setdefault(key, outcome)
    if drawn != outcome:
        st.session_state[key] = outcome
        st.rerun(scope="app")
