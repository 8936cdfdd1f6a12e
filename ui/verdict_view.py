"""The per-aspect verdicts of a judge by the rule relative to the suite's annotators (docs/judges.md), as one table
any page showing that judge's numbers can render (judge_check.verdict_rows)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.analysis.judge_check import verdict_rows
from core.scoring.judges.names import judge_label
from ui.session import engine


def _k(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def verdict_table(rows: list[dict]) -> pd.DataFrame:
    """One line per suite and aspect: the verdict, the judge's κ, the annotators' κ (or why it is missing), the best
    baseline's κ and n."""
    return pd.DataFrame([{"Suite": r["suite"], "Aspect": r["aspect"], "Verdict": r["verdict"],
                          "Judge κ": _k(r["judge_kappa"]),
                          "Annotators κ": r["note"] or f"{_k(r['pair_kappa'])} ({r['pair_row']})",
                          "Best baseline κ": f"{_k(r['best_baseline_kappa'])} ({r['best_baseline']})",
                          "n items": r["n_items"], "Checked": f"{r['checked']:%Y-%m-%d}"} for r in rows])


def verdicts(judge: str) -> None:
    """The judge's per-aspect verdicts, or the command that measures them when it was never checked."""
    rows = verdict_rows(engine(), judge)
    with st.expander(f"Per-aspect verdicts of {judge_label(judge)} (judge check)", expanded=False):
        if not rows:
            st.caption(f"Never checked: `gauntlet judge check {judge} --suite hard_set` (or mtrag, ragchecker-meta).")
            return
        st.dataframe(verdict_table(rows), hide_index=True)
