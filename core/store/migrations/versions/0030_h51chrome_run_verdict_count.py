"""run_verdict_count: per run, its verdicts and a change counter (every verdict inserted, deleted or moved between runs
adds one; it never goes down), kept by triggers on verdict in the statement that writes them; and
response_score_state.verdict_changes, the counter a run's summaries were built at. stale_summary_runs compares the two,
one row per run, where it counted each run's verdicts on every cold render (3.7 ms at paper scale on SQLite); and a
re-score is seen even when SQLite hands a replaced verdict's freed max id to its successor (the count and max id of
the verdicts, the old fingerprint, were then unchanged).

Triggers, not the writers, keep it: every path that writes verdicts (the scorer, importers, run deletion, a restore,
raw SQL) is covered. SQLite: row triggers (AFTER INSERT / DELETE / UPDATE OF id, run_id). PostgreSQL: statement
triggers over the transition tables (one upsert per statement and run, not one per verdict).

Back-fill: every run's verdict count (counter 0, before the triggers exist); the build states whose count and max id
still equal their run's verdicts are at counter 0, the others are stale (-1).

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-07 07:50:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None

# one verdict in: count it (the run's row is made on its first verdict)
_SQLITE_ADD = """INSERT INTO run_verdict_count (run_id, verdicts, changes) VALUES (NEW.run_id, 1, 1)
  ON CONFLICT (run_id) DO UPDATE SET verdicts = verdicts + 1, changes = changes + 1;"""
_SQLITE_REMOVE = "UPDATE run_verdict_count SET verdicts = verdicts - 1, changes = changes + 1 WHERE run_id = OLD.run_id;"
SQLITE_TRIGGERS = {
    "verdict_counted_insert": f"AFTER INSERT ON verdict BEGIN {_SQLITE_ADD} END",
    "verdict_counted_delete": f"AFTER DELETE ON verdict BEGIN {_SQLITE_REMOVE} END",
    "verdict_counted_update": f"AFTER UPDATE OF id, run_id ON verdict BEGIN {_SQLITE_REMOVE} {_SQLITE_ADD} END",
}

# PostgreSQL: one function for the three statement triggers over their transition tables old_rows / new_rows; an
# UPDATE moves only the rows whose id or run_id changed (the statement trigger cannot be limited to those columns)
_PG_UNCOUNT = """UPDATE run_verdict_count c SET verdicts = c.verdicts - d.n, changes = c.changes + d.n
    FROM (SELECT o.run_id, COUNT(*) AS n FROM old_rows o {moved} GROUP BY o.run_id) d WHERE c.run_id = d.run_id;"""
_PG_COUNT = """INSERT INTO run_verdict_count (run_id, verdicts, changes)
    SELECT w.run_id, COUNT(*), COUNT(*) FROM new_rows w {moved} GROUP BY w.run_id
    ON CONFLICT (run_id) DO UPDATE SET verdicts = run_verdict_count.verdicts + excluded.verdicts,
      changes = run_verdict_count.changes + excluded.changes;"""
_PG_LEFT = "WHERE NOT EXISTS (SELECT 1 FROM new_rows w WHERE w.id = o.id AND w.run_id = o.run_id)"
_PG_JOINED = "WHERE NOT EXISTS (SELECT 1 FROM old_rows o WHERE o.id = w.id AND o.run_id = w.run_id)"
_PG_FUNCTION = f"""
CREATE FUNCTION verdict_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    {_PG_COUNT.replace("{moved}", "")}
  ELSIF TG_OP = 'DELETE' THEN
    {_PG_UNCOUNT.replace("{moved}", "")}
  ELSE
    {_PG_UNCOUNT.replace("{moved}", _PG_LEFT)}
    {_PG_COUNT.replace("{moved}", _PG_JOINED)}
  END IF;
  RETURN NULL;
END $$"""
PG_TRIGGERS = {
    "verdict_counted_insert": "AFTER INSERT ON verdict REFERENCING NEW TABLE AS new_rows",
    "verdict_counted_delete": "AFTER DELETE ON verdict REFERENCING OLD TABLE AS old_rows",
    "verdict_counted_update": "AFTER UPDATE ON verdict REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows",
}
BACKFILL_COUNTS = ("INSERT INTO run_verdict_count (run_id, verdicts, changes) "
                   "SELECT run_id, COUNT(*), 0 FROM verdict GROUP BY run_id")
# a build state is current when its count and max id are still its run's (the fingerprint before this revision)
BACKFILL_STATES = """
UPDATE response_score_state SET verdict_changes = 0
WHERE verdicts = (SELECT COUNT(*) FROM verdict v WHERE v.run_id = response_score_state.run_id)
  AND max_verdict_id = (SELECT COALESCE(MAX(v.id), 0) FROM verdict v WHERE v.run_id = response_score_state.run_id)
"""


def upgrade() -> None:
    op.create_table("run_verdict_count",
                    sa.Column("run_id", sa.Integer(), nullable=False),
                    sa.Column("verdicts", sa.Integer(), nullable=False),
                    sa.Column("changes", sa.Integer(), nullable=False),
                    sa.PrimaryKeyConstraint("run_id"))
    with op.batch_alter_table("response_score_state") as batch:
        batch.add_column(sa.Column("verdict_changes", sa.Integer(), nullable=False, server_default="-1"))
    op.execute(BACKFILL_COUNTS)
    op.execute(BACKFILL_STATES)
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_PG_FUNCTION)
        for name, when in PG_TRIGGERS.items():
            op.execute(f"CREATE TRIGGER {name} {when} FOR EACH STATEMENT EXECUTE FUNCTION verdict_counted()")
        return
    for name, body in SQLITE_TRIGGERS.items():
        op.execute(f"CREATE TRIGGER {name} {body}")


def downgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for name in SQLITE_TRIGGERS:
        op.execute(f"DROP TRIGGER {name} ON verdict" if postgresql else f"DROP TRIGGER {name}")
    if postgresql:
        op.execute("DROP FUNCTION verdict_counted()")
    with op.batch_alter_table("response_score_state") as batch:
        batch.drop_column("verdict_changes")
    op.drop_table("run_verdict_count")
