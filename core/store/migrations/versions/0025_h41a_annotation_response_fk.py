"""annotation.response_id: a label on a response references it by a foreign key, so deleting a run can never leave a
label pointing at a response that no longer exists (the delete, or the label written after it, is refused)

Back-fill: every response label whose response exists gets its id; a label whose response is already gone keeps NULL
(it was orphaned before this revision and stays listed as such).

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-06 06:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("annotation", schema=None) as batch_op:
        batch_op.add_column(sa.Column("response_id", sa.Integer(), nullable=True))
        batch_op.create_index("ix_annotation_response_id", ["response_id"])
        batch_op.create_foreign_key("fk_annotation_response_id", "response", ["response_id"], ["id"])
    op.execute("UPDATE annotation SET response_id = target_id WHERE target_type = 'response' "
               "AND target_id IN (SELECT id FROM response)")


def downgrade() -> None:
    with op.batch_alter_table("annotation", schema=None) as batch_op:
        batch_op.drop_constraint("fk_annotation_response_id", type_="foreignkey")
        batch_op.drop_index("ix_annotation_response_id")
        batch_op.drop_column("response_id")
