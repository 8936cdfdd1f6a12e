"""metric_aggregate: response-level metric rows summed per run, judge, model, protocol, condition, domain, language,
metric and state (responses, counted values, sum, sum of squares), written by the summarise stage with response_metric;
and the index ix_verdict_run_judge (a run's judges by index seeks).

Back-fill: for every (run, judge) whose summaries were built (response_score_state), its response_metric rows are
summed as the summarise stage sums them (core.scoring.summaries.aggregate_select_sql, frozen here), so the stored
summaries stay current; runs summarised later get theirs from the summarise stage.

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-06 10:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


_GROUPS = "r.model_id, i.protocol, COALESCE(i.mode, 'none'), i.domain_id, COALESCE(i.language, '')"
_NAMED = ("b.judge, r.model_id, i.protocol, COALESCE(i.mode, 'none') AS mode, i.domain_id, "
          "COALESCE(i.language, '') AS language")
_BACKFILL_SQL = f"""
INSERT INTO metric_aggregate (run_id, judge, model_id, protocol, mode, domain_id, language, metric, state, responses,
                              n_values, total, total_sq)
SELECT s.run_id, {_NAMED}, s.metric, s.state, COUNT(*), COUNT(s.value), COALESCE(SUM(s.value), 0.0),
       COALESCE(SUM(s.value * s.value), 0.0)
FROM response_score_state b JOIN response_metric s ON s.run_id = b.run_id AND s.judge = b.judge
JOIN response r ON r.id = s.response_id JOIN instance i ON i.id = r.instance_id
WHERE r.status = 'done'
GROUP BY s.run_id, b.judge, {_GROUPS}, s.metric, s.state
UNION ALL
SELECT r.run_id, {_NAMED}, '', '', COUNT(*), 0, 0.0, 0.0
FROM response_score_state b JOIN response r ON r.run_id = b.run_id JOIN instance i ON i.id = r.instance_id
WHERE r.status = 'done'
GROUP BY r.run_id, b.judge, {_GROUPS}
"""


def upgrade() -> None:
    op.create_table(
        "metric_aggregate",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("judge", sa.String(), nullable=False),
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("protocol", sa.String(), nullable=False),
        sa.Column("mode", sa.String(), nullable=False),
        sa.Column("domain_id", sa.Integer(), nullable=False),
        sa.Column("language", sa.String(), nullable=False),
        sa.Column("metric", sa.String(), nullable=False),
        sa.Column("state", sa.String(), nullable=False),
        sa.Column("responses", sa.Integer(), nullable=False),
        sa.Column("n_values", sa.Integer(), nullable=False),
        sa.Column("total", sa.Float(), nullable=False),
        sa.Column("total_sq", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["domain_id"], ["domain.id"]),
        sa.ForeignKeyConstraint(["model_id"], ["model.id"]),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_metric_aggregate_run_judge", "metric_aggregate", ["run_id", "judge"], unique=False)
    # the judges of a run by index seeks (readmodel.run_judges: every results page asks on every render)
    op.create_index("ix_verdict_run_judge", "verdict", ["run_id", "judge"], unique=False)
    op.execute(_BACKFILL_SQL)


def downgrade() -> None:
    op.drop_index("ix_verdict_run_judge", table_name="verdict")
    op.drop_index("ix_metric_aggregate_run_judge", table_name="metric_aggregate")
    op.drop_table("metric_aggregate")
