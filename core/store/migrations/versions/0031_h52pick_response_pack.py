"""response_pack: per run and judge, the per-response scores the read model's scores statement fetches (ids, costs,
summary counts, the RAG metrics' counted values and state codes), packed as float64 cells; written by the summarise
stage with the other summaries in one transaction, so a cold results page reads one row per run instead of joining
five response_metric rows onto every response (core.analysis.readmodel.responses.response_scores).

No back-fill: a run summarised before has no pack and is read inline as before (the same numbers); its next
summarise writes one.

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-07 11:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("response_pack",
                    sa.Column("run_id", sa.Integer(), nullable=False),
                    sa.Column("judge", sa.String(), nullable=False),
                    sa.Column("protocols", sa.String(), nullable=False),
                    sa.Column("names", sa.String(), nullable=False),
                    sa.Column("rows", sa.Integer(), nullable=False),
                    sa.Column("cells", sa.LargeBinary(), nullable=False),
                    sa.ForeignKeyConstraint(["run_id"], ["run.id"]),
                    sa.PrimaryKeyConstraint("run_id", "judge"))


def downgrade() -> None:
    op.drop_table("response_pack")
