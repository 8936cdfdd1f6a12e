"""account versions (no lost updates), sign-in throttle counters reserved atomically, handoffs bound to a browser

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-01 16:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("user", schema=None) as batch_op:
        batch_op.add_column(sa.Column("version", sa.Integer(), nullable=False, server_default="1"))
        batch_op.add_column(sa.Column("changed_by", sqlmodel.sql.sqltypes.AutoString(), nullable=False,
                                      server_default=""))
        batch_op.add_column(sa.Column("changed_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))
    op.execute("DELETE FROM login_failure")  # one row per failure before, one counter per account/address now
    with op.batch_alter_table("login_failure", schema=None) as batch_op:
        batch_op.add_column(sa.Column("failures", sa.Integer(), nullable=False, server_default="0"))
        batch_op.create_unique_constraint("uq_login_failure_scope_key", ["scope", "key"])
    with op.batch_alter_table("session_token", schema=None) as batch_op:
        batch_op.add_column(sa.Column("bound_to", sqlmodel.sql.sqltypes.AutoString(), nullable=False,
                                      server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("session_token", schema=None) as batch_op:
        batch_op.drop_column("bound_to")
    with op.batch_alter_table("login_failure", schema=None) as batch_op:
        batch_op.drop_constraint("uq_login_failure_scope_key", type_="unique")
        batch_op.drop_column("failures")
    with op.batch_alter_table("user", schema=None) as batch_op:
        batch_op.drop_column("changed_at")
        batch_op.drop_column("changed_by")
        batch_op.drop_column("version")
