"""response_metric: one long score table (response, judge, metric -> value, state) for every protocol; the five
fixed EnterpriseRAG metric columns of response_score move into it

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-01 22:10:00

Back-fill: for every (run, judge) whose summaries were built (response_score_state), each metric verdict becomes a
row with its state, and each response with no verdict for a metric its protocol declared at 0021 gets 'skipped'
(generation not done, or an EnterpriseRAG metric outside its modes) or 'unjudged', as core.scoring.summaries writes
them. The frozen copies below are the declarations as they stood at this revision.
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

FIXED = ("faithfulness", "coverage", "rejection", "conflict_recognition", "refusal")  # response_score's at 0020
STATES = {"ok": "scored", "error": "judge_error", "not_applicable": "not_applicable", "unparseable": "unparseable"}
DECLARED = {  # protocol -> response-level metric -> ',modes,' the scorer computes it in ('' = every mode), at 0021
    "enterprise_rag": {"faithfulness": "", "coverage": "", "rejection": ",gap,", "conflict_recognition": ",conflict,",
                       "refusal": ",noisy,"},
    "production_rag": {"faithfulness": "", "coverage": ""},
    "reference_qa": dict.fromkeys(("exact_match", "strict_exact_match", "token_f1", "rouge_l", "mcq_accuracy",
                                   "all_gold_no_wrong", "correctness", "consistency", "rejection"), ""),
    "domainrag": dict.fromkeys(("exact_match", "strict_exact_match", "token_f1", "rouge_l", "consistency"), ""),
    "lit_ragbench": dict.fromkeys(("judged_accuracy", "refusal"), ""),
    "kb_corruption": {"mcq_accuracy": ""},
    "misleading_evidence": dict.fromkeys(("exact_match", "strict_exact_match", "token_f1", "mcq_accuracy",
                                          "wrong_answer"), ""),
}

_STATE = "CASE v.status " + " ".join(f"WHEN '{k}' THEN '{v}'" for k, v in STATES.items()) + " END"
_EXPECTED = " UNION ALL ".join(f"SELECT '{p}' AS protocol, '{m}' AS metric, '{modes}' AS modes"
                               for p, metrics in DECLARED.items() for m, modes in metrics.items())
_BACKFILL = f"""
INSERT INTO response_metric (response_id, judge, run_id, metric, value, state)
SELECT v.response_id, v.judge, v.run_id, v.metric, v.value, {_STATE}
FROM verdict v JOIN response_score_state s ON s.run_id = v.run_id AND s.judge = v.judge
WHERE v.constraint_id IS NULL AND v.metric != 'constraint'
  AND NOT EXISTS (SELECT 1 FROM verdict w WHERE w.response_id = v.response_id AND w.metric = v.metric
                  AND w.judge = v.judge AND w.constraint_id IS NULL AND w.id > v.id)
UNION ALL
SELECT r.id, s.judge, r.run_id, e.metric, CAST(NULL AS FLOAT),
       CASE WHEN r.status != 'done' OR (e.modes != '' AND e.modes NOT LIKE '%,' || COALESCE(i.mode, '') || ',%')
            THEN 'skipped' ELSE 'unjudged' END
FROM response r JOIN response_score_state s ON s.run_id = r.run_id JOIN instance i ON i.id = r.instance_id
JOIN ({_EXPECTED}) e ON e.protocol = i.protocol
WHERE NOT EXISTS (SELECT 1 FROM verdict v WHERE v.response_id = r.id AND v.metric = e.metric AND v.judge = s.judge
                  AND v.constraint_id IS NULL)
"""


def upgrade() -> None:
    op.create_table(
        "response_metric",
        sa.Column("response_id", sa.Integer(), nullable=False),
        sa.Column("judge", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("metric", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("state", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.ForeignKeyConstraint(["response_id"], ["response.id"]),
        sa.ForeignKeyConstraint(["run_id"], ["run.id"]),
        sa.PrimaryKeyConstraint("response_id", "judge", "metric"),
    )
    with op.batch_alter_table("response_metric", schema=None) as batch_op:
        batch_op.create_index("ix_response_metric_run_judge", ["run_id", "judge"], unique=False)
    op.execute(sa.text(_BACKFILL))
    with op.batch_alter_table("response_score", schema=None) as batch_op:
        for metric in FIXED:
            batch_op.drop_column(f"{metric}_status")
            batch_op.drop_column(metric)


def downgrade() -> None:
    with op.batch_alter_table("response_score", schema=None) as batch_op:
        for metric in FIXED:
            batch_op.add_column(sa.Column(metric, sa.Float(), nullable=True))
            batch_op.add_column(sa.Column(f"{metric}_status", sqlmodel.sql.sqltypes.AutoString(), nullable=True))
    status = "CASE m.state " + " ".join(f"WHEN '{v}' THEN '{k}'" for k, v in STATES.items()) + " END"
    for metric in FIXED:
        row = ("FROM response_metric m WHERE m.response_id = response_score.response_id "
               f"AND m.judge = response_score.judge AND m.metric = '{metric}'")
        op.execute(sa.text(f"UPDATE response_score SET {metric} = (SELECT m.value {row} AND m.state = 'scored'), "
                           f"{metric}_status = (SELECT {status} {row})"))
    with op.batch_alter_table("response_metric", schema=None) as batch_op:
        batch_op.drop_index("ix_response_metric_run_judge")
    op.drop_table("response_metric")
