"""How judges are named: stored ids ('heuristic', 'llm:<model>', 'llm:<model>@single') and display labels."""

from __future__ import annotations

HEURISTIC = "heuristic"
HEURISTIC_LABEL = "heuristic (lexical, offline)"
SINGLE_SUFFIX = "@single"


def judge_label(judge: str) -> str:
    """The label every table, chart, export, report and summary shows for a stored judge id."""
    if judge == HEURISTIC:
        return HEURISTIC_LABEL
    if judge.endswith(SINGLE_SUFFIX):
        return f"{judge[: -len(SINGLE_SUFFIX)]} (one call per constraint)"
    return judge
