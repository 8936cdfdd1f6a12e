"""metric_aggregate.origin and metric_aggregate.has_protocol: the stored aggregates are also grouped by the instance's
origin (natural, augmented: the Data quality page) and by whether a knowledge-protocol constraint applies in its mode
(the Robustness page's protocol effect).

Back-fill: the existing rows cannot be split by the new groups, so they are deleted and, for every (run, judge) whose
summaries were built (response_score_state), its response_metric rows are summed again as the summarise stage sums
them (core.scoring.summaries.aggregate_select_sql, frozen here), so the stored summaries stay current.

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-06 20:50:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

_PROTOCOL_JOIN = """
LEFT JOIN (SELECT DISTINCT c.instance_id FROM "constraint" c JOIN instance ci ON ci.id = c.instance_id
           WHERE c.category = 'knowledge_protocol' AND (c.precondition IS NULL OR c.precondition = ci.mode)) p
       ON p.instance_id = r.instance_id"""
_HAS_PROTOCOL = "CASE WHEN p.instance_id IS NULL THEN 0 ELSE 1 END"
_GROUPS = ("r.model_id, i.protocol, COALESCE(i.mode, 'none'), i.domain_id, COALESCE(i.language, ''), "
           f"COALESCE(i.origin, ''), {_HAS_PROTOCOL}")
_NAMED = ("b.judge, r.model_id, i.protocol, COALESCE(i.mode, 'none') AS mode, i.domain_id, "
          f"COALESCE(i.language, '') AS language, COALESCE(i.origin, '') AS origin, {_HAS_PROTOCOL} AS has_protocol")
_BACKFILL_SQL = f"""
INSERT INTO metric_aggregate (run_id, judge, model_id, protocol, mode, domain_id, language, origin, has_protocol,
                              metric, state, responses, n_values, total, total_sq)
SELECT s.run_id, {_NAMED}, s.metric, s.state, COUNT(*), COUNT(s.value), COALESCE(SUM(s.value), 0.0),
       COALESCE(SUM(s.value * s.value), 0.0)
FROM response_score_state b JOIN response_metric s ON s.run_id = b.run_id AND s.judge = b.judge
JOIN response r ON r.id = s.response_id JOIN instance i ON i.id = r.instance_id {_PROTOCOL_JOIN}
WHERE r.status = 'done'
GROUP BY s.run_id, b.judge, {_GROUPS}, s.metric, s.state
UNION ALL
SELECT r.run_id, {_NAMED}, '', '', COUNT(*), 0, 0.0, 0.0
FROM response_score_state b JOIN response r ON r.run_id = b.run_id JOIN instance i ON i.id = r.instance_id {_PROTOCOL_JOIN}
WHERE r.status = 'done'
GROUP BY r.run_id, b.judge, {_GROUPS}
"""


def upgrade() -> None:
    with op.batch_alter_table("metric_aggregate") as batch:
        batch.add_column(sa.Column("origin", sa.String(), nullable=False, server_default=""))
        batch.add_column(sa.Column("has_protocol", sa.Integer(), nullable=False, server_default="0"))
    op.execute("DELETE FROM metric_aggregate")
    op.execute(_BACKFILL_SQL)


def downgrade() -> None:
    with op.batch_alter_table("metric_aggregate") as batch:
        batch.drop_column("has_protocol")
        batch.drop_column("origin")
