"""run ownership and spend reservations: lease table, reserved and re-bought spend on runs, reserved cost per response

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 12:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lease",
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("token", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("owner", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("host", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("acquired_at", sa.Float(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    with op.batch_alter_table("run", schema=None) as batch_op:
        batch_op.add_column(sa.Column("reserved_usd", sa.Float(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("rebought_calls", sa.Integer(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("rebought_usd", sa.Float(), nullable=False, server_default="0"))
    with op.batch_alter_table("response", schema=None) as batch_op:
        batch_op.add_column(sa.Column("reserved_usd", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("response", schema=None) as batch_op:
        batch_op.drop_column("reserved_usd")
    with op.batch_alter_table("run", schema=None) as batch_op:
        batch_op.drop_column("rebought_usd")
        batch_op.drop_column("rebought_calls")
        batch_op.drop_column("reserved_usd")
    op.drop_table("lease")
