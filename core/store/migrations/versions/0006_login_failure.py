"""sign-in throttling: failed sign-ins per account and per client address

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30 12:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "login_failure",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("scope", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("key", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("login_failure", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_login_failure_at"), ["at"], unique=False)
        batch_op.create_index(batch_op.f("ix_login_failure_key"), ["key"], unique=False)
        batch_op.create_index(batch_op.f("ix_login_failure_scope"), ["scope"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("login_failure", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_login_failure_scope"))
        batch_op.drop_index(batch_op.f("ix_login_failure_key"))
        batch_op.drop_index(batch_op.f("ix_login_failure_at"))
    op.drop_table("login_failure")
