"""Reasoning kept apart from the answer: response.reasoning / reasoning_state / reasoning_tokens and
llm_call.reasoning / reasoning_tokens / finish_reason.

Back-fill: none needed for the answer's reading (the scorer splits any reasoning block still inside a stored text,
core.generation.reasoning), so stored texts are left as they were written.

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
    with op.batch_alter_table("response") as batch:
        batch.add_column(sa.Column("reasoning", sa.Text(), nullable=True))
        batch.add_column(sa.Column("reasoning_state", sa.String(), nullable=False, server_default="none"))
        batch.add_column(sa.Column("reasoning_tokens", sa.Integer(), nullable=False, server_default="0"))
    with op.batch_alter_table("llmcall") as batch:
        batch.add_column(sa.Column("reasoning", sa.Text(), nullable=True))
        batch.add_column(sa.Column("reasoning_tokens", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("finish_reason", sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("llmcall") as batch:
        batch.drop_column("finish_reason")
        batch.drop_column("reasoning_tokens")
        batch.drop_column("reasoning")
    with op.batch_alter_table("response") as batch:
        batch.drop_column("reasoning_tokens")
        batch.drop_column("reasoning_state")
        batch.drop_column("reasoning")
