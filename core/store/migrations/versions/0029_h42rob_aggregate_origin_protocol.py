"""metric_aggregate.origin and metric_aggregate.has_protocol: the stored aggregates are also grouped by the instance's
origin (natural, augmented: the Data quality page) and by whether a knowledge-protocol constraint applies in its mode
(the Robustness page's protocol effect); and, from this revision on, the summarise stage also stores the IAS metrics',
amounts' and orchestration gap's sums there (core.scoring.ias_sums).

No back-fill on upgrade: the IAS sums are computed in Python from the constraint counts, which a migration cannot freeze, so every
run's stored aggregates are dropped and its summaries marked stale (its response_score_state row deleted). The read
model then aggregates those runs inline from their verdicts, the same numbers (tests/analysis/
test_robustness_aggregates.py), until the run is summarised again: by its next scoring pass, e.g. `gauntlet score RUN`
with its judge, which keeps the stored verdicts (scoring is idempotent) and then summarises.

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-06 20:50:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("metric_aggregate") as batch:
        batch.add_column(sa.Column("origin", sa.String(), nullable=False, server_default=""))
        batch.add_column(sa.Column("has_protocol", sa.Integer(), nullable=False, server_default="0"))
    op.execute("DELETE FROM metric_aggregate")
    op.execute("DELETE FROM response_score_state")


# the metrics of the IAS sums (core.scoring.ias_sums at this revision), which revision 0028 does not store
_IAS_SUMS = ("loose_ias", "strict_ias", "loose_persona", "loose_output", "loose_knowledge_protocol", "cost_per_1k",
             "latency_min_per_1k", "_gap_lo", "_gap_hi", "_gap_hidden", "_loose_strict")


def downgrade() -> None:
    # the IAS sums go; the other rows stay, split finer than 0028 groups them, which its readers sum alike
    op.execute(f"DELETE FROM metric_aggregate WHERE metric IN ({', '.join(repr(m) for m in _IAS_SUMS)})")
    with op.batch_alter_table("metric_aggregate") as batch:
        batch.drop_column("has_protocol")
        batch.drop_column("origin")
