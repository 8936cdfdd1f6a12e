"""metric_aggregate: response-level metric rows summed per run, judge, model, protocol, condition, domain, language,
metric and state (responses, counted values, sum, sum of squares), written by the summarise stage with response_metric;
and the index ix_verdict_run_judge (a run's judges by index seeks).

Back-fill: every run's summaries are marked stale (response_score_state emptied), so the read model computes the
aggregates inline from the verdicts, as it does for any run scored since its summaries were built, until the run is
summarised again (`gauntlet` scoring or core.scoring.summaries.refresh_summaries).

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
    op.execute("DELETE FROM response_score_state")  # summaries without aggregates are stale: read inline until rebuilt


def downgrade() -> None:
    op.drop_index("ix_verdict_run_judge", table_name="verdict")
    op.drop_index("ix_metric_aggregate_run_judge", table_name="metric_aggregate")
    op.drop_table("metric_aggregate")
