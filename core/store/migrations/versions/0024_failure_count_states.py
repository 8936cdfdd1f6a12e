"""failure_count splits the undetermined constraint verdicts by state (not applicable, unparseable, judge errors,
skipped) and counts the constraints of done responses with no verdict of the judge (unjudged)

Back-fill: the failure_count rows of every (run, judge) whose summaries were built (response_score_state) are
rebuilt from the verdicts with the summarise stage's INSERT as of this revision (core.scoring.summaries, copied here:
a migration is frozen and the store imports nothing above it), so they stay current and no number changes.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-02 01:35:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from core.store.schema import NO_MODE

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

COLUMNS = ("not_applicable", "unparseable", "judge_errors", "skipped", "unjudged")
JUDGE = "(v.judge = :judge OR (v.judge = 'rule' AND c.judge_method = 'rule'))"
DECIDED = "v.status = 'ok' AND v.passed IS NOT NULL"
MODE = f"COALESCE(i.mode, '{NO_MODE}')"
INSERT = f"""
INSERT INTO failure_count (run_id, judge, model_id, domain_id, mode, category, sub_dimension, verdicts, decided, failed,
                           not_applicable, unparseable, judge_errors, skipped, unjudged)
SELECT x.run_id, CAST(:judge AS VARCHAR), x.model_id, x.domain_id, x.mode, x.category, x.sub_dimension,
       SUM(x.verdict), SUM(x.decided), SUM(x.failed), SUM(x.not_applicable), SUM(x.unparseable), SUM(x.judge_errors),
       SUM(x.skipped), SUM(1 - x.verdict)
FROM (
SELECT v.run_id, r.model_id, i.domain_id, {MODE} AS mode, c.category, c.sub_dimension, 1 AS verdict,
       CASE WHEN {DECIDED} THEN 1 ELSE 0 END AS decided, CASE WHEN {DECIDED} AND NOT v.passed THEN 1 ELSE 0 END AS failed,
       CASE WHEN v.status = 'not_applicable' THEN 1 ELSE 0 END AS not_applicable,
       CASE WHEN v.status = 'unparseable' THEN 1 ELSE 0 END AS unparseable,
       CASE WHEN v.status = 'error' THEN 1 ELSE 0 END AS judge_errors,
       CASE WHEN v.status = 'skipped' THEN 1 ELSE 0 END AS skipped
FROM verdict v JOIN "constraint" c ON c.id = v.constraint_id JOIN response r ON r.id = v.response_id
JOIN instance i ON i.id = r.instance_id
WHERE v.metric = 'constraint' AND v.run_id = :run AND {JUDGE}
UNION ALL
SELECT r.run_id, r.model_id, i.domain_id, {MODE}, c.category, c.sub_dimension, 0, 0, 0, 0, 0, 0, 0
FROM response r JOIN instance i ON i.id = r.instance_id JOIN "constraint" c ON c.instance_id = i.id
WHERE r.status = 'done' AND r.run_id = :run
  AND NOT EXISTS (SELECT 1 FROM verdict v WHERE v.response_id = r.id AND v.constraint_id = c.id
                  AND v.metric = 'constraint' AND {JUDGE})
) x
GROUP BY x.run_id, x.model_id, x.domain_id, x.mode, x.category, x.sub_dimension
"""


def upgrade() -> None:
    with op.batch_alter_table("failure_count", schema=None) as batch_op:
        for column in COLUMNS:
            batch_op.add_column(sa.Column(column, sa.Integer(), nullable=False, server_default="0"))
    conn = op.get_bind()
    for run_id, judge in conn.execute(sa.text("SELECT run_id, judge FROM response_score_state")).all():
        params = {"run": run_id, "judge": judge}
        conn.execute(sa.text("DELETE FROM failure_count WHERE run_id = :run AND judge = :judge"), params)
        conn.execute(sa.text(INSERT), params)


def downgrade() -> None:
    with op.batch_alter_table("failure_count", schema=None) as batch_op:
        for column in reversed(COLUMNS):
            batch_op.drop_column(column)
