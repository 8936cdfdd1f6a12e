"""failure_mode_count: failure_count summed over the domains, per run, judge, model, mode, category and sub-dimension;
written by the summarise stage from the failure_count rows it has just written, in the same transaction, so the
Constraint errors page's Figure 4 over every domain (its opening view) sums a sixth of the rows (663 instead of 3,978
at paper scale: 0.5 ms instead of 2.2 ms on SQLite). A domain choice still reads failure_count.

Back-fill: every failure_count row, summed over its domains (the same sums, current or stale as the rows they come
from: the read model asks response_score_state for both tables alike).

Revision ID: 0032
Revises: 0031
Create Date: 2026-12-07 15:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None

COUNTS = ("verdicts", "decided", "failed", "not_applicable", "unparseable", "judge_errors", "skipped", "unjudged")
KEYS = ("run_id", "judge", "model_id", "mode", "category", "sub_dimension")


def upgrade() -> None:
    op.create_table("failure_mode_count",
                    sa.Column("id", sa.Integer(), nullable=False),
                    sa.Column("run_id", sa.Integer(), nullable=False),
                    sa.Column("judge", sa.String(), nullable=False),
                    sa.Column("model_id", sa.Integer(), nullable=False),
                    sa.Column("mode", sa.String(), nullable=False),
                    sa.Column("category", sa.String(), nullable=False),
                    sa.Column("sub_dimension", sa.String(), nullable=False),
                    *(sa.Column(column, sa.Integer(), nullable=False) for column in COUNTS),
                    sa.ForeignKeyConstraint(["model_id"], ["model.id"]),
                    sa.ForeignKeyConstraint(["run_id"], ["run.id"]),
                    sa.PrimaryKeyConstraint("id"))
    op.create_index("ix_failure_mode_count_run_judge", "failure_mode_count",
                    ["run_id", "judge", "model_id", "mode", "category"], unique=False)
    keys, sums = ", ".join(KEYS), ", ".join(f"SUM({column})" for column in COUNTS)
    op.execute(f"INSERT INTO failure_mode_count ({keys}, {', '.join(COUNTS)}) SELECT {keys}, {sums} FROM failure_count "
               f"GROUP BY {keys}")


def downgrade() -> None:
    op.drop_index("ix_failure_mode_count_run_judge", table_name="failure_mode_count")
    op.drop_table("failure_mode_count")
