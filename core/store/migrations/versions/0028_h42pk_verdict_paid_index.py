"""ix_verdict_paid: the paid verdicts (cost_usd != 0) by run, a partial covering index, so a run's judging spend is
summed from the few paid verdicts instead of reading every verdict row of the run; ix_response_run_status: a run's
progress (responses by status and cache hit) counted from the index alone.

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-06 17:35:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_verdict_paid", "verdict", ["run_id", "cost_usd"], sqlite_where=sa.text("cost_usd != 0"),
                    postgresql_where=sa.text("cost_usd != 0"))
    op.create_index("ix_response_run_status", "response", ["run_id", "status", "cached"])


def downgrade() -> None:
    op.drop_index("ix_response_run_status", table_name="response")
    op.drop_index("ix_verdict_paid", table_name="verdict")
