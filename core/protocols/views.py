"""What the generic Protocol views page reads: the runs holding a protocol's responses, their judges, and each
declared view built for the chosen runs and judge (core.protocols.base.View; the page only renders the results)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd
from sqlalchemy import func, select
from sqlmodel import col

from core.analysis.readmodel import RULE_JUDGE, read_sql, run_judges
from core.analysis.readmodel.responses import read_columns
from core.protocols import PROTOCOLS
from core.protocols.base import ProtocolPage, View, ViewResult
from core.store.models import Instance, Response, Run
from core.store.run_kinds import evaluation_run

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

_RUN_PROTOCOLS_SQL = """
SELECT DISTINCT i.protocol FROM response r JOIN instance i ON i.id = r.instance_id
WHERE r.run_id = :run AND r.status = 'done'
"""
LEADERBOARD = ProtocolPage("pages/leaderboard.py", "Leaderboard", ":material/leaderboard:")
PROTOCOL_VIEWS = ProtocolPage("pages/protocol_views.py", "Protocol views", ":material/view_list:")


def protocol_runs(engine: Engine, protocol: str) -> pd.DataFrame:
    """Evaluation runs not hidden holding done responses of `protocol`, newest first: run_id, name, status,
    responses."""
    query = (select(col(Response.run_id), col(Run.name), col(Run.status), func.count().label("responses"))
             .join(Instance, col(Instance.id) == col(Response.instance_id)).join(Run, col(Run.id) == col(Response.run_id))
             .where(col(Instance.protocol) == protocol, col(Response.status) == "done", evaluation_run())
             .group_by(col(Response.run_id), col(Run.name), col(Run.status)).order_by(col(Response.run_id).desc()))
    with engine.connect() as conn:
        rows = conn.execute(query).all()
    return pd.DataFrame.from_records(rows, columns=["run_id", "name", "status", "responses"])


def newest_run_holding(engine: Engine, protocol: str, run_ids: Sequence[int]) -> int | None:
    """The newest of `run_ids` that holds done responses of `protocol`; None when none of them does."""
    return next((int(r) for r in sorted(run_ids, reverse=True) if holds_protocol(engine, protocol, [r])), None)


_HOLDS_SQL = """
SELECT 1 FROM instance i WHERE i.protocol = :protocol AND EXISTS (
  SELECT 1 FROM response r JOIN run ON run.id = r.run_id WHERE r.instance_id = i.id AND r.run_id IN ({runs})
  AND r.status = 'done' AND run.hidden_at IS NULL) LIMIT 1
"""


def holds_protocol(engine: Engine, protocol: str, run_ids: Sequence[int]) -> bool:
    """Whether any of `run_ids` holds done responses of `protocol` (newest_run_holding is not None), by one EXISTS
    probe from the protocol's instances (not a count of every run's responses)."""
    runs = ", ".join(str(int(r)) for r in run_ids)
    if not runs:
        return False
    return bool(read_columns(engine, _HOLDS_SQL.replace("{runs}", runs), {"protocol": protocol}))  # no frame


def scoring_judges(engine: Engine, run_ids: Sequence[int]) -> list[str]:
    """The judges that scored response metrics in these runs (the rule checker left out)."""
    return [j for j in run_judges(engine, list(run_ids)) if j != RULE_JUDGE]


def with_views() -> list[str]:
    """Names of the registered protocols that declare page views or paper tables."""
    return [name for name, protocol in PROTOCOLS.items() if protocol.page_views or protocol.paper_tables]


def build_views(engine: Engine, protocol: str, run_ids: Sequence[int], judge: str) -> list[tuple[View, ViewResult]]:
    """Each view `protocol` declares, built for these runs and this judge."""
    return [(view, view.builder()(engine, list(run_ids), judge)) for view in PROTOCOLS.get(protocol).page_views]


def view_responses(engine: Engine, protocol: str, run_ids: Sequence[int], judge: str) -> pd.DataFrame:
    """The responses behind a protocol's views: one row per done response with its ids, model, instance, domain,
    condition (also as `mode`, the drill-down's column) and each declared metric, plus instruction adherence (Loose /
    Strict IAS, instruction score) where its instance carries instructions."""
    from core.analysis.readmodel import INSTRUCTION_METRICS, instruction_scores, reference_scores

    scores = reference_scores(engine, run_ids, judge, protocol=protocol)
    adherence = instruction_scores(engine, run_ids, judge, protocol=protocol)
    kept = ["response_id", *(m for m in INSTRUCTION_METRICS if m in adherence.columns)]
    scores = scores.merge(adherence[kept], on="response_id", how="left") if len(kept) > 1 else scores
    return scores.assign(mode=scores["condition"])


def drill_metrics(table: pd.DataFrame, responses: pd.DataFrame) -> list[str]:
    """The per-response metrics behind a view's table, for its drill-down: those the table shows per model, named as
    declared or by their short name ('toy_echo.echo_match' as 'echo_match'); empty for a table of other rows."""
    if "model" not in table.columns or responses.empty:
        return []
    ids = {"run_id", "response_id", "judge", "model", "instance_uid", "domain", "language", "condition", "mode"}
    shown = set(table.columns)
    return [c for c in responses.columns if c not in ids and not c.endswith(("_status", "_state"))
            and pd.api.types.is_numeric_dtype(responses[c]) and (c in shown or c.rsplit(".", 1)[-1] in shown)]


def results_pages(engine: Engine, run_id: int) -> list[ProtocolPage]:
    """Where a run's results show: each protocol of its done responses on its own page, on Protocol views when it
    declares views only, else on the Leaderboard (EnterpriseRAG and the instruction sets); each page once."""
    protocols = sorted(read_sql(engine, _RUN_PROTOCOLS_SQL, {"run": int(run_id)})["protocol"].dropna())
    pages = [_page_of(p) for p in protocols]
    return list({page.path: page for page in sorted(pages, key=lambda p: p != LEADERBOARD)}.values())


def _page_of(protocol: str) -> ProtocolPage:
    declared = PROTOCOLS.get(protocol) if protocol in PROTOCOLS else None
    if declared is not None and declared.page is not None:
        return declared.page
    return PROTOCOL_VIEWS if declared is not None and declared.page_views else LEADERBOARD
