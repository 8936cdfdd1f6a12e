"""Importing a benchmark file as its own named set: the preview of what would change and the explicit choice for
instances that already exist with different content."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from core.ingest.sets import ON_CHANGED
from core.review.auth import Principal
from core.services.benchmarks import import_benchmark_set, preview_benchmark_file
from ui.auth import guarded_write
from ui.session import engine

ACTION_LABELS = {"new": "new instance", "unchanged": "identical to the existing one", "changed": "would change an existing instance"}


def import_as_set(principal: Principal, path: Path, default_name: str, origin: str, key: str) -> None:
    """Set name, preview (new / identical / changed with what changes), the choice for changed ones, and the import."""
    preview = guarded_write(lambda: preview_benchmark_file(engine(), principal, path))
    if preview is None:
        return
    errors, plan = preview
    if errors:
        st.error("This file does not validate; nothing can be imported:\n\n" + "\n".join(f"- {e}" for e in errors[:20]))
        return
    counts = {a: sum(p.action == a for p in plan) for a in ACTION_LABELS}
    st.markdown(f"##### Import as a benchmark set\n{counts['new']} new · {counts['unchanged']} identical to existing "
                f"instances · **{counts['changed']} would change existing instances**")
    built = f"{path.stem}_{path.stat().st_mtime_ns}"  # a new file gets a fresh name box (widgets keep their value)
    name = st.text_input("Set name", value=default_name, key=f"{key}_set_name_{built}",
                         help="Every import is its own named set; results can be filtered by set.")
    choice = None
    if counts["changed"]:
        changed = pd.DataFrame([{"id": p.uid, "existing version": p.current_version, "what changes": "; ".join(p.changes)}
                                for p in plan if p.action == "changed"])
        st.warning(f"{counts['changed']} instances of this file already exist with different content. Nothing is "
                   "superseded unless you choose so.", icon=":material/warning:")
        st.dataframe(changed, hide_index=True, width="stretch", key=f"{key}_changes",
                     column_config={"id": st.column_config.TextColumn("id", pinned=True)})
        choice = st.radio("What to do with them", list(ON_CHANGED), index=None, format_func=ON_CHANGED.get,
                          key=f"{key}_on_changed_{built}")
    if st.button("Import as a new set", type="primary", key=f"{key}_import", disabled=bool(counts["changed"]) and choice is None):
        result = guarded_write(lambda: import_benchmark_set(engine(), principal, path, name, on_changed=choice, origin=origin))
        if result is not None and result.ok:
            st.success(f"Imported: {result.summary}.")
        elif result is not None:
            st.error("Import refused: " + "; ".join(str(e) if e.line else e.message for e in result.errors[:5]))
