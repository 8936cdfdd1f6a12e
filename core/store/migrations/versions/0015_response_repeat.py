"""response repeats: `repeat` (0 = the first answer) joins the item's uniqueness

Revision ID: 0015
Revises: 0011
Create Date: 2026-12-01 16:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("response", schema=None) as batch_op:
        batch_op.add_column(sa.Column("repeat", sa.Integer(), nullable=False, server_default="0"))
        batch_op.drop_constraint("uq_response_item", type_="unique")
        batch_op.create_unique_constraint("uq_response_item", ["run_id", "model_id", "instance_id", "condition", "repeat"])


def downgrade() -> None:
    with op.batch_alter_table("response", schema=None) as batch_op:
        batch_op.drop_constraint("uq_response_item", type_="unique")
        batch_op.create_unique_constraint("uq_response_item", ["run_id", "model_id", "instance_id", "condition"])
        batch_op.drop_column("repeat")
