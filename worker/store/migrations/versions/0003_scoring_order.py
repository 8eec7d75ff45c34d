"""Scoring order and payload digests on audit rows, so a ladder can be replayed and a reused
event id told from a duplicate.

``events.seq`` numbers the audit rows in the order they were scored (existing rows by
``processed_at``, then as written); ``events.digest`` holds the SHA-256 of the normalised
payload (empty on existing rows: an equal id there is still taken as a duplicate).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("events", sa.Column("digest", sa.String(64), nullable=True))
    op.add_column("events", sa.Column("seq", sa.BigInteger, nullable=True))
    op.execute(
        "UPDATE events SET seq = o.n FROM (SELECT ladder, event_id, "
        "row_number() OVER (ORDER BY processed_at, ctid) AS n FROM events) AS o "
        "WHERE events.ladder = o.ladder AND events.event_id = o.event_id"
    )
    op.execute("CREATE SEQUENCE events_seq_seq AS bigint OWNED BY events.seq")
    op.execute("SELECT setval('events_seq_seq', coalesce(max(seq), 0) + 1, false) FROM events")
    op.execute(
        "ALTER TABLE events ALTER COLUMN seq SET DEFAULT nextval('events_seq_seq'), "
        "ALTER COLUMN seq SET NOT NULL"
    )
    op.create_index("events_scoring_order", "events", ["ladder", "seq"])


def downgrade() -> None:
    op.drop_index("events_scoring_order", table_name="events")
    op.drop_column("events", "seq")
    op.drop_column("events", "digest")
