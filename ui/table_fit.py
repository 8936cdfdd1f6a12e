"""Tables that fit a 1440 px screen: fixed column widths that add up to the main area's width (instead of a grid
that scrolls sideways and hides its last columns)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

MAIN_WIDTH = 940  # px of the main area at 1440 px with the sidebar open, less the grid's borders
KEY_WIDTH = 200
NARROW = {"Group": 150, "rank": 70, "baseline": 80, "eligible": 70}
MIN_WIDTH = 90


def fitting_columns(table: pd.DataFrame, pinned: str, config: dict[str, Any] | None = None) -> dict[str, Any]:
    """Column config (from `config`, else a text column named after the column) giving `pinned` KEY_WIDTH, the
    narrow columns their width and the rest equal shares of what is left (at least MIN_WIDTH); a column's help
    repeats its full name (a header may be cut)."""
    fixed = {c: NARROW[c] for c in table.columns if c in NARROW}
    rest = [c for c in table.columns if c != pinned and c not in fixed]
    share = max(MIN_WIDTH, (MAIN_WIDTH - KEY_WIDTH - sum(fixed.values())) // max(len(rest), 1))
    widths = {pinned: KEY_WIDTH, **fixed, **dict.fromkeys(rest, share)}
    fitted = {}
    for name, width in widths.items():
        entry = dict((config or {}).get(name) or st.column_config.TextColumn(name))
        label = entry.get("label") or name
        fitted[name] = {**entry, "width": width, "help": entry.get("help") or label,
                        **({"pinned": True} if name == pinned else {})}
    return fitted
