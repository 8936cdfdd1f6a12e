"""browser sessions that survive a reload, the account-change audit log, and the server's signing secret

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 12:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "session_token",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("username", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("token_hash", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("expires_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("last_seen", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("revoked_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column("revoked_reason", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("session_token", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_session_token_token_hash"), ["token_hash"], unique=True)
        batch_op.create_index(batch_op.f("ix_session_token_username"), ["username"], unique=False)
    op.create_table(
        "account_change",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("actor", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("username", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("field", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("before", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("after", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("account_change", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_account_change_actor"), ["actor"], unique=False)
        batch_op.create_index(batch_op.f("ix_account_change_at"), ["at"], unique=False)
        batch_op.create_index(batch_op.f("ix_account_change_username"), ["username"], unique=False)
    op.create_table(
        "app_secret",
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("value", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )


def downgrade() -> None:
    op.drop_table("app_secret")
    with op.batch_alter_table("account_change", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_account_change_username"))
        batch_op.drop_index(batch_op.f("ix_account_change_at"))
        batch_op.drop_index(batch_op.f("ix_account_change_actor"))
    op.drop_table("account_change")
    with op.batch_alter_table("session_token", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_session_token_username"))
        batch_op.drop_index(batch_op.f("ix_session_token_token_hash"))
    op.drop_table("session_token")
