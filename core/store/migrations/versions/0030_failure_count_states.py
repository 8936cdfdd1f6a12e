"""failure_count splits the undetermined constraint verdicts by state (not applicable, unparseable, judge errors,
skipped) and counts the constraints of done responses with no verdict of the judge (unjudged)

Back-fill: the failure_count rows of every (run, judge) whose summaries were built (response_score_state) are
rebuilt from the verdicts with the summarise stage's own INSERT, so they stay current and no number changes.

Revision ID: 0030
Revises: 0022
Create Date: 2026-12-02 01:35:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0030"
down_revision = "0022"
branch_labels = None
depends_on = None

COLUMNS = ("not_applicable", "unparseable", "judge_errors", "skipped", "unjudged")


def upgrade() -> None:
    with op.batch_alter_table("failure_count", schema=None) as batch_op:
        for column in COLUMNS:
            batch_op.add_column(sa.Column(column, sa.Integer(), nullable=False, server_default="0"))
    from core.scoring.summaries import _FAILURE_INSERT_SQL

    conn = op.get_bind()
    for run_id, judge in conn.execute(sa.text("SELECT run_id, judge FROM response_score_state")).all():
        params = {"run": run_id, "judge": judge}
        conn.execute(sa.text("DELETE FROM failure_count WHERE run_id = :run AND judge = :judge"), params)
        conn.execute(sa.text(_FAILURE_INSERT_SQL), params)


def downgrade() -> None:
    with op.batch_alter_table("failure_count", schema=None) as batch_op:
        for column in reversed(COLUMNS):
            batch_op.drop_column(column)
