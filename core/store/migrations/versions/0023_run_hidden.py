"""run.hidden_at / run.hidden_by: an admin hides (archives) a run; it leaves every list and picker and stays in the
database until an admin deletes it by name

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-02 01:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("run", schema=None) as batch_op:
        batch_op.add_column(sa.Column("hidden_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))
        batch_op.add_column(sa.Column("hidden_by", sqlmodel.sql.sqltypes.AutoString(), nullable=False,
                                      server_default=""))


def downgrade() -> None:
    # plain ALTER TABLE ... DROP COLUMN (SQLite >= 3.35): a batch copy of `run` would drop a table other rows point to
    op.drop_column("run", "hidden_by")
    op.drop_column("run", "hidden_at")
