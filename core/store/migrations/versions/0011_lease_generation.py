"""fenced run leases: a generation number on each lease, raised at every take-over (the fencing token of its writes)

Revision ID: 0011
Revises: 0009
Create Date: 2026-12-01 16:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("lease", schema=None) as batch_op:
        batch_op.add_column(sa.Column("generation", sa.Integer(), nullable=False, server_default="1"))


def downgrade() -> None:
    with op.batch_alter_table("lease", schema=None) as batch_op:
        batch_op.drop_column("generation")
