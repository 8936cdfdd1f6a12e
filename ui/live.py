"""Results pages that refresh themselves: while a run is generated or scored in the background, a small fragment
watches the data version and reruns the page when new responses or verdicts arrive, or the job ends (no reload)."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from core.generation.models_admin import active_runs
from ui.session import engine

BUSY_EVERY_S = 2.0
IDLE_EVERY_S = 10.0


def live_key(version: tuple) -> tuple:
    """What a page shows depends on: the data version and which runs are still being worked on."""
    return version, tuple(active_runs(engine()))


def refresh_on_new_data(version: tuple, current: Callable[[], tuple], active: list[int] | None = None) -> None:
    """Rerun the whole page when `current()` differs from `version` (what the page was drawn with): every
    BUSY_EVERY_S while a job runs, every IDLE_EVERY_S otherwise (a job launched from another tab is noticed too); the
    full run itself reads the versions once (the fragment's inline first pass does not read them again); `active`:
    the runs being worked on now, when the page has read them (else read here)."""
    drawn = live_key(version) if active is None else (version, tuple(active))
    busy = bool(drawn[1])
    inline = [True]  # the fragment's first pass runs inside this full run, which has just read the version

    @st.fragment(run_every=BUSY_EVERY_S if busy else IDLE_EVERY_S)
    def watch() -> None:
        if inline:
            inline.clear()
        elif live_key(current()) != drawn:
            st.rerun(scope="app")
        if busy:
            st.caption(":material/autorenew: A run is being generated or scored: this page refreshes itself as "
                       "results arrive.")

    watch()
