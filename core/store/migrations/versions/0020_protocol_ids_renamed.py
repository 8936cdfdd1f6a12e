"""protocol ids renamed: ragstress -> kb_corruption, rag_stress -> misleading_evidence (data only)

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-01 19:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

RENAMED = {"ragstress": "kb_corruption", "rag_stress": "misleading_evidence"}  # frozen copy of the rename at 0020
_RENAME = sa.text("UPDATE instance SET protocol = :new WHERE protocol = :old")


def upgrade() -> None:
    for old, new in RENAMED.items():
        op.execute(_RENAME.bindparams(old=old, new=new))


def downgrade() -> None:
    for old, new in RENAMED.items():
        op.execute(_RENAME.bindparams(old=new, new=old))
