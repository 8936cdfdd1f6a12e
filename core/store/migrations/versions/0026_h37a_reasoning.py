"""Reasoning kept apart from the answer: response.reasoning / reasoning_state / reasoning_tokens and
llm_call.reasoning / reasoning_tokens / finish_reason.

Back-fill: none needed for the answer's reading (the scorer splits any reasoning block still inside a stored text,
core.generation.reasoning), so stored texts are left as they were written.

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-06 06:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # plain ADD COLUMN (no table rebuild: SQLite adds a column with a constant default in place)
    op.add_column("response", sa.Column("reasoning", sa.Text(), nullable=True))
    op.add_column("response", sa.Column("reasoning_state", sa.String(), nullable=False, server_default="none"))
    op.add_column("response", sa.Column("reasoning_tokens", sa.Integer(), nullable=False, server_default="0"))
    op.add_column("llmcall", sa.Column("reasoning", sa.Text(), nullable=True))
    op.add_column("llmcall", sa.Column("reasoning_tokens", sa.Integer(), nullable=False, server_default="0"))
    op.add_column("llmcall", sa.Column("finish_reason", sa.String(), nullable=True))


def downgrade() -> None:
    # plain DROP COLUMN (SQLite >= 3.35; no table rebuild, which foreign keys to response would refuse)
    for column in ("finish_reason", "reasoning_tokens", "reasoning"):
        op.drop_column("llmcall", column)
    for column in ("reasoning_tokens", "reasoning_state", "reasoning"):
        op.drop_column("response", column)
