"""judge checks: a judge's figures against a human-labelled suite, and its bias probes, with the judge's version

Revision ID: 0018
Revises: 0015
Create Date: 2026-12-01 16:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0018"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "judge_check",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("judge", sa.String(), nullable=False),
        sa.Column("judge_model", sa.String(), nullable=False),
        sa.Column("prompt_hash", sa.String(), nullable=False),
        sa.Column("suite", sa.String(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("figures", sa.JSON(), nullable=False),
        sa.Column("fitness", sa.String(), nullable=False, server_default=""),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    )
    op.create_index("ix_judge_check_judge", "judge_check", ["judge", "kind"])


def downgrade() -> None:
    op.drop_index("ix_judge_check_judge", table_name="judge_check")
    op.drop_table("judge_check")
