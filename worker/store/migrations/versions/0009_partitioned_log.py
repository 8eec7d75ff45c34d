"""The audit log partitioned by month, event ids kept apart, and archive checkpoints.

- ``events`` becomes a table partitioned by range of ``processed_at`` and ``rating_changes``
  one partitioned by ``at``, a partition a month (``worker.store.partitions``), made for
  every month the existing rows fall in and for the months ahead. A partitioned table's
  primary key holds its partition key: ``events`` is keyed (ladder, event_id, processed_at),
  ``rating_changes`` (id, at).
- ``event_ids`` holds every stored event id of every ladder, with its digest and when it was
  processed, under the primary key (ladder, event_id): the duplicate check reads it (one
  index probe, however many months the log holds) and its key keeps an id stored once, which
  the partitions' keys no longer can across months. A statement trigger on ``events`` fills
  it from the rows each INSERT or COPY writes, in the same transaction; the ids of archived
  months stay in it, so an archived event sent again is still a duplicate.
- ``checkpoints`` and ``checkpoint_players``: each ladder's state at its archive boundary
  (``ladder archive``), from which ``verify`` replays the events left.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import sqlalchemy as sa
from alembic import op

from worker.store import partitions

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

KEEP_IDS = """
CREATE FUNCTION events_keep_ids() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO event_ids (ladder, event_id, digest, processed_at)
  SELECT ladder, event_id, digest, processed_at FROM stored;
  RETURN NULL;
END $$
"""


def upgrade() -> None:
    bind = op.get_bind()
    months = set(partitions.ahead(datetime.now(UTC)))
    for table, key in partitions.PARTITIONED.items():
        found = bind.execute(
            sa.text(f"SELECT DISTINCT date_trunc('month', {key} AT TIME ZONE 'UTC') FROM {table}")
        )
        months.update(date(m.year, m.month, 1) for (m,) in found)

    op.execute("ALTER TABLE events DROP CONSTRAINT events_pkey")
    for index in ("events_winner_window", "events_loser_window", "events_scoring_order"):
        op.execute(f"DROP INDEX {index}")
    op.execute("ALTER TABLE events RENAME TO events_unpartitioned")
    op.execute("ALTER SEQUENCE events_seq_seq OWNED BY NONE")
    op.execute(
        "CREATE TABLE events (LIKE events_unpartitioned INCLUDING DEFAULTS, "
        "PRIMARY KEY (ladder, event_id, processed_at)) PARTITION BY RANGE (processed_at)"
    )
    op.execute("ALTER SEQUENCE events_seq_seq OWNED BY events.seq")
    op.create_index("events_winner_window", "events", ["ladder", "winner_id", "ended_at"])
    op.create_index("events_loser_window", "events", ["ladder", "loser_id", "ended_at"])
    op.create_index("events_scoring_order", "events", ["ladder", "seq"])

    op.execute("ALTER TABLE rating_changes DROP CONSTRAINT rating_changes_pkey")
    op.execute("DROP INDEX rating_changes_player")
    op.execute("ALTER TABLE rating_changes RENAME TO rating_changes_unpartitioned")
    op.execute("ALTER SEQUENCE rating_changes_id_seq OWNED BY NONE")
    op.execute(
        "CREATE TABLE rating_changes (LIKE rating_changes_unpartitioned INCLUDING DEFAULTS, "
        "PRIMARY KEY (id, at)) PARTITION BY RANGE (at)"
    )
    op.execute("ALTER SEQUENCE rating_changes_id_seq OWNED BY rating_changes.id")
    op.create_index("rating_changes_player", "rating_changes", ["ladder", "player_id", "id"])

    partitions.create(bind, months)
    op.execute("INSERT INTO events SELECT * FROM events_unpartitioned")
    op.execute("INSERT INTO rating_changes SELECT * FROM rating_changes_unpartitioned")
    op.execute("DROP TABLE events_unpartitioned")
    op.execute("DROP TABLE rating_changes_unpartitioned")

    op.create_table(
        "event_ids",
        sa.Column("ladder", sa.String(64), primary_key=True),
        sa.Column("event_id", sa.String(128), primary_key=True),
        sa.Column("digest", sa.String(64), nullable=True),
        sa.Column("processed_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.execute(
        "INSERT INTO event_ids (ladder, event_id, digest, processed_at) "
        "SELECT ladder, event_id, digest, processed_at FROM events"
    )
    op.execute(KEEP_IDS)
    op.execute(
        "CREATE TRIGGER events_keep_ids AFTER INSERT ON events REFERENCING NEW TABLE AS stored "
        "FOR EACH STATEMENT EXECUTE FUNCTION events_keep_ids()"
    )

    op.create_table(
        "checkpoints",
        sa.Column("ladder", sa.String(64), primary_key=True),
        sa.Column("before", sa.DateTime(timezone=True), nullable=False),
        sa.Column("after_seq", sa.BigInteger, nullable=False),
        sa.Column("events", sa.BigInteger, nullable=False),
        sa.Column("state", sa.dialects.postgresql.JSONB, nullable=False),
        sa.Column("made_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "checkpoint_players",
        sa.Column("ladder", sa.String(64), primary_key=True),
        sa.Column("player_id", sa.String(128), primary_key=True),
        sa.Column("rating", sa.Float(53), nullable=False),
        sa.Column("rated_games", sa.Integer, nullable=False),
        sa.Column("experience", sa.Integer, nullable=False),
        sa.Column("listed", sa.Boolean, nullable=False),
        sa.Column("boosted_points", sa.BigInteger, nullable=False),
        sa.Column("email_verified", sa.Boolean, nullable=False),
        sa.Column("display_name_chosen", sa.Boolean, nullable=False),
        sa.Column("linked_to", sa.String(128), nullable=True),
        sa.Column("version", sa.BigInteger, nullable=False),
        sa.Column("last_game_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("banned", sa.Boolean, nullable=False),
    )


def downgrade() -> None:
    raise NotImplementedError("the partitioned audit log is not turned back into one table")
