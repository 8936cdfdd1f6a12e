"""protocols: instance reference, language and attributes; document variants; response conditions

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 11:05:00
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("instance", schema=None) as batch_op:
        batch_op.alter_column("mode", existing_type=sqlmodel.sql.sqltypes.AutoString(), nullable=True)
        batch_op.add_column(sa.Column("language", sqlmodel.sql.sqltypes.AutoString(), nullable=True))
        batch_op.add_column(sa.Column("reference", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("attributes", sa.JSON(), nullable=False, server_default="{}"))
        batch_op.create_index(batch_op.f("ix_instance_language"), ["language"], unique=False)
    with op.batch_alter_table("document", schema=None) as batch_op:
        batch_op.add_column(sa.Column("variant", sa.JSON(), nullable=False, server_default="{}"))
    with op.batch_alter_table("response", schema=None) as batch_op:
        batch_op.add_column(sa.Column("condition", sqlmodel.sql.sqltypes.AutoString(), nullable=False, server_default=""))
        batch_op.create_index(batch_op.f("ix_response_condition"), ["condition"], unique=False)
        batch_op.drop_constraint("uq_response_item", type_="unique")
        batch_op.create_unique_constraint("uq_response_item", ["run_id", "model_id", "instance_id", "condition"])


def downgrade() -> None:
    with op.batch_alter_table("response", schema=None) as batch_op:
        batch_op.drop_constraint("uq_response_item", type_="unique")
        batch_op.create_unique_constraint("uq_response_item", ["run_id", "model_id", "instance_id"])
        batch_op.drop_index(batch_op.f("ix_response_condition"))
        batch_op.drop_column("condition")
    with op.batch_alter_table("document", schema=None) as batch_op:
        batch_op.drop_column("variant")
    with op.batch_alter_table("instance", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_instance_language"))
        batch_op.drop_column("attributes")
        batch_op.drop_column("reference")
        batch_op.drop_column("language")
        batch_op.alter_column("mode", existing_type=sqlmodel.sql.sqltypes.AutoString(), nullable=False)
