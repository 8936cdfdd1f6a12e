"""blind labelling: a gold-label assignment hides the model until its expert saves (admins can turn it off per
sample), and each expert's queue follows a seeded shuffle across models (the seed recorded)

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-01 22:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("assignment", schema=None) as batch_op:
        batch_op.add_column(sa.Column("blind", sa.Boolean(), nullable=False, server_default=sa.true()))
        batch_op.add_column(sa.Column("queue_seed", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("queue_position", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("assignment", schema=None) as batch_op:
        batch_op.drop_column("queue_position")
        batch_op.drop_column("queue_seed")
        batch_op.drop_column("blind")
