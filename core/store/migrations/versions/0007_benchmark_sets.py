"""benchmark sets: each import or build is a named set of instance versions

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "benchmark_set",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("description", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("origin", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("source", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("created_by", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("benchmark_set", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_benchmark_set_name"), ["name"], unique=True)
    op.create_table(
        "benchmark_set_member",
        sa.Column("set_id", sa.Integer(), nullable=False),
        sa.Column("instance_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["instance_id"], ["instance.id"]),
        sa.ForeignKeyConstraint(["set_id"], ["benchmark_set.id"]),
        sa.PrimaryKeyConstraint("set_id", "instance_id"),
    )
    with op.batch_alter_table("benchmark_set_member", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_benchmark_set_member_instance_id"), ["instance_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("benchmark_set_member", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_benchmark_set_member_instance_id"))
    op.drop_table("benchmark_set_member")
    with op.batch_alter_table("benchmark_set", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_benchmark_set_name"))
    op.drop_table("benchmark_set")
